"""`solbench run --sanitize`: compute-sanitizer's memcheck, racecheck, initcheck and synccheck over the
candidate's call on the smallest scenarios of the suite (.cu candidates, on a GPU), held to the outputs of a call
of the scored run on the very same inputs.

Each (scenario, tool) is one native runner under the sanitizer, in a mode with no timing, CUPTI, flush or
cover: it allocates every tensor itself at its exact size (so memcheck sees each tensor's own bounds, not
the guard bytes of the timed runs), copies the inputs in from a file the supervisor writes, leaves the
outputs uninitialised (so initcheck sees any read of them before a write), calls the candidate once, hands
its outputs back and leaves. A scenario with a finding, or whose call did not complete under a tool, gets
`sanitizer_error`: a race or an uninitialised read that happened to give the right numbers is still a bug.

A candidate that knows it is under the sanitizer must gain nothing by it. It can know: the
sanitizer's library is mapped into its process and named in its environment, the sanitizer is its parent, its
kernels run two orders of magnitude slower, its tensors are its runner's own and nothing confines it. The
runner shows it one command line in every mode (native/hide_arguments.h), but the rest cannot be hidden from
code in the same process, and a timed run inside the sanitizer (the same injection present) would time the
sanitizer. So the class is closed by what is compared, not by what is hidden: during the scored run the
supervisor keeps one of the candidate's judged calls (checked or timed), drawn at random where the candidate
cannot see the draw (solbench.supervisor.witness), and the sanitized call is made on exactly its inputs. Its
outputs must be the kept call's bit for bit (a deterministic candidate's two checked calls must be anyway), or,
for a candidate declared non-deterministic, pass the verdict on their own; otherwise `sanitizer_error`. A kernel
that races only when it is not sanitized then fails as soon as the race moves a bit of any judged call. The price:
a kernel that picks its tiles by timing itself at run time (the sanitizer's slowness would change the pick) must
declare itself non-deterministic to be sanitized (its sanitized outputs are then judged on their own).
What remains: a candidate whose two paths give the same bits on the inputs it gets (the race
never shows in an output); and one that stores the outputs of every timed call where its sanitized process can
read them back (/dev/shm, its log: the channel inventory closes those). The scenarios sanitized are chosen before
the run (the smallest of each feature, `smallest`), so their calls can be kept; those that fail are not
sanitized (a failed scenario already scores the suite 0). A scenario with no kept call (a run resumed from
one made before this, an executor whose agents do not share the run folder) is sanitized on fresh inputs,
uncompared, and its findings say so.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from solbench.core.errors import ConfigError, MissingDependencyError

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
TOOL_OPTIONS = {"memcheck": ("--leak-check", "no", "--padding", "4096"), "racecheck": ("--racecheck-report", "all"),
                "initcheck": (), "synccheck": ()}
DEFAULT_SCENARIOS = 3
"""How many scenarios `--sanitize` alone checks."""
TIMEOUT_S = 600.0
"""Per (scenario, tool): racecheck slows a kernel by two orders of magnitude or more."""
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?")
"""memcheck, initcheck and synccheck end with ERROR SUMMARY; racecheck with RACECHECK SUMMARY alone when it
found nothing (seen on the H200, CUDA 13.0), with both when it found a hazard."""
_FINDING = re.compile(r"^=+\s+(Invalid|Error|Uninitialized|Barrier|Race|Program hit|Warning|Hazard|.*hazard)")


@dataclass(frozen=True)
class Finding:
    """One tool's verdict on one scenario's call."""

    scenario_id: str
    tool: str
    errors: int | None
    """The tool's error count; None when the call did not complete under it."""
    first: str
    """The first reported error, or why the call did not complete ('' when clean)."""
    log: str
    """The tool's log, relative to the run folder."""
    compared: bool = False
    """Its outputs were held to a kept call of the scored run on the same inputs (solbench.supervisor.witness)."""
    differs: str = ""
    """How they differ from that call's ('' when they do not, or were not compared)."""

    @property
    def clean(self) -> bool:
        return self.errors == 0 and not self.first and not self.differs

    def to_dict(self) -> dict:
        return asdict(self)


def find_sanitizer() -> str:
    """compute-sanitizer on PATH or in the CUDA toolkit; MissingDependencyError when there is none."""
    from solbench.build.native import toolkit_roots
    from solbench.build.nvcc import find_nvcc
    from solbench.core.errors import BuildError

    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    try:
        nvcc = find_nvcc()
    except BuildError:
        nvcc = None
    for root in toolkit_roots(nvcc):
        for sub in ("bin/compute-sanitizer", "compute-sanitizer/compute-sanitizer"):
            if (root / sub).is_file():
                return str(root / sub)
    raise MissingDependencyError("compute-sanitizer is not on PATH or in the CUDA toolkit: install the toolkit's "
                                 "compute-sanitizer, or run without --sanitize")


def check_can_sanitize(kind: str, device: str, count: int) -> None:
    """ConfigError for a request --sanitize cannot serve (said before anything is built or timed)."""
    if count < 1:
        raise ConfigError(f"--sanitize N takes N >= 1 scenarios, got {count}")
    if kind != "cu":
        raise ConfigError("--sanitize runs a .cu candidate's own process under compute-sanitizer; a Python "
                          "candidate shares its process with Python and torch, whose kernels it would report too")
    if not device.startswith("cuda"):
        raise ConfigError("--sanitize needs a GPU (compute-sanitizer checks device code): run it on the GPU machine")


