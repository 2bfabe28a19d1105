"""The Scenario: one frozen point of the matrix, validated on construction, with a stable readable id.

Semantics (the fp32 reference in `solbench.supervisor.reference` is their executable definition):
- Sequence b has q_lens[b] queries and kv_lens[b] keys. Query i of sequence b sits on the
  bottom-right aligned diagonal position d = i + kv_lens[b] - q_lens[b].
- causal: key j is visible only if j <= d. window_left >= 0: only if j >= d - window_left.
  window_right >= 0: only if j <= d + window_right (-1 means unbounded on that side).
- Query head h reads KV head h // (heads_q // heads_kv).
- softcap > 0: s = softcap * tanh(s / softcap), applied to the scaled score, before masking.
- sinks: one logit per query head joins the softmax denominator only; LSE excludes it.
- mask: a bitmask over (query head, query token, key) ANDed with the above; bit set = attend.
- A row with nothing visible outputs 0 and LSE -inf.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, fields

from solbench.core.errors import ScenarioError

DTYPES = ("bf16", "fp16", "fp8_e4m3")
DESCALES = ("none", "per_tensor", "per_head")
KV_LAYOUTS = ("contiguous", "paged")
REGIMES = ("prefill", "chunked_prefill", "decode", "split_kv_decode", "mixed")
MASK_PATTERNS = ("iid", "iid_empty_rows")
INPUT_PROFILES = ("default", "plain", "large_logits", "sinks_negative", "sinks_positive", "high_logits", "peaked",
                  "sinks_lse")


@dataclass(frozen=True)
class MaskSpec:
    """A custom bitmask drawn by a generator, so a scenario stays a small value."""

    density: float
    """Probability that a (head, query, key) bit is set, in (0, 1]."""
    pattern: str = "iid"
    """'iid': independent bits; 'iid_empty_rows': iid, plus every 7th query row fully masked."""
    seed: int = 0
    """Seed of the bit generator (independent of the input seed)."""

    def __post_init__(self):
        if not 0.0 < self.density <= 1.0:
            raise ScenarioError(f"mask.density must be in (0, 1], got {self.density}")
        if self.pattern not in MASK_PATTERNS:
            raise ScenarioError(f"mask.pattern must be one of {MASK_PATTERNS}, got {self.pattern!r}")

    def id_part(self) -> str:
        return f"mask{round(self.density * 100)}-{self.pattern.replace('_', '')}-s{self.seed}"


@dataclass(frozen=True)
class Scenario:
    """One attention-forward call: shapes, layout, dtype and mask. Frozen; `id` is stable."""

    q_lens: tuple[int, ...]
    """Query tokens per sequence (0 allowed: an empty sequence inside a ragged batch)."""
    kv_lens: tuple[int, ...]
    """Key/value tokens per sequence, including the new queries' own keys (chunked prefill)."""
    heads_q: int
    """Query heads."""
    heads_kv: int
    """Key/value heads; must divide heads_q (MHA: equal, MQA: 1)."""
    head_dim_qk: int = 128
    """Head dimension of Q and K."""
    head_dim_v: int = 128
    """Head dimension of V and O."""
    dtype: str = "bf16"
    """Q/K/V element type: bf16, fp16 or fp8_e4m3 (fp8 outputs bf16)."""
    descale: str = "none"
    """fp8 only: 'per_tensor' (one factor each for Q, K, V) or 'per_head' (one per KV head)."""
    kv_layout: str = "contiguous"
    """'contiguous' (packed by cumulative offsets) or 'paged' (a pool of pages and a page table)."""
    page_size: int = 0
    """Tokens per page when paged, else 0."""
    regime: str = "prefill"
    """What serving step this models: prefill, chunked_prefill, decode, split_kv_decode, mixed."""
    causal: bool = True
    """Bottom-right aligned causal mask."""
    window_left: int = -1
    """Keys visible to the left of the aligned diagonal; -1 = unbounded."""
    window_right: int = -1
    """Keys visible to the right of the aligned diagonal; -1 = unbounded (0 when causal)."""
    softcap: float = 0.0
    """Logit soft cap; 0 = off."""
    sinks: bool = False
    """One learned sink logit per query head."""
    mask: MaskSpec | None = None
    """Custom bitmask, or None."""
    softmax_scale: float | None = None
    """Multiplier of q.k; None means 1 / sqrt(head_dim_qk)."""
    input_profile: str = "default"
    """How inputs are drawn (solbench.supervisor.inputs.PROFILES): default (none chosen: scores of std 2, and
    for each feature turned on, inputs where ignoring it fails: inputs.drawn_profile), plain (scores of std 2
    whatever the features), large_logits, sinks_negative, sinks_positive, high_logits (scores offset by up to
    40 a row), peaked (outlier keys and row-peaked attention), sinks_lse (peaked, with sinks on the rows' LSE
    scale)."""
    tag: str = ""
    """Optional suffix that tells apart scenarios a suite wants twice (letters, digits, '_')."""

    def __post_init__(self):
        object.__setattr__(self, "q_lens", tuple(int(x) for x in self.q_lens))
        object.__setattr__(self, "kv_lens", tuple(int(x) for x in self.kv_lens))
        if isinstance(self.mask, dict):
            object.__setattr__(self, "mask", MaskSpec(**self.mask))
        self._validate()

    def _validate(self):
        def bad(field_name, why):
            raise ScenarioError(f"{field_name}: {why}")

        if not self.q_lens:
            bad("q_lens", "needs at least one sequence")
        if len(self.q_lens) != len(self.kv_lens):
            bad("kv_lens", f"has {len(self.kv_lens)} entries but q_lens has {len(self.q_lens)}")
        if min(self.q_lens) < 0 or min(self.kv_lens) < 0:
            bad("q_lens/kv_lens", "lengths must be >= 0")
        if sum(self.q_lens) == 0:
            bad("q_lens", "all sequences are empty")
        for name in ("heads_q", "heads_kv", "head_dim_qk", "head_dim_v"):
            if getattr(self, name) <= 0:
                bad(name, f"must be positive, got {getattr(self, name)}")
        if self.heads_q % self.heads_kv:
            bad("heads_kv", f"{self.heads_kv} does not divide heads_q={self.heads_q}")
        if self.head_dim_qk % 8 or self.head_dim_v % 8 or max(self.head_dim_qk, self.head_dim_v) > 512:
            bad("head_dim_qk/head_dim_v", "must be multiples of 8 and at most 512")
        if self.dtype not in DTYPES:
            bad("dtype", f"must be one of {DTYPES}, got {self.dtype!r}")
        if self.descale not in DESCALES:
            bad("descale", f"must be one of {DESCALES}, got {self.descale!r}")
        if (self.dtype == "fp8_e4m3") != (self.descale != "none"):
            bad("descale", "fp8_e4m3 needs per_tensor or per_head descales; other dtypes need 'none'")
        if self.kv_layout not in KV_LAYOUTS:
            bad("kv_layout", f"must be one of {KV_LAYOUTS}, got {self.kv_layout!r}")
        if (self.kv_layout == "paged") != (self.page_size > 0):
            bad("page_size", "must be > 0 exactly when kv_layout is 'paged'")
        if self.regime not in REGIMES:
            bad("regime", f"must be one of {REGIMES}, got {self.regime!r}")
        if self.regime in ("decode", "split_kv_decode") and max(self.q_lens) > 1:
            bad("q_lens", f"regime {self.regime} has one query per sequence, got up to {max(self.q_lens)}")
        if self.regime == "chunked_prefill" and any(q > kv for q, kv in zip(self.q_lens, self.kv_lens)):
            bad("kv_lens", "chunked_prefill appends each query chunk to its context: kv_len >= q_len")
        if self.window_left < -1 or self.window_right < -1:
            bad("window_left/window_right", "must be -1 (unbounded) or >= 0")
        if self.causal and self.window_right not in (-1, 0):
            bad("window_right", "a causal scenario sees nothing right of the diagonal; leave it -1")
        if self.softcap < 0 or not math.isfinite(self.softcap):
            bad("softcap", f"must be 0 (off) or a positive number, got {self.softcap}")
        if self.softmax_scale is not None and not (self.softmax_scale > 0 and math.isfinite(self.softmax_scale)):
            bad("softmax_scale", f"must be positive, got {self.softmax_scale}")
        if self.input_profile not in INPUT_PROFILES:
            bad("input_profile", f"must be one of {INPUT_PROFILES}, got {self.input_profile!r}")
        if self.input_profile.startswith("sinks_") and not self.sinks:
            bad("input_profile", f"{self.input_profile} needs sinks = true")
        if self.tag and not self.tag.replace("_", "").isalnum():
            bad("tag", f"letters, digits and '_' only, got {self.tag!r}")

    # --- derived values -------------------------------------------------------------------------

    @property
    def batch(self) -> int:
        return len(self.q_lens)

    @property
    def total_q(self) -> int:
        return sum(self.q_lens)

    @property
    def total_kv(self) -> int:
        return sum(self.kv_lens)

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.heads_q // self.heads_kv

    @property
    def scale(self) -> float:
        return self.softmax_scale if self.softmax_scale is not None else 1.0 / math.sqrt(self.head_dim_qk)

    @property
    def out_dtype(self) -> str:
        return "bf16" if self.dtype == "fp8_e4m3" else self.dtype

    @property
    def is_uniform(self) -> bool:
        return len(set(self.q_lens)) == 1 and len(set(self.kv_lens)) == 1

    def pages_per_seq(self) -> tuple[int, ...]:
        """Pages each sequence's keys occupy (0 when contiguous)."""
        if self.kv_layout != "paged":
            return tuple(0 for _ in self.kv_lens)
        return tuple(-(-kv // self.page_size) for kv in self.kv_lens)

    # --- identity -------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """Stable readable id, e.g. 'prefill-b2-sq4096-skv4096-hq32-hkv8-d128-bf16-causal'.

        Pinned by a snapshot test: changing it re-keys every stored result and leaderboard.
        """
        parts = [self.regime.replace("_", "")]
        if self.is_uniform:
            parts += [f"b{self.batch}", f"sq{self.q_lens[0]}", f"skv{self.kv_lens[0]}"]
        else:
            digest = hashlib.sha1(repr((self.q_lens, self.kv_lens)).encode()).hexdigest()[:6]
            parts += [f"n{self.batch}", f"tq{self.total_q}", f"tkv{self.total_kv}", f"L{digest}"]
        parts += [f"hq{self.heads_q}", f"hkv{self.heads_kv}"]
        dims = f"d{self.head_dim_qk}" if self.head_dim_qk == self.head_dim_v else f"d{self.head_dim_qk}v{self.head_dim_v}"
        parts.append(dims)
        parts.append({"bf16": "bf16", "fp16": "fp16", "fp8_e4m3": "fp8"}[self.dtype])
        if self.descale != "none":
            parts.append({"per_tensor": "dspt", "per_head": "dsph"}[self.descale])
        if self.kv_layout == "paged":
            parts.append(f"page{self.page_size}")
        parts.append("causal" if self.causal else "full")
        if self.window_left >= 0:
            parts.append(f"wl{self.window_left}")
        if self.window_right >= 0 and not self.causal:
            parts.append(f"wr{self.window_right}")
        if self.softcap:
            parts.append(f"cap{self.softcap:g}")
        if self.sinks:
            parts.append("sink")
        if self.mask is not None:
            parts.append(self.mask.id_part())
        if self.softmax_scale is not None:
            parts.append(f"scale{self.softmax_scale:.6g}")
        if self.input_profile != "default":
            parts.append(self.input_profile.replace("_", ""))
        if self.tag:
            parts.append(self.tag)
        return "-".join(parts)

    # --- serialisation --------------------------------------------------------------------------

    def to_dict(self) -> dict:
        d = asdict(self)
        d["q_lens"] = list(self.q_lens)
        d["kv_lens"] = list(self.kv_lens)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Scenario":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known - {"id"})
        if unknown:
            raise ScenarioError(f"unknown scenario field(s) {unknown}; known: {sorted(known)}")
        return cls(**{k: v for k, v in d.items() if k in known})

    def summary(self) -> dict:
        """A flat row for tables: the id and the axes a reader scans for."""
        return {
            "id": self.id,
            "regime": self.regime,
            "batch": self.batch,
            "total_q": self.total_q,
            "total_kv": self.total_kv,
            "heads": f"{self.heads_q}/{self.heads_kv}",
            "head_dim": self.head_dim_qk if self.head_dim_qk == self.head_dim_v else f"{self.head_dim_qk}/{self.head_dim_v}",
            "dtype": self.dtype,
            "kv_layout": self.kv_layout if self.kv_layout == "contiguous" else f"paged/{self.page_size}",
            "mask": self.mask_label(),
        }

    def mask_label(self) -> str:
        bits = ["causal" if self.causal else "full"]
        if self.window_left >= 0 or self.window_right >= 0:
            bits.append(f"window({self.window_left},{self.window_right})")
        if self.softcap:
            bits.append(f"softcap {self.softcap:g}")
        if self.sinks:
            bits.append("sinks")
        if self.mask is not None:
            bits.append(f"bitmask {self.mask.density:.0%}")
        return " + ".join(bits)


def scenario_field_names() -> list[str]:
    return [f.name for f in fields(Scenario)]

