"""One of the candidate's scored calls per scenario, kept so that `--sanitize` can make the sanitized call on
the very same inputs and hold it to the same outputs (solbench.supervisor.sanitize).

`Witnessed` wraps the candidate's worker (same start / request / stop / pid / running interface; every other
attribute is the worker's) for the scenarios `--sanitize` will check. Of the calls whose outputs the supervisor
judges (the checked calls and every timed call of every round) it keeps one drawn uniformly at random, a
reservoir of one with this process's own randomness: the candidate cannot know which call is kept, so every
call of the scored run may be the one the sanitizer's call must equal. What is kept (the call's inputs and its
outputs, on the CPU) is written, tensors only (safetensors-like: torch.save read back with weights_only), to
`<run folder>/sanitize/<scenario id>/witness.pt` by the supervisor, in a folder no confined candidate can write.
"""

from __future__ import annotations

import random
from dataclasses import fields
from pathlib import Path

from solbench.core.tensors import Inputs

FILE = "witness.pt"


def path_for(folder: Path, scenario_id: str) -> Path:
    return Path(folder) / "sanitize" / scenario_id / FILE


class Witnessed:
    """The candidate's worker, keeping one random scored call of each scenario in `scenario_ids`."""

    def __init__(self, worker, folder: Path, scenario_ids):
        self.__dict__.update(_worker=worker, _folder=Path(folder), _ids=frozenset(scenario_ids), _copies=[],
                             _calls=0, _draw=random.SystemRandom())

    def __getattr__(self, name):  # only what this object lacks: the worker's attributes
        if name.startswith("__") or "_worker" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._worker, name)

    def __setattr__(self, name, value):  # evaluate sets writes_lse on the worker itself
        setattr(self._worker, name, value)

    def request(self, cmd: str, payload=None, timeout_s: float = 120.0):
        reply = self._worker.request(cmd, payload, timeout_s)
        if cmd == "prepare":
            copies = [payload["check"], *payload["rotation"]]
            self.__dict__.update(_copies=copies if copies[0].scenario.id in self._ids else [], _calls=0)
        elif cmd == "release":
            self.__dict__["_copies"] = []
        elif cmd == "check" and self._copies and reply is None:
            self._called(self._copies[0])
        elif cmd == "round" and self._copies:
            for i in payload["order"]:
                self._called(self._copies[1 + i])
        return reply

    def _called(self, inputs: Inputs) -> None:
        self.__dict__["_calls"] += 1
        if self._draw.random() * self._calls < 1.0:  # the n-th call replaces the kept one with probability 1/n
            keep(inputs, path_for(self._folder, inputs.scenario.id))


def keep(inputs: Inputs, path: Path) -> None:
    """Write a call's inputs and outputs (every tensor, on the CPU) to `path`."""
    import torch

    tensors = {f.name: t.detach().cpu().clone() for f in fields(inputs)
               if (t := getattr(inputs, f.name)) is not None and hasattr(t, "detach")}
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    torch.save(tensors, part)
    part.replace(path)


def load(folder: Path, sc) -> Inputs | None:
    """The kept call of scenario `sc` (its outputs in .out and .lse), or None when none was kept."""
    import torch

    path = path_for(folder, sc.id)
    if not path.is_file():
        return None
    tensors = torch.load(path, weights_only=True)
    names = [f.name for f in fields(Inputs) if f.name != "scenario"]
    return Inputs(scenario=sc, **{name: tensors.get(name) for name in names})


def differs(kept: Inputs, handed_back: bytes, deterministic: bool) -> str:
    """Why the outputs a call handed back (out's bytes, then lse's) are not those of the kept call on the same
    inputs; '' when they are: the same bits for a deterministic candidate (as its two checked calls must be),
    for one declared non-deterministic outputs that pass the verdict against the reference on their own."""
    import torch

    out_bytes, lse_bytes = (t.numel() * t.element_size() for t in (kept.out, kept.lse))
    if len(handed_back) != out_bytes + lse_bytes:
        return f"it handed back {len(handed_back)} bytes of outputs, not the {out_bytes + lse_bytes} of out and lse"
    raw = torch.frombuffer(bytearray(handed_back), dtype=torch.uint8)
    out = raw[:out_bytes].view(kept.out.dtype).view(kept.out.shape)
    lse = raw[out_bytes:].view(kept.lse.dtype).view(kept.lse.shape)
    if not deterministic:
        from solbench.supervisor.reference import reference
        from solbench.supervisor.verdict import judge

        verdict = judge(out, lse, *reference(kept), kept.scenario.dtype)
        return f"they fail the verdict: {verdict.reason}" if verdict.status.is_failure else ""
    count = _bits_differ(out, kept.out) + _bits_differ(lse, kept.lse)
    return f"{count} of {kept.out.numel() + kept.lse.numel()} output elements differ in their bits" if count else ""


def _bits_differ(a, b) -> int:
    import torch

    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[a.element_size()]
    return int((a.contiguous().view(as_int) != b.contiguous().view(as_int)).sum())
