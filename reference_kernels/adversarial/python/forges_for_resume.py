"""Cheat class 7 (the record): `--resume` believes the results.json on disk. The record
is the supervisor's only while the supervisor lives: the worker (same Unix user) may write the run folder,
and may signal its parent. At import this module forks a helper that waits for the first outcome in the
run's results.json, rewrites the file with every scenario of the run `passed` (forged measurements 20x
faster than the comparators, clean error statistics), and SIGKILLs the supervisor (`solbench run` dies;
no final write, no `record_overwritten_at`). `solbench run CANDIDATE --resume RUN` then keeps what the file
says (runner.py 243-244, `kept`), finds nothing left to do (the candidate is never even loaded), and writes
a complete record, all passed, with the supervisor's own digest. The forward itself writes zeros.
Only with $SOLBENCH_ADVERSARY_RESUME set (it kills the process that runs it: never inside pytest).

expect: see tests/test_adversarial_python_cpu.py (a resumed run must not keep outcomes it did not write itself)
"""

import json
import os
import signal
import time


def forward(inp):
    inp.out.zero_()
    inp.lse.zero_()


def _forge(path):
    from solbench.core.suites import load_suite

    doc = json.load(open(path))
    done = {o["scenario_id"]: o for o in doc["outcomes"]}
    template = next(iter(done.values()))
    scenarios = load_suite(doc["suite"]).scenarios[:doc["scenario_count"]]  # no --filter assumed
    names = [n for n in doc["candidate"]["implementations"] if n != "candidate"]
    outcomes = []
    for sc in scenarios:
        fast = [0.05, 0.051, 0.049, 0.05]
        measurements = {"candidate": {"impl": "candidate", "samples_ms": fast, "method": "host_clock",
                                      "host_samples_ms": fast, "device_graph_ms": None, "flags": [], "telemetry": {}}}
        for n in names:
            slow = [1.0, 1.02, 0.98, 1.0]
            measurements[n] = {"impl": n, "samples_ms": slow, "method": "host_clock", "host_samples_ms": slow,
                               "device_graph_ms": None, "flags": [], "telemetry": {}}
        error = dict(template["error"] or {}, max_abs=0.001, mean_abs=0.0001, frac_outside_tol=0.0, unwritten=0,
                     nonfinite=0, lse_max_abs=0.0, row_max_mean_abs=0.0002)
        outcome = dict(template, scenario_id=sc.id, scenario=sc.to_dict(), status="passed", reason="", error=error,
                       measurements=measurements, ratios={n: [20.0] * 4 for n in names},
                       comparators={n: {"status": "passed", "reason": "", "error": error} for n in names})
        outcomes.append(outcome)
    doc["outcomes"] = outcomes
    tmp = path + ".forged"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _helper(folder, supervisor):
    path = os.path.join(folder, "results.json")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            if json.load(open(path))["outcomes"]:
                break
        except (OSError, ValueError, KeyError):
            pass
    os.kill(supervisor, signal.SIGSTOP)  # hold it still while the file is replaced
    try:
        _forge(path)
    finally:
        os.kill(supervisor, signal.SIGKILL)


if os.environ.get("SOLBENCH_ADVERSARY_RESUME"):
    _folder = os.path.dirname(os.readlink("/proc/self/fd/1"))  # the worker's log, in the run folder
    _supervisor = os.getppid()
    if os.fork() == 0:
        try:
            _helper(_folder, _supervisor)
        finally:
            os._exit(0)
