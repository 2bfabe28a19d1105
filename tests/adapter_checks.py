"""Shared by the baseline contract tests: run an adapter once on fresh CPU inputs and judge it."""

from solbench.supervisor.inputs import make_inputs
from solbench.supervisor.reference import reference
from solbench.supervisor.verdict import judge


def run_and_judge(adapter, sc):
    """The verdict for one bind + call of `adapter` on scenario `sc`, as the runner would give it."""
    inputs = make_inputs(sc, device="cpu")
    call = adapter.bind(inputs)
    inputs.poison()
    call()
    ref_out, ref_lse = reference(inputs)
    return judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)
