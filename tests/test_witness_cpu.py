"""solbench.supervisor.witness on a CPU: which of the candidate's scored calls is kept for `--sanitize` (one,
uniformly at random over its checked and timed calls), what is kept, and how a sanitized call's outputs are held
to it (issue 39, class 6; the whole loop against a fake sanitizer: tests/test_sanitize_cpu.py)."""

import collections

import pytest

torch = pytest.importorskip("torch")

from solbench.core.policy import TimingPolicy  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor import witness  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.supervisor.reference import reference  # noqa: E402

SC = load_suite("smoke").scenarios[0]
COPIES = [make_inputs(SC, t, "cpu", b"k") for t in range(3)]


class Numbering:
    """A worker whose every call writes its own number into the outputs of the copy it was given."""

    def __init__(self):
        self.copies, self.calls, self.writes_lse, self.spec = [], 0, True, "the worker's"

    def request(self, cmd, payload=None, timeout_s=0.0):
        if cmd == "prepare":
            self.copies = [payload["check"], *payload["rotation"]]
        called = {"check": [0], "round": [1 + i for i in (payload or {}).get("order", [])]}.get(cmd, [])
        for i in called:
            self.calls += 1
            self.copies[i].out.fill_(self.calls)
        return {"device_ms": [1.0] * len(called)} if cmd == "round" else None


def _scored_run(folder, ids=(SC.id,)):
    """prepare, two checks, a round of two calls and one of one (five judged calls); the kept call's number."""
    worker = witness.Witnessed(Numbering(), folder, ids)
    worker.request("prepare", {"check": COPIES[0], "rotation": COPIES[1:]})
    worker.request("check", {"keep": True})
    worker.request("check", {"keep": False})
    worker.request("warm_up")
    worker.request("round", {"order": [0, 1]})
    worker.request("round", {"order": [1]})
    kept = witness.load(folder, SC)
    return worker, None if kept is None else int(kept.out.flatten()[0])


def test_one_judged_call_is_kept_uniformly_at_random(tmp_path):
    counts = collections.Counter(_scored_run(tmp_path / str(i))[1] for i in range(300))
    assert set(counts) == {1, 2, 3, 4, 5}, counts  # the checks and every timed call, never warm-up
    assert all(30 <= n <= 95 for n in counts.values()), counts  # 60 each (sd 7): over 4 sd outside


def test_the_kept_call_holds_its_inputs_and_outputs(tmp_path):
    inputs = make_inputs(SC, 7, "cpu", b"k")
    inputs.out.copy_(reference(inputs)[0])
    inputs.lse.zero_()
    witness.keep(inputs, witness.path_for(tmp_path, SC.id))
    back = witness.load(tmp_path, SC)
    for name in ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens"):
        a, b = getattr(inputs, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), name
    assert back.page_table is None and back.sinks is None and back.scenario == SC
    assert witness.load(tmp_path, load_suite("smoke").scenarios[1]) is None


def test_other_scenarios_are_not_kept_and_the_worker_is_the_same_worker(tmp_path):
    worker, kept = _scored_run(tmp_path, ids=("another-scenario",))
    assert kept is None and not (tmp_path / "sanitize").exists()
    worker.writes_lse = False  # evaluate sets it on the worker it was given
    assert worker._worker.writes_lse is False and worker.spec == "the worker's" and worker.calls == 5


def _handed_back(inputs, flip=False, scale=1.0):
    out = (inputs.out.float() * scale).to(inputs.out.dtype)
    raw = bytearray(b"".join(t.contiguous().view(torch.uint8).numpy().tobytes() for t in (out, inputs.lse)))
    if flip:
        raw[0] ^= 1
    return bytes(raw)


def test_outputs_are_held_to_the_kept_call_bit_for_bit_or_by_the_verdict_when_declared_nondeterministic():
    inputs = make_inputs(SC, 1, "cpu", b"k")
    out, lse = reference(inputs)
    inputs.out.copy_(out)
    inputs.lse.copy_(lse)
    assert witness.differs(inputs, _handed_back(inputs), deterministic=True) == ""
    assert witness.differs(inputs, _handed_back(inputs, flip=True), deterministic=True).startswith("1 of ")
    assert "handed back 3 bytes" in witness.differs(inputs, b"abc", deterministic=True)
    assert witness.differs(inputs, _handed_back(inputs, flip=True), deterministic=False) == ""
    assert witness.differs(inputs, _handed_back(inputs, scale=1.5), deterministic=False).startswith("they fail")


def test_the_candidates_worker_is_wrapped_only_for_a_sanitized_run(tmp_path):
    from solbench.executor.units import UnitContext, make_workers
    from solbench.sandbox.impls import ImplSpec

    specs = {"candidate": ImplSpec("candidate", "python", "k.py", "k.py"),
             "seed": ImplSpec("seed", "python", "s.py", "s.py")}
    ctx = UnitContext(specs, "cpu", TimingPolicy(), 5.0, "cpu", "r", str(tmp_path))
    assert not isinstance(make_workers(ctx)["candidate"], witness.Witnessed)
    from dataclasses import replace

    workers = make_workers(replace(ctx, witnessed=(SC.id,)))
    assert isinstance(workers["candidate"], witness.Witnessed)
    assert not isinstance(workers["seed"], witness.Witnessed) and workers["candidate"].spec is specs["candidate"]
