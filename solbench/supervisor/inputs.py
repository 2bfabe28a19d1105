"""Seeded inputs for one scenario, made by the supervisor and shared with the workers (see
solbench.core.tensors for the layouts). Content is drawn from (scenario, trial, the run's secret): stable
for a given secret, unpredictable to a candidate that does not know it.

On a GPU every tensor a worker is given lives in a device allocation of its own (solbench.gpu.device_memory),
never in a segment of torch's caching allocator: a worker maps whole allocations, so it reaches that tensor
(and an output's guard bytes) and nothing else of the supervisor's. On the CPU every one is made in shared
memory no worker can shrink (`_shared`), so that sending it to a worker never moves it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, fields, replace

import numpy as np

from solbench.core import masks
from solbench.core.scenario import Scenario
from solbench.core.tensors import GUARD_BYTES, INPUT_FIELDS, Inputs, guarded_view, torch_dtype

FP8_TARGET_AMAX = 240.0  # quantise into [-240, 240] of e4m3's 448 so descales are never 1


@dataclass(frozen=True)
class Profile:
    """How a Scenario.input_profile draws Q, K and the sinks. Scores are in logits (scale * q.k), and every
    knob is set in logits, so a profile draws the same score distribution at every head dim."""

    logit_std: float = 2.0
    """Std of the scores: 2 makes a softmax neither uniform nor one-hot; 40 (large_logits) overflows an fp32
    exp without max-subtraction."""
    logit_offset_max: float = 0.0
    """> 0: each (query, head) adds its own U(0, logit_offset_max) to all of its scores (a constant channel of
    K, one of OFFSET_CHANNEL_VALUES per KV head, that q's first channel weighs): large logits (an fp16 exp
    without max-subtraction overflows from ~11) over a bulk that stays as spread as logit_std makes it, so
    hardly a key block of a long row is negligible. Scores drawn with a std of 11 instead
    (this profile's earlier draw) made long rows so sparse that dropping every block 12 below the row's max
    passed, skipping ~45 % of them."""
    capped_logit_std: float = 0.0
    """> 0: with a softcap, scores of this std instead, and no offset: rows peaked enough that their top keys
    reach the cap's curve (a cubic in place of tanh fails) while few keys carry the mass. A flat bulk offset
    near the cap failed an honest kernel whose tanh has tanh.approx's precision (2^-11, as FA3's and
    FlashInfer's softcap use) on 19 of the 44 softcap scenarios cut to CPU size."""
    peak_max: float = 0.0
    """> 0: outlier tokens and row-peaked attention. A few keys (PEAK_KEY_FRACTION of the K slots) carry a
    massive channel (the last, PEAK_CHANNEL_VALUE: their norm 2-4x the others', as real KV caches have),
    and each (query, head) aligns with it by its own strength, lifting those keys' scores by U(0, peak_max):
    rows range from flat to peaked far above the rest, which still carries a share of the mass (what
    skipping "negligible" key blocks drops), and peaks up to ~18 overflow an fp16 exp without
    max-subtraction."""
    sinks_at_lse: bool = False
    """Sinks drawn on the scale of the rows' LSE (learned sinks are: a sink far below every row's LSE is a
    no-op a kernel could ignore): U(-3, 3) around the median row's log(visible keys) + logit_std^2 / 2."""
    sink_offset: float = 0.0
    """Added to N(0, 1) sinks (when not sinks_at_lse): -60 never matters, +20 takes almost all the mass."""


PROFILES = {
    "default": Profile(),
    "plain": Profile(),
    "large_logits": Profile(logit_std=40.0),
    "sinks_negative": Profile(sink_offset=-60.0),
    "sinks_positive": Profile(sink_offset=20.0),
    "high_logits": Profile(logit_std=4.0, logit_offset_max=40.0, capped_logit_std=11.0),
    "peaked": Profile(peak_max=16.0),
    "sinks_lse": Profile(peak_max=16.0, sinks_at_lse=True),
}
"""Every name of solbench.core.scenario.INPUT_PROFILES (tests/test_inputs.py keeps the two in step). `default`
is what a scenario that names no profile gets, but draws through drawn_profile: a feature it turns on gets inputs
where ignoring that feature fails. `plain` is the same scores whatever the features, for a suite that means it."""
PEAK_KEY_FRACTION = 1 / 4096
PEAK_CHANNEL_VALUE = 32.0  # the outlier keys' massive channel; bulk K elements are N(0, 1)
OFFSET_CHANNEL_VALUES = (6.0, 7.0, 8.0, 9.0, 10.0)  # high_logits' constant K channel (exact in bf16, fp16, e4m3)


def drawn_profile(sc: Scenario) -> Profile:
    """The profile `sc`'s inputs are drawn with: the one it names, or, for `default` (a suite that chose none),
    one under which each feature it turns on bites (a user suite with sinks and no
    profile drew sinks ~N(0, 1), far below long rows' LSE, and a kernel that ignored them passed 2 of 3):
    - fp16 or a softcap: high_logits. Rows offset by up to 40 logits make fp16 accumulation of Q K^T show at
      any row length (a score's partial sums round at ~2^-11 of the offset), and with a softcap the scores'
      std of 11 reaches the cap's curve (ignoring it, or a cubic for its tanh, fails for caps up to ~60);
    - sinks: sinks on the rows' LSE scale (what the profile's scores give them; _typical_lse).
    Each is what the hopper and blackwell grids draw those features with, where honest libraries pass."""
    if sc.input_profile != "default":
        return PROFILES[sc.input_profile]
    profile = PROFILES["high_logits"] if sc.dtype == "fp16" or sc.softcap else PROFILES["default"]
    return replace(profile, sinks_at_lse=True) if sc.sinks else profile


def input_fingerprint(inputs: Inputs, key: int) -> dict[str, int]:
    """Per input tensor, a keyed, position-dependent hash of its 32-bit words (computed where the tensors
    live): sum_i w_i * mix(i ^ key) mod 2^64, i counting words over all inputs. Unlike a plain sum, it
    changes when words are permuted, and without the key (the supervisor's) no rewrite can keep it."""
    import torch

    from solbench.supervisor.fingerprint import word_sum

    names, sums, offset = [], [], 0
    for name in INPUT_FIELDS:
        t = getattr(inputs, name)
        if t is None:
            continue
        flat = t.contiguous().view(-1).view(torch.uint8)
        whole = flat.numel() // 4 * 4
        words = flat[:whole].view(torch.int32)
        if whole < flat.numel():  # the last bytes, zero-padded to one more word (a copy of 1-3 bytes)
            words = torch.cat([words, torch.cat([flat[whole:], flat.new_zeros(4 - flat.numel() + whole)]).view(torch.int32)])
        total = word_sum(words, offset, key)
        names.append(name)
        sums.append(total)
        offset += words.numel()
    totals = torch.stack(sums).tolist()  # one device->host copy for all tensors
    return {name: value % 2**64 for name, value in zip(names, totals)}


def input_seed(sc: Scenario, trial: int, secret: bytes = b"") -> int:
    """Seed for (scenario, trial, secret): stable across machines for one secret, different per trial.
    A run draws its secret at random (never written down), so a candidate cannot precompute its inputs;
    tests and benchmarks use the empty secret for reproducible content."""
    digest = hashlib.sha256(secret + f"{sc.id}/{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**62 - 1)


def _generator(sc: Scenario, trial: int, device: str, secret: bytes):
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(input_seed(sc, trial, secret))
    return gen


def _kv_shape(sc: Scenario) -> tuple[int, ...]:
    """[pages, page_size, heads_kv] (paged: a few spare pages, so the table is not a permutation of
    everything) or [total_kv, heads_kv]; the head dim follows."""
    if sc.kv_layout == "paged":
        pages = sum(sc.pages_per_seq())
        return (pages + 3 + pages // 8, sc.page_size, sc.heads_kv)
    return (sc.total_kv, sc.heads_kv)


def draw_values(sc: Scenario, trial: int = 0, device: str = "cpu", secret: bytes = b"") -> dict:
    """The tensors of VALUE_FIELDS for one trial (None where the scenario has none): what changes
    between rounds, while offsets, page table and mask stay."""
    import torch

    gen = _generator(sc, trial, device, secret)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    profile = drawn_profile(sc)
    capped = bool(sc.softcap and profile.capped_logit_std)
    std = profile.capped_logit_std if capped else profile.logit_std
    q_std = std / (sc.scale * sc.head_dim_qk ** 0.5)  # q.k * scale has std ~ logit_std
    q = randn(sc.total_q, sc.heads_q, sc.head_dim_qk) * q_std
    kv_shape = _kv_shape(sc)
    # bf16/fp16 K and V are cast as soon as drawn (same values: the peaks' channel value is exact in both):
    # a long MHA decode's K and V in fp32 at once were 25 GB of the supervisor's peak, and ran the H200 out
    # of memory beside the workers. fp8 quantises from fp32 (its descale is the fp32 amax).
    low = None if sc.dtype == "fp8_e4m3" else torch_dtype(sc.dtype)
    k = randn(*kv_shape, sc.head_dim_qk)
    k = k.to(low) if low else k
    v = randn(*kv_shape, sc.head_dim_v)
    v = v.to(low) if low else v
    if profile.peak_max:
        _plant_peaks(sc, q, k, profile.peak_max, gen)
    if profile.logit_offset_max and not capped:
        _offset_rows(sc, q, k, profile.logit_offset_max, gen)
    q_descale = k_descale = v_descale = None
    if low is None:
        q, q_descale = _quantize_fp8(q.view(sc.total_q, sc.heads_kv, sc.group_size, -1), sc.descale, kv_head_axis=1)
        q = q.view(sc.total_q, sc.heads_q, sc.head_dim_qk)
        k, k_descale = _quantize_fp8(k, sc.descale, kv_head_axis=k.dim() - 2)
        v, v_descale = _quantize_fp8(v, sc.descale, kv_head_axis=v.dim() - 2)
    else:
        q = q.to(low)
    sinks = None
    if sc.sinks:  # bf16-representable fp32, as learned sinks are stored (GPT-OSS): a kernel that takes its
        # sinks in bf16 (vLLM's FA3 s_aux) reads the exact value every other kernel reads
        if profile.sinks_at_lse:
            typical = _typical_lse(sc, profile, capped)
            sinks = (torch.rand(sc.heads_q, generator=gen, device=device) * 6.0 - 3.0) + typical
        else:
            sinks = randn(sc.heads_q) + profile.sink_offset
        sinks = sinks.to(torch.bfloat16).float()
    return dict(q=q, k=k, v=v, sinks=sinks, q_descale=q_descale, k_descale=k_descale, v_descale=v_descale)


def _plant_peaks(sc: Scenario, q, k, peak_max: float, gen) -> None:
    """Profile.peak_max, in place: the last channel of K is 0 but on the outlier keys (PEAK_CHANNEL_VALUE),
    and q's last channel sets each (query, head)'s lift of those keys, so lift = scale * q[-1] * value."""
    import torch

    hot = torch.rand(k.shape[:-1], generator=gen, device=k.device) < PEAK_KEY_FRACTION
    k[..., -1] = hot.float() * PEAK_CHANNEL_VALUE
    lift = torch.rand(q.shape[:-1], generator=gen, device=q.device) * peak_max
    q[..., -1] = lift / (sc.scale * PEAK_CHANNEL_VALUE)


def _offset_rows(sc: Scenario, q, k, offset_max: float, gen) -> None:
    """Profile.logit_offset_max, in place: K's first channel is constant on every key of a KV head (one of
    OFFSET_CHANNEL_VALUES per head, so fp8's K descales still differ by head), and q's first channel sets each
    (query, head)'s offset, so offset = scale * q[0] * value (peaks use the last channel)."""
    import torch

    pick = torch.randint(len(OFFSET_CHANNEL_VALUES), (sc.heads_kv,), generator=gen, device=k.device)
    values = torch.tensor(OFFSET_CHANNEL_VALUES, device=k.device)[pick]  # [heads_kv]
    k[..., 0] = values.to(k.dtype)
    offset = torch.rand(q.shape[:-1], generator=gen, device=q.device) * offset_max
    q[..., 0] = offset / (sc.scale * values.repeat_interleave(sc.group_size))


@functools.lru_cache(maxsize=64)  # drawn again for every round's refill; a pure function of its arguments
def _typical_lse(sc: Scenario, profile: Profile, capped: bool = False) -> float:
    """The median row's LSE under this profile's bulk scores: log(visible keys) + std^2 / 2 (the log of n draws
    of e^s, s ~ N(0, std)), plus the median row offset where rows are offset. Capped scores (std
    capped_logit_std, through cap * tanh) are far from that law's regime: their LSE is taken over n evenly
    spaced quantiles of the capped law instead (what n draws give, the top of the row included)."""
    widths = np.concatenate([np.subtract(*masks.row_intervals(sc, b)[::-1]) for b in range(sc.batch)])
    n = max(int(np.median(np.maximum(widths, 1))), 1)
    if capped:
        from scipy.special import logsumexp, ndtri

        z = ndtri((np.arange(n) + 0.5) / n) * profile.capped_logit_std
        return float(logsumexp(sc.softcap * np.tanh(z / sc.softcap)))
    typical = float(np.median(np.log(np.maximum(widths, 1)))) + profile.logit_std ** 2 / 2
    return typical + profile.logit_offset_max / 2


def make_inputs(sc: Scenario, trial: int = 0, device: str = "cpu", secret: bytes = b"") -> Inputs:
    """Fresh inputs for one trial: deterministic per (scenario, trial, device type, secret)."""
    import torch

    values = draw_values(sc, trial, device, secret)
    page_table = None
    if sc.kv_layout == "paged":
        gen = _generator(sc, trial, device, secret + b"/pages")
        pages = sc.pages_per_seq()
        perm = torch.randperm(_kv_shape(sc)[0], generator=gen, device=device).to(torch.int32)
        page_table = torch.zeros(sc.batch, max(1, max(pages)), dtype=torch.int32, device=device)
        offset = 0
        for b, n in enumerate(pages):
            page_table[b, :n] = perm[offset:offset + n]
            offset += n

    mask_bits = None
    bits = masks.mask_bits(sc)
    if bits is not None:
        mask_bits = torch.from_numpy(bits.view(np.int32)).to(device)

    def offsets(lengths):
        return torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), dtype=torch.int32, device=device)

    out = guarded_empty((sc.total_q, sc.heads_q, sc.head_dim_v), torch_dtype(sc.out_dtype), device)
    lse = guarded_empty((sc.total_q, sc.heads_q), torch.float32, device)
    made = dict(values, cu_seqlens_q=offsets(sc.q_lens), cu_seqlens_kv=offsets(sc.kv_lens),
                kv_lens=torch.tensor(sc.kv_lens, dtype=torch.int32, device=device), page_table=page_table,
                mask_bits=mask_bits)
    inputs = Inputs(scenario=sc, **{name: _own(t) for name, t in made.items()}, out=out, lse=lse)
    inputs.poison()
    return inputs


def _on_gpu(device) -> bool:
    return str(device).startswith("cuda")


def _shared(t):
    """A copy of t in shared memory a worker cannot shrink (solbench.gpu.ipc.sealed_cpu), made now, while no
    other thread reads it: a send never moves a tensor (torch's sharing moved one that was not shared and freed
    its old buffer while the supervisor computed the reference from it: an honest kernel rejected in CI)."""
    from solbench.gpu.ipc import sealed_cpu

    return sealed_cpu(t)


def _own(t):
    """A copy of t: on a GPU in an allocation of its own (t was made by torch's allocator), on the CPU in shared
    memory."""
    if t is None:
        return t
    if not _on_gpu(t.device):
        return _shared(t)
    from solbench.gpu import device_memory

    return device_memory.copy_of(t)


def guarded_empty(shape, dtype, device):
    """An uninitialised tensor inside a buffer with GUARD_BYTES of CANARY before and after it (see
    solbench.core.tensors.guarded_view); on a GPU the buffer is an allocation of its own."""
    import math

    nbytes = 2 * GUARD_BYTES + math.prod(shape) * dtype.itemsize
    if _on_gpu(device):
        from solbench.gpu import device_memory

        buf = device_memory.empty_bytes(nbytes, device)
    else:
        import torch

        buf = _shared(torch.empty(nbytes, dtype=torch.uint8, device=device))
    return guarded_view(buf, shape, dtype)


def guarded_like(t):
    """A guarded copy of t's shape and dtype (contents: t's)."""
    fresh = guarded_empty(tuple(t.shape), t.dtype, t.device)
    fresh.copy_(t)
    return fresh


def footprint_bytes(inputs: Inputs) -> int:
    """Device bytes one copy of these inputs takes: Inputs.nbytes, but on a GPU each tensor's allocation as
    the driver made it (rounded up to solbench.gpu.device_memory.granule, guards included)."""
    if not _on_gpu(inputs.device):
        return inputs.nbytes
    from solbench.gpu import device_memory

    total = 0
    for f in fields(inputs):
        if hasattr(t := getattr(inputs, f.name), "nbytes"):
            allocation = device_memory.allocation_of(t)
            total += allocation.size if allocation is not None else t.nbytes
    return total


def _quantize_fp8(x, mode: str, kv_head_axis: int):
    """e4m3 values and their fp32 descale: [1] per tensor, or [heads_kv] per KV head."""
    import torch

    if mode == "per_tensor":
        amax = x.abs().amax().reshape(1)
        descale = amax / FP8_TARGET_AMAX
        scaled = x / descale
    else:
        dims = [d for d in range(x.dim()) if d != kv_head_axis]
        amax = x.abs().amax(dim=dims)
        descale = amax / FP8_TARGET_AMAX
        shape = [1] * x.dim()
        shape[kv_head_axis] = -1
        scaled = x / descale.view(shape)
    return scaled.to(torch.float8_e4m3fn), descale.to(torch.float32).contiguous()


VALUE_FIELDS = ("q", "k", "v", "sinks", "q_descale", "k_descale", "v_descale")
"""The tensors whose values change between rounds; the structure (offsets, page table, mask) stays."""


STRUCTURE_FIELDS = tuple(name for name in INPUT_FIELDS if name not in VALUE_FIELDS)
"""The input tensors that stay the same between rounds: offsets, page table, mask."""


def private_structure(inp: Inputs) -> dict:
    """Clones of the copy's structure tensors in the supervisor's own memory (shared with no worker)."""
    return {name: t.clone() for name in STRUCTURE_FIELDS if (t := getattr(inp, name)) is not None}


def restore_structure(inp: Inputs, structure: dict) -> list[str]:
    """Write the structure back from its private clones; the names of the tensors that had changed."""
    import torch

    changed = [name for name, kept in structure.items() if not torch.equal(getattr(inp, name), kept)]
    for name in changed:
        getattr(inp, name).copy_(structure[name])
    return changed


def refill(target: Inputs, values: dict) -> None:
    """Copy `values` (draw_values) into `target`'s tensors, keeping every pointer and the structure:
    libraries plan around the page table and offsets in bind."""
    for name in VALUE_FIELDS:
        dst = getattr(target, name)
        if dst is not None:
            dst.copy_(values[name])


def clone_inputs(inputs: Inputs) -> Inputs:
    """A deep copy (every tensor cloned), poisoned outputs included: one implementation's own copy."""

    copy = replace(inputs, **{f.name: (guarded_like(t) if f.name in ("out", "lse") else _own(t))
                              for f in fields(inputs) if hasattr(t := getattr(inputs, f.name), "clone")})
    copy.poison()
    return copy


def with_outputs(inputs: Inputs) -> Inputs:
    """The same inputs with fresh, poisoned, guarded output buffers (one set per implementation)."""
    fresh = replace(inputs, out=guarded_like(inputs.out), lse=guarded_like(inputs.lse))
    fresh.poison()
    return fresh
