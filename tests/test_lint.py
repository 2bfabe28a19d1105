"""solbench lint: the shipped grids lint clean (every flag excused in the suite file, with its reason), and each
check flags what it is for: a feature that does not bite, near-constant outputs, a small working set or roofline
time."""

import json

import jsonschema
import pytest

torch = pytest.importorskip("torch")

from solbench import schemas  # noqa: E402
from solbench.core.roofline import load_arch  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402
from solbench.front import cli  # noqa: E402
from solbench.supervisor import lint  # noqa: E402


def _lint_json(capsys, *argv):
    code = cli.main(["lint", *argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, schemas.load("lint" if doc["ok"] else "error"))
    return code, doc


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hopper", "blackwell"])
def test_the_grids_lint_clean(name, capsys):
    code, doc = _lint_json(capsys, "--suite", name)
    assert code == 0 and doc["clean"] and doc["scenarios"] == 182
    assert doc["arch"] == {"hopper": "h200", "blackwell": "b200"}[name]
    # what is excused is what the suite says: sliding-window decode, for its size alone, and variant 17's softcap
    # (peaked scores far below its cap, where a cubic passes; variants 16 and 21 test the cap's curve)
    assert doc["flags"] and all(f["excepted"] for f in doc["flags"])
    size = [f for f in doc["flags"] if f["check"] in ("working_set", "sol_time")]
    cap = [f for f in doc["flags"] if f["check"] == "softcap"]
    assert len(size) + len(cap) == len(doc["flags"]) and size and len(cap) <= 7
    assert all("decode" in f["scenario"] and "-wl" in f["scenario"] for f in size)
    assert all(f["scenario"].endswith("-wl1023-cap50-peaked") and "cubic" in f["detail"] for f in cap)


@pytest.mark.slow
@pytest.mark.parametrize("name, arch", [("real", None), ("rtx3080-mask", None), ("edge", "h200"), ("fa3-h2h", None)])
def test_every_other_shipped_suite_lints_clean_or_says_why(name, arch, capsys):
    """Suites kept as published (real models), small by definition (short custom-mask calls) or made of traps
    (edge) carry a written reason for each flag they keep."""
    code, doc = _lint_json(capsys, "--suite", name, *(["--arch", arch] if arch else []))
    assert code == 0 and doc["clean"]
    assert all(f["excepted"] for f in doc["flags"])


def test_features_that_do_not_bite_are_flagged(tmp_path, capsys):
    """The old grid's failures: sinks ~N(0, 1) far below long rows' LSE, a 4096 window on rows of <= 4096 keys, a
    softcap far above every score, one whose scores stay where a cubic is close to tanh, fp16 rows too
    short for fp16 accumulation to show; each on a scenario of its own (drawn `plain`, as a suite that names no
    profile drew them before issue 39), beside ones where the feature bites: the same scenarios with no profile
    named, which draw inputs where each feature bites (inputs.drawn_profile)."""
    bodies = [
        'regime = "decode"\nq_lens = [1, 1]\nkv_lens = [8000, 3000]\nsinks = true\ninput_profile = "plain"\n',
        'regime = "decode"\nq_lens = [1, 1]\nkv_lens = [8000, 3000]\nsinks = true\ninput_profile = "sinks_lse"\n',
        'q_lens = [2000]\nwindow_left = 4095\n',
        'q_lens = [2000]\nwindow_left = 511\n',
        'q_lens = [500]\nsoftcap = 1000.0\ninput_profile = "plain"\n',
        'q_lens = [500]\nsoftcap = 30.0\ninput_profile = "plain"\n',
        'q_lens = [500]\nsoftcap = 30.0\ninput_profile = "high_logits"\n',
        'q_lens = [64]\nsinks = true\ninput_profile = "sinks_positive"\n',  # the sink takes all: outputs ~0
        'q_lens = [16]\ndtype = "fp16"\ninput_profile = "plain"\n',
        'regime = "decode"\nq_lens = [1, 1]\nkv_lens = [8000, 3000]\nsinks = true\n',
        'q_lens = [500]\nsoftcap = 30.0\n',
        'q_lens = [16]\ndtype = "fp16"\n',
    ]
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\narch = "h200"\n' + "".join(f"[[scenario]]\n{b}heads_q = 4\nheads_kv = 2\n" for b in bodies))
    code, doc = _lint_json(capsys, "--suite", str(suite))
    from solbench.core.suites import load_suite

    ids = [sc.id for sc in load_suite(str(suite)).scenarios]
    assert code == 1 and not doc["clean"]
    numeric = {(f["scenario"], f["check"], "cubic" in f["detail"]) for f in doc["flags"]
               if f["check"] not in ("working_set", "sol_time")}
    assert numeric == {(ids[0], "sinks", False), (ids[2], "window", False), (ids[4], "softcap", False),
                       (ids[5], "softcap", True), (ids[7], "constant", False), (ids[8], "fp16", False)}


def test_fp16_sums_round_the_running_total_every_16_terms():
    """lint.fp16_sums is torch.bmm with fp16 operands and a running total rounded to fp16 every 16 terms: exact
    where nothing rounds, and off by fp16's rounding of the partial sums (not fp32's) where they do."""
    a = torch.ones(1, 1, 64)
    b = torch.full((1, 64, 1), 0.5)
    assert lint.fp16_sums(a, b).item() == 32.0  # every partial sum exact in fp16
    a = torch.full((1, 1, 32), 1.0)
    b = torch.cat([torch.full((1, 16, 1), 2048.0), torch.full((1, 16, 1), 1 / 64)], dim=1)
    assert lint.fp16_sums(a, b).item() == 32768.0  # + 0.25 is below half an ulp of fp16 at 32768: rounded away
    assert torch.bmm(a, b).item() == 32768.25
    x, y = torch.randn(2, 3, 40), torch.randn(2, 40, 5)
    assert torch.allclose(lint.fp16_sums(x, y), torch.bmm(x.half().float(), y.half().float()), atol=0.05)


def test_size_checks_use_the_arch(capsys):
    small = Scenario(q_lens=(512,), kv_lens=(512,), heads_q=8, heads_kv=8)
    assert {c for c, _ in lint.size_flags(small, load_arch("h200"))} == {"working_set", "sol_time"}
    big = Scenario(q_lens=(4096,) * 2, kv_lens=(4096,) * 2, heads_q=32, heads_kv=8)  # 168 MB
    assert not lint.size_flags(big, load_arch("h200"))
    assert [c for c, _ in lint.size_flags(big, load_arch("b200"))] == ["working_set"]  # 2x 126 MiB of L2


def test_the_probe_keeps_each_row_and_its_features():
    sc = Scenario(q_lens=(1,) * 9, kv_lens=tuple(range(1000, 10000, 1000)), heads_q=64, heads_kv=8, regime="decode",
                  head_dim_qk=192, head_dim_v=128, kv_layout="paged", page_size=16, window_left=127, sinks=True,
                  input_profile="sinks_lse", dtype="fp8_e4m3", descale="per_tensor")
    small, tokens = lint.probe(sc)
    assert small.kv_lens == (1000, 4000, 6000, 9000) and tokens == [0, 1, 2, 3]  # shortest to longest
    assert (small.heads_kv, small.heads_q, small.head_dim_qk) == (lint.PROBE_HEADS_KV, 2 * lint.PROBE_HEADS_KV,
                                                                  lint.PROBE_HEAD_DIM)
    kept = ("regime", "kv_layout", "page_size", "window_left", "sinks", "input_profile", "dtype", "descale")
    assert all(getattr(small, f) == getattr(sc, f) for f in kept)
    prefill, rows = lint.probe(Scenario(q_lens=(3000, 5), kv_lens=(3000, 5), heads_q=2, heads_kv=2))
    spread = [round(i * 2999 / (lint.PROBE_ROWS - 1)) for i in range(lint.PROBE_ROWS)]
    assert rows == spread + [3000, 3001, 3002, 3003, 3004]  # the 5-row sequence whole


def test_bad_input_is_one_line_and_its_exit_code(capsys):
    assert cli.main(["lint", "--suite", "smoke"]) == 2
    assert "names no arch: pass --arch" in capsys.readouterr().err
    code, doc = _lint_json(capsys, "--suite", "no-such-suite")
    assert code == 2 and doc["command"] == "lint" and "unknown suite" in doc["error"]
    assert cli.main(["lint", "--suite", "smoke", "--arch", "h999"]) == 2


def test_the_table_numbers_the_suites_reasons(capsys):
    assert cli.main(["lint", "--suite", "hopper", "--filter=-d128-bf16-page64-causal-wl1023"]) == 0
    out = capsys.readouterr().out
    assert "[1] a window caps a long-context decode row" in out and "clean" in out.splitlines()[-1]


def test_progress_goes_to_stderr_where_there_is_no_terminal(capsys):
    """lint printed nothing for 15-76 s unless stderr was a terminal: a log or an agent's pipe now gets a line at
    the start, one every few seconds and one at the end."""
    assert cli.main(["lint", "--suite", "smoke", "--arch", "h200", "--max-scenarios", "2", "--json"]) in (0, 1)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == "lint smoke on h200: 2 scenario(s)" and lines[-1].startswith("lint smoke on h200: 2/2 done in")
    json.loads(captured.out)  # stdout still carries the one object


def test_step_progress_says_where_it_is_every_few_seconds(monkeypatch):
    import io

    from solbench.front import progress

    clock = iter([0.0, 1.0, 6.0, 7.0, 13.0, 20.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    out = io.StringIO()
    with progress.StepProgress("lint x on h200", out, live=False) as step:
        for i in range(5):
            step(i, 5, f"s{i}")
    assert out.getvalue().splitlines() == ["lint x on h200: 5 scenario(s)", "lint x on h200: 2/5 done, 6 s, ETA 9 s",
                                           "lint x on h200: 4/5 done, 13 s, ETA 3 s", "lint x on h200: 5/5 done in 20.0 s"]
