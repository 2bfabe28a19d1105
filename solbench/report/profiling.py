"""Profiling hooks: one scenario's call of one implementation under ncu, nsys or compute-sanitizer.

The profiled process is `solbench run` on that one scenario (the scenario's exact id as a one-scenario
suite, no comparators, the quick policy), so the call is the one the run timed. ncu and nsys record from
the profiler API's start only, which the worker calls around its first checked call (SOLBENCH_PROFILE_CHECK):
the one call, not the supervisor's reference and input fills nor the timing loop's hundreds of calls (ncu
replays each kernel it profiles some 40 times: the whole run took over 5 minutes on the H200's smallest
smoke scenario). The tool's report stays in the run folder under profile/, and a
short summary is printed: ncu its SOL section, occupancy and top stall reasons; nsys the kernels by
total time; sanitizer its error summary.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from solbench.core.errors import ConfigError, MissingDependencyError

TOOLS = {"ncu": "ncu", "nsys": "nsys", "sanitizer": "compute-sanitizer"}
"""--tool -> the executable looked up on PATH."""
NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "WarpStateStats")


def _one_scenario_suite(result, scenario_id: str, folder: Path) -> Path:
    outcome = next((o for o in result.outcomes if o.scenario_id == scenario_id), None)
    if outcome is None:
        raise ConfigError(f"no scenario {scenario_id!r} in run {result.run_id}; `solbench report` lists them")
    lines = [f'name = "profile"', f'description = "{scenario_id} from {result.run_id}"', f'arch = "{result.arch}"',
             "", "[[scenario]]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in outcome.scenario.items() if v is not None and k != "id"]
    path = folder / "scenario.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def tool_command(tool: str, exe: str, report: Path, inner: list[str]) -> list[str]:
    """The command line that runs `inner` under the tool, writing `report` (without its suffix)."""
    if tool == "ncu":
        return [exe, "--clock-control", "none", "--set", "full", "--target-processes", "all",
                "--profile-from-start", "off", "-o", str(report), "--force-overwrite", *inner]
    if tool == "nsys":
        return [exe, "profile", "-o", str(report), "--force-overwrite", "true", "--trace", "cuda,nvtx",
                "--capture-range", "cudaProfilerApi", "--capture-range-end", "stop", *inner]
    return [exe, "--tool", "memcheck", "--target-processes", "all", "--log-file", f"{report}.txt", *inner]


def profile_scenario(run_path: Path, scenario_id: str, tool: str, impl: str = "candidate") -> tuple[Path, str]:
    """Profile; returns (report file, summary text). MissingDependencyError when the tool is not on PATH."""
    from solbench.supervisor.run_files import load_run

    result = load_run(run_path)
    folder = (Path(run_path) if Path(run_path).is_dir() else Path(run_path).parent) / "profile" / f"{scenario_id}-{impl}"
    exe = shutil.which(TOOLS[tool])
    if exe is None:
        raise MissingDependencyError(f"{TOOLS[tool]} is not on PATH: install the CUDA toolkit's profilers "
                                     "(Nsight Compute / Nsight Systems / compute-sanitizer) or add their bin/ to PATH")
    folder.mkdir(parents=True, exist_ok=True)
    suite = _one_scenario_suite(result, scenario_id, folder)
    target = result.candidate.get("path") if impl == "candidate" else f"baseline:{impl}"
    if not target:
        raise ConfigError(f"run {result.run_id} does not record the candidate's path; pass --impl BASELINE")
    inner = [sys.executable, "-m", "solbench", "run", str(target), "--suite", str(suite), "--baselines", "none",
             "--seed", "none", "--quick", "--out", str(folder / "run")]
    report = folder / tool
    env = dict(os.environ, SOLBENCH_PROFILE_CHECK="1")
    done = subprocess.run(tool_command(tool, exe, report, inner), capture_output=True, text=True, env=env)
    (folder / f"{tool}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise ConfigError(f"{TOOLS[tool]} exited {done.returncode}; its output is in {folder / f'{tool}.log'}")
    return SUMMARIES[tool](exe, report)


def _ncu_summary(exe: str, report: Path) -> tuple[Path, str]:
    rep = report.with_suffix(".ncu-rep")
    args = [exe, "--import", str(rep), "--page", "details", "--csv"]
    for section in NCU_SECTIONS:
        args += ["--section", section]
    rows = list(csv.DictReader(io.StringIO(subprocess.run(args, capture_output=True, text=True, check=True).stdout)))
    lines, stalls = [], []
    for section in ("GPU Speed Of Light Throughput", "Occupancy", "Warp State Statistics"):
        lines.append(f"{section}:")
        lines += [f"  {r['Kernel Name'][:40]}  {r['Metric Name']}: {r['Metric Value']} {r['Metric Unit']}"
                  for r in rows if r.get("Section Name") == section and r.get("Metric Name")]
    for r in rows:
        if "stall" in r.get("Metric Name", "").lower():
            try:
                stalls.append((float(r["Metric Value"].replace(",", "")), r["Metric Name"]))
            except ValueError:
                continue
    lines.append("top stall reasons: " + (", ".join(f"{n} {v:g}" for v, n in sorted(stalls, reverse=True)[:3])
                                          or f"not on the details page (open {rep.name} in Nsight Compute: "
                                          "Warp State Statistics)"))
    return rep, "\n".join(lines)


def _nsys_summary(exe: str, report: Path) -> tuple[Path, str]:
    rep = report.with_suffix(".nsys-rep")
    out = subprocess.run([exe, "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv", str(rep)],
                         capture_output=True, text=True, check=True).stdout
    text = out[out.find('"Time') if '"Time' in out else out.find("Time"):]
    rows = list(csv.DictReader(io.StringIO(text)))
    lines = ["kernels by total time:"] + [f"  {r.get('Time (%)')} %  {r.get('Instances')} x  {r.get('Name', '')[:80]}"
                                          for r in rows[:5]]
    return rep, "\n".join(lines)


def _sanitizer_summary(exe: str, report: Path) -> tuple[Path, str]:
    log = Path(f"{report}.txt")
    lines = log.read_text().splitlines() if log.exists() else []
    summary = [line for line in lines if "ERROR SUMMARY" in line]
    return log, summary[-1].strip("= ") if summary else "no ERROR SUMMARY line in the sanitizer log"


SUMMARIES = {"ncu": _ncu_summary, "nsys": _nsys_summary, "sanitizer": _sanitizer_summary}