def feature_key(sc) -> tuple:
    """The code paths a scenario exercises: the smallest scenario of each key is sanitized first."""
    return (sc.kv_layout, sc.dtype, sc.descale, sc.causal, sc.window_left >= 0 or sc.window_right >= 0,
            sc.softcap > 0, sc.sinks, sc.mask is not None, sc.head_dim_qk, sc.head_dim_v)


def smallest(scenarios, count: int) -> list:
    """`count` scenarios: by work (FLOPs, then bytes), the smallest of each feature_key first, then the
    smallest of the rest."""
    from solbench.core.roofline import flops, min_bytes

    by_size = sorted(scenarios, key=lambda s: (flops(s), min_bytes(s), s.id))
    picked, keys = [], set()
    for sc in by_size:
        if len(picked) < count and feature_key(sc) not in keys:
            picked.append(sc)
            keys.add(feature_key(sc))
    picked += [sc for sc in by_size if sc not in picked][:count - len(picked)]
    return sorted(picked, key=by_size.index)


def read_log(path: Path) -> tuple[int | None, str]:
    """(the largest error count of any summary line, the first error reported) from a compute-sanitizer log."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None, ""
    counts = [int(m.group(1) or m.group(2)) for line in lines if (m := _SUMMARY.search(line))]
    findings = [line.lstrip("= ").strip() for line in lines if _FINDING.match(line) and "SUMMARY" not in line]
    if not counts and findings:  # the tool reported errors, then the process ended before its summary
        counts = [len(findings)]  # (memcheck aborts the faulting kernel; the call fails and the runner exits)
    return (max(counts) if counts else None), (findings[0] if findings else "")[:300]


def sanitize(spec, scenarios, arch: str, folder: Path, device: str, policy, secret: bytes,
             tools=TOOLS, timeout_s: float = TIMEOUT_S, sanitizer: str | None = None,
             runner: Path | None = None) -> list[Finding]:
    """Every tool over every scenario's call on its kept call's inputs (see the module docstring); `runner`: the
    native runner's executable (None = built for `arch`)."""
    from solbench.supervisor import witness
    from solbench.supervisor.inputs import make_inputs

    exe = sanitizer or find_sanitizer()
    kept = {sc.id: witness.load(folder, sc) for sc in scenarios}  # all read before any sanitized runner starts
    findings = []
    for sc in scenarios:
        where = Path(folder) / "sanitize" / sc.id
        where.mkdir(parents=True, exist_ok=True)
        inputs = kept[sc.id] or make_inputs(sc, 0, "cpu", secret)
        for tool in tools:
            log = where / f"{tool}.txt"
            log.unlink(missing_ok=True)
            wrap = (exe, "--tool", tool, "--print-limit", "20", "--log-file", str(log), *TOOL_OPTIONS[tool])
            failed, handed_back = _call(spec, device, policy, arch, runner, wrap, where, tool, inputs, timeout_s)
            errors, first = read_log(log)
            if errors is None and not failed:
                failed = f"{tool} wrote no summary line (see {log.name})"
            differs = ""
            if kept[sc.id] is not None and not failed:
                differs = witness.differs(kept[sc.id], handed_back, getattr(spec, "deterministic", True))
            findings.append(Finding(sc.id, tool, errors, first if errors else failed, str(log.relative_to(folder)),
                                    compared=kept[sc.id] is not None and not failed, differs=differs))
    return findings


def _call(spec, device, policy, arch, runner, wrap, where: Path, tool: str, inputs, timeout_s: float):
    """(why the call did not complete, '' if it did; the outputs it handed back) of one runner under `wrap`."""
    from solbench.supervisor.native_worker import NativeWorker
    from solbench.supervisor.python_worker import WorkerFailure

    data = where / "tensors.bin"
    handed_back = data.with_name(data.name + ".out")  # where the runner writes the check's outputs (runner.cu)
    handed_back.unlink(missing_ok=True)
    worker = NativeWorker(spec, device, policy, where / f"{tool}-runner.log", arch=arch, wrap=wrap,
                          own_memory=data, runner=runner)
    failed = ""
    try:
        worker.start(timeout_s)
        for cmd, payload in (("prepare", {"check": inputs, "rotation": []}), ("check", {"keep": False})):
            reply = worker.request(cmd, payload, timeout_s)
            if isinstance(reply, dict) and "unsupported" in reply:
                failed = f"the candidate declined the scenario under {tool}: {reply['unsupported']}"
                break
    except WorkerFailure as exc:
        failed = f"the call did not complete under {tool}: {exc}"
    finally:
        worker.stop(grace_s=timeout_s)
    try:
        return failed, handed_back.read_bytes()
    except OSError:
        return failed, b""


def verdicts(findings: list[Finding]) -> dict[str, str]:
    """scenario id -> the sanitizer_error reason, for each scenario with a finding."""
    out: dict[str, str] = {}
    for f in findings:
        if f.clean or f.scenario_id in out:
            continue
        if f.differs and not f.errors:
            out[f.scenario_id] = (f"compute-sanitizer {f.tool}: the call's outputs are not those of a scored call "
                                  f"on the same inputs: {f.differs} (log: {f.log})")
            continue
        what = f"{f.errors} error(s)" if f.errors else "incomplete"
        out[f.scenario_id] = f"compute-sanitizer {f.tool}: {what}: {f.first} (log: {f.log})"
    return out
