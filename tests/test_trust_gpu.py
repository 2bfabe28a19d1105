"""The trust boundary on the GPU: each CUDA cheat of reference_kernels/adversarial that names an
`expect:` status gets exactly that status on every smoke scenario, decided in the supervisor."""

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from solbench.core.policy import QUICK  # noqa: E402
from solbench.supervisor.runner import RunConfig, run  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
CORPUS = Path(__file__).resolve().parents[1] / "reference_kernels" / "adversarial"
EXPECTED = {p.name: set(m.group(1).split(" or ")) for p in sorted(CORPUS.glob("*.cu"))
            if (m := re.search(r"^// expect: (\w+(?: or \w+)*)$", p.read_text(), re.M))}


KNOWN_ESCAPES = {
    "hides_under_cover.cu": "work on a private stream synchronised on the host inside the call ran, on the H200, "
                            "between the cover's end and the start event (the start event completed ~1.2 ms after "
                            "the cover began); the window opens at the cover's end, so it is not seen (issue 18)",
}
"""Cheats that still get past the checks, each with what was seen: the test fails once one is caught, so
the entry is removed then."""


def test_the_cuda_corpus_names_its_expected_statuses():
    assert set(EXPECTED) >= {"replays_by_pointer.cu", "zeros_when_timed.cu", "permutes_inputs.cu", "side_stream.cu",
                             "launches_after_return.cu", "dlopens_cublas.cu", "writes_past_end.cu"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_ESCAPES[n], strict=True))
                                  if n in KNOWN_ESCAPES else n for n in sorted(EXPECTED)])
def test_each_cuda_cheat_gets_its_status(name, tmp_path):
    result = run(RunConfig(candidate=str(CORPUS / name), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, seed=None))
    wrong = [(o.scenario_id, o.status.value, o.reason[:160]) for o in result.outcomes
             if o.status.value not in EXPECTED[name]]
    assert not wrong, wrong
