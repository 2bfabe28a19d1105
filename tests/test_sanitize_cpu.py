"""`solbench run --sanitize` on a CPU: which scenarios it picks, how it reads compute-sanitizer's logs,
the tensors it hands a runner that allocates them itself, and the whole loop against a fake
compute-sanitizer wrapping a fake runner (the real pair runs on the H200: tests/test_trust_gpu.py)."""

import json
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from solbench.core.errors import ConfigError  # noqa: E402
from solbench.core.policy import TimingPolicy  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.sandbox.impls import ImplSpec  # noqa: E402
from solbench.supervisor import sanitize as san  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.supervisor.native_worker import OwnTensors, copy_line, runner_argv  # noqa: E402

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 2 bytes
=========     at attn_fwd(SolbenchAttentionParams)+0x1a0 in kernel.cu:88
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f0000001000 is out of bounds
=========
========= ERROR SUMMARY: 4 errors
"""
RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at attn_fwd+0x90 in kernel.cu:40
=========     and Read access at attn_fwd+0x120 in kernel.cu:52 [256 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
========= ERROR SUMMARY: 1 error
"""
RACECHECK_ONLY_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at attn_fwd+0x90 in kernel.cu:40
=========     and Read access at attn_fwd+0x120 in kernel.cu:52 [256 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""
CLEAN_LOG = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
CLEAN_RACECHECK_LOG = "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"


@pytest.mark.parametrize("text, errors, first", [
    (MEMCHECK_LOG, 4, "Invalid __global__ write of size 2 bytes"),
    (RACECHECK_LOG, 1, "Error: Race reported between Write access at attn_fwd+0x90 in kernel.cu:40"),
    (RACECHECK_ONLY_LOG, 2, "Error: Race reported between Write access at attn_fwd+0x90 in kernel.cu:40"),
    (CLEAN_LOG, 0, ""),
    (CLEAN_RACECHECK_LOG, 0, ""),
    (MEMCHECK_LOG.replace("========= ERROR SUMMARY: 4 errors\n", ""), 1, "Invalid __global__ write of size 2 bytes"),  # racecheck's only summary when clean (the H200, CUDA 13.0)
    ("the sanitizer died before it wrote anything\n", None, ""),
])
def test_the_log_gives_the_error_count_and_the_first_error(tmp_path, text, errors, first):
    log = tmp_path / "tool.txt"
    log.write_text(text)
    assert san.read_log(log) == (errors, first)


def test_a_missing_log_reads_as_incomplete(tmp_path):
    assert san.read_log(tmp_path / "none.txt") == (None, "")


def test_the_smallest_scenario_of_each_feature_comes_first():
    scenarios = load_suite("edge").scenarios
    picked = san.smallest(scenarios, 4)
    assert len(picked) == 4 and len({s.id for s in picked}) == 4
    keys = [san.feature_key(s) for s in picked]
    assert len(set(keys)) == min(4, len({san.feature_key(s) for s in scenarios}))
    from solbench.core.roofline import flops
    for sc in picked:  # each is the smallest of its key
        same = [s for s in scenarios if san.feature_key(s) == san.feature_key(sc)]
        assert flops(sc) == min(flops(s) for s in same)
    assert san.smallest(scenarios, len(scenarios) + 5) and len(san.smallest(scenarios, 100)) == len(scenarios)


def test_requests_it_cannot_serve_are_refused_before_anything_runs():
    with pytest.raises(ConfigError, match="Python candidate"):
        san.check_can_sanitize("python", "cuda", 3)
    with pytest.raises(ConfigError, match="needs a GPU"):
        san.check_can_sanitize("cu", "cpu", 3)
    with pytest.raises(ConfigError, match="N >= 1"):
        san.check_can_sanitize("cu", "cuda", 0)
    san.check_can_sanitize("cu", "cuda", 1)


def test_the_runner_allocates_each_tensor_at_its_size_and_the_outputs_stay_uninitialised(tmp_path):
    sc = load_suite("smoke").scenarios[0]
    inputs = make_inputs(sc, 0, "cpu", b"secret")
    own = OwnTensors(tmp_path / "tensors.bin")
    tokens = copy_line(inputs, own.tokens_for(inputs)).split()[2:]
    assert len(tokens) == 14
    data = (tmp_path / "tensors.bin").read_bytes()
    q_offset, q_bytes = tokens[0].split(":")[1:]
    assert int(q_bytes) == inputs.q.numel() * inputs.q.element_size()
    import torch
    assert data[int(q_offset):int(q_offset) + int(q_bytes)] == inputs.q.view(torch.uint8).numpy().tobytes()
    out_token, lse_token = tokens[3], tokens[4]
    assert out_token == f"own:-:{inputs.out.numel() * inputs.out.element_size()}"  # no guard bytes: exact size
    assert lse_token.startswith("own:-:")
    assert tokens[8] == "-" or sc.kv_layout == "paged"  # page_table only when paged


def test_the_runner_is_asked_for_checks_only_when_it_owns_the_memory(tmp_path):
    spec = ImplSpec("candidate", "cu", "/x/lib.so", "k.cu", runner="native")
    plain = runner_argv(tmp_path / "runner", spec, TimingPolicy(), 0)
    assert "cupti=1" in plain and not any(a.startswith("data=") for a in plain)
    own = runner_argv(tmp_path / "runner", spec, TimingPolicy(), 0, tmp_path / "t.bin")
    assert {"cupti=0", "cold_l2=0", "calibrate=0", f"data={tmp_path / 't.bin'}"} <= set(own)
    assert "cupti=1" not in own


FAKE_RUNNER = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    mode = os.environ.get("FAKE_MODE", "")
    print("ready " + json.dumps({{"cupti": False, "launch_count": False}}), flush=True)
    print("ok " + json.dumps({{"device": "cuda:0", "runner": "native", "cupti": False}}), flush=True)
    copies = open(os.environ["FAKE_COPIES"], "a")
    lines = iter(sys.stdin)
    for line in lines:
        cmd = line.split()[0]
        if cmd == "quit":
            break
        if cmd == "prepare":
            for _ in range(int(line.split()[1])):
                copies.write(next(lines))
            copies.write(" ".join(sys.argv[1:]) + "\\n")
            copies.flush()
            print("ok " + json.dumps({{"writes_lse": True}}), flush=True)
        elif cmd == "check":
            if mode == "crash_under_racecheck" and os.environ.get("FAKE_TOOL") == "racecheck":
                os._exit(9)
            if os.environ.get("FAKE_OUTPUTS"):  # the outputs it hands back (runner.cu hand_back_outputs)
                data = [a[5:] for a in sys.argv if a.startswith("data=")][0]
                outputs = bytearray(open(os.environ["FAKE_OUTPUTS"], "rb").read())
                if mode == "knows_the_sanitizer" and os.environ.get("FAKE_TOOL"):
                    outputs[0] ^= 1  # clean under the sanitizer: the last bit of one element differs
                open(data + ".out", "wb").write(outputs)
            print("ok null", flush=True)
        else:
            print("ok null", flush=True)
    """)

FAKE_SANITIZER = textwrap.dedent("""\
    #!{python}
    import os, subprocess, sys
    args = sys.argv[1:]
    opts = {{}}
    while args[0].startswith("--"):
        opts[args[0]] = args[1]
        args = args[2:]
    tool = opts["--tool"]
    code = subprocess.run(args, env=dict(os.environ, FAKE_TOOL=tool)).returncode
    racy = os.environ.get("FAKE_MODE") == "racy" and tool == "racecheck"
    with open(opts["--log-file"], "w") as log:
        log.write("========= COMPUTE-SANITIZER\\n")
        if racy:
            log.write("========= Error: Race reported between Write access at k+0x10 in k.cu:1\\n")
        log.write("========= ERROR SUMMARY: %d error%s\\n" % ((1, "") if racy else (0, "s")))
    sys.exit(code)
    """)


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    runner, sanitizer = tmp_path / "fake-runner", tmp_path / "compute-sanitizer"
    runner.write_text(FAKE_RUNNER.format(python=sys.executable))
    sanitizer.write_text(FAKE_SANITIZER.format(python=sys.executable))
    for p in (runner, sanitizer):
        p.chmod(0o755)
    monkeypatch.setenv("FAKE_COPIES", str(tmp_path / "copies.txt"))
    return runner, sanitizer


def _sanitize(fakes, tmp_path, monkeypatch, mode, scenarios):
    runner, sanitizer = fakes
    monkeypatch.setenv("FAKE_MODE", mode)
    spec = ImplSpec("candidate", "cu", str(tmp_path / "lib.so"), "k.cu", runner="native")
    folder = tmp_path / "run"
    return san.sanitize(spec, scenarios, "h200", folder, "cpu", TimingPolicy(), b"s", timeout_s=30,
                        sanitizer=str(sanitizer), runner=runner), folder


def test_a_clean_candidate_gets_four_clean_findings_per_scenario(fakes, tmp_path, monkeypatch):
    scenarios = load_suite("smoke").scenarios[:2]
    findings, folder = _sanitize(fakes, tmp_path, monkeypatch, "", scenarios)
    assert [(f.scenario_id, f.tool) for f in findings] == [(s.id, t) for s in scenarios for t in san.TOOLS]
    assert all(f.clean for f in findings) and san.verdicts(findings) == {}
    assert all((folder / f.log).is_file() for f in findings)
    copies = (tmp_path / "copies.txt").read_text().splitlines()
    assert len(copies) == 2 * 2 * len(san.TOOLS)  # per (scenario, tool): the copy line, then the runner's argv
    assert all(tok.startswith("own:") or tok == "-" for tok in copies[0].split()[2:])
    assert "calibrate=0" in copies[1] and "cupti=0" in copies[1]


def test_a_race_makes_the_scenario_a_sanitizer_error_naming_the_tool(fakes, tmp_path, monkeypatch):
    sc = load_suite("smoke").scenarios[0]
    findings, _ = _sanitize(fakes, tmp_path, monkeypatch, "racy", [sc])
    reasons = san.verdicts(findings)
    assert list(reasons) == [sc.id]
    assert reasons[sc.id].startswith("compute-sanitizer racecheck: 1 error(s): Error: Race reported")
    assert [f.tool for f in findings if not f.clean] == ["racecheck"]


def test_a_call_that_dies_under_a_sanitizer_is_a_finding_not_a_pass(fakes, tmp_path, monkeypatch):
    sc = load_suite("smoke").scenarios[0]
    findings, _ = _sanitize(fakes, tmp_path, monkeypatch, "crash_under_racecheck", [sc])
    bad = [f for f in findings if not f.clean]
    assert [f.tool for f in bad] == ["racecheck"] and "did not complete under racecheck" in bad[0].first
    assert "racecheck" in san.verdicts(findings)[sc.id]


def test_run_sanitize_refuses_a_python_candidate_with_one_line(tmp_path, capsys):
    from solbench.front import cli

    code = cli.main(["run", "reference_kernels/torch_attention.py", "--suite", "smoke", "--device", "cpu",
                     "--quick", "--sanitize", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code != 0 and code != 1 and "--sanitize" in err and "Python candidate" in err
    assert not (tmp_path / "r" / "results.json").exists()


def test_findings_are_kept_in_the_record_and_valid_against_its_schema():
    from solbench import schemas
    from solbench.core.model import RunResult

    finding = san.Finding("sc", "racecheck", 1, "Error: Race", "sanitize/sc/racecheck.txt", compared=True,
                          differs="1 of 8 output elements differ in their bits").to_dict()
    d = {"schema": "solbench.run/1", "run_id": "r", "suite": "smoke", "suite_hash": "h",
         "candidate": {"name": "k.cu", "path": "k.cu", "kind": "cu", "sha256": ""}, "arch": "h200",
         "environment": {}, "policy": {}, "outcomes": [], "complete": True, "scenario_count": 0,
         "sanitize": [finding]}
    result = RunResult.from_dict(json.loads(json.dumps(d)))
    assert result.sanitize == (finding,)
    import jsonschema

    schema = json.loads(schemas.path("run").read_text())["properties"]["sanitize"]
    jsonschema.validate(json.loads(json.dumps(result.to_dict()))["sanitize"], schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**finding, "tool": "leakcheck"}], schema)
    from solbench.report.tables import _sanitize_line

    line = _sanitize_line(result)
    assert "1 scenario(s), 1 held to a scored call's outputs: 1 finding(s)" in line, line


def _kept_call(tmp_path, monkeypatch, sc):
    """A scored call of `sc` kept in the run folder (as witness.Witnessed keeps one), and the fake runner told to
    hand back its outputs."""
    from solbench.supervisor import witness
    from solbench.supervisor.reference import reference

    inputs = make_inputs(sc, 3, "cpu", b"s")
    out, lse = reference(inputs)
    inputs.out.copy_(out)
    inputs.lse.copy_(lse)
    witness.keep(inputs, witness.path_for(tmp_path / "run", sc.id))
    outputs = tmp_path / "outputs.bin"
    import torch

    outputs.write_bytes(b"".join(t.contiguous().view(torch.uint8).numpy().tobytes() for t in (inputs.out, inputs.lse)))
    monkeypatch.setenv("FAKE_OUTPUTS", str(outputs))
    return inputs


def test_the_sanitized_call_is_made_on_a_kept_call_and_held_to_its_outputs(fakes, tmp_path, monkeypatch):
    sc = load_suite("smoke").scenarios[0]
    kept = _kept_call(tmp_path, monkeypatch, sc)
    findings, folder = _sanitize(fakes, tmp_path, monkeypatch, "", [sc])
    assert all(f.compared and f.clean and not f.differs for f in findings) and san.verdicts(findings) == {}
    copies = (tmp_path / "copies.txt").read_text().splitlines()
    import torch

    q_offset, q_bytes = copies[0].split()[2].split(":")[1:]  # the kept call's q, not trial 0's
    data = (folder / "sanitize" / sc.id / "tensors.bin").read_bytes()
    assert data[int(q_offset):int(q_offset) + int(q_bytes)] == kept.q.view(torch.uint8).numpy().tobytes()
    trial0 = make_inputs(sc, 0, "cpu", b"s").q
    assert kept.q.view(torch.uint8).numpy().tobytes() != trial0.view(torch.uint8).numpy().tobytes()


def test_a_candidate_that_behaves_differently_under_the_sanitizer_is_a_sanitizer_error(fakes, tmp_path, monkeypatch):
    """knows_the_sanitizer.cu's pattern (issue 39, class 6): clean under every tool, one output bit apart from its
    scored calls: each tool's call differs from the kept one, and the scenario is a sanitizer_error that says so."""
    sc = load_suite("smoke").scenarios[0]
    _kept_call(tmp_path, monkeypatch, sc)
    findings, _ = _sanitize(fakes, tmp_path, monkeypatch, "knows_the_sanitizer", [sc])
    assert all(f.errors == 0 and not f.first for f in findings)  # every tool itself found nothing
    assert all(f.compared and f.differs.startswith("1 of ") for f in findings)
    reason = san.verdicts(findings)[sc.id]
    assert reason.startswith("compute-sanitizer memcheck: the call's outputs are not those of a scored call"), reason


def test_a_scenario_with_no_kept_call_is_sanitized_uncompared(fakes, tmp_path, monkeypatch):
    sc = load_suite("smoke").scenarios[0]
    findings, _ = _sanitize(fakes, tmp_path, monkeypatch, "knows_the_sanitizer", [sc])
    assert all(f.clean and not f.compared for f in findings)


def test_the_candidate_reads_one_command_line_in_every_mode(tmp_path):
    """native/hide_arguments.h, compiled alone: the runner's arguments for a timed run and for a sanitized one
    differ (confinement, fd socket, CUPTI; own tensors' data file), and what /proc/self/cmdline shows once the
    runner has read them is the same in both."""
    import subprocess
    from pathlib import Path

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native"
    source = tmp_path / "show.cpp"
    source.write_text('#include "hide_arguments.h"\n#include <cstdio>\nint main(int argc, char** argv) {\n'
                      '  hide_arguments(argc, argv);\n  FILE* f = fopen("/proc/self/cmdline", "rb");\n'
                      '  char buf[8192];\n  fwrite(buf, 1, fread(buf, 1, sizeof buf, f), stdout);\n}\n')
    exe = tmp_path / "solbench-runner"
    subprocess.run(["nvcc", "-std=c++17", f"-I{header}", str(source), "-o", str(exe)], check=True, capture_output=True)
    spec = ImplSpec("candidate", "cu", "/cache/kernel.so", "k.cu", runner="native")
    timed = runner_argv(exe, spec, TimingPolicy(), 0, writable=(str(tmp_path / "scratch"), "/dev/shm"), fd_socket=5)
    sanitized = runner_argv(exe, spec, TimingPolicy(), 0, tmp_path / "tensors.bin")
    assert timed[1:] != sanitized[1:]
    shown = [subprocess.run(argv, capture_output=True, check=True).stdout for argv in (timed, sanitized)]
    assert shown[0] == shown[1] == b"solbench-runner\0"
