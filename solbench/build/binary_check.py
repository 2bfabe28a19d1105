"""Reject built candidates that lean on a vendor library instead of being a kernel.

A speed-of-light score is for the code in the candidate, so cuBLAS, cuDNN, CUTLASS and CuTe are
forbidden unless explicitly allowed (`allow=("cutlass",)`, `--allow-lib cutlass`). The .so is read
from every angle a name can hide in:

- dynamic dependencies (`readelf -d` NEEDED): libcublas*, libcudnn*;
- dynamic and static symbol tables (`nm -D`, `nm`), demangled: cublas*/cudnn* C API calls,
  `cutlass::` / `cute::` functions and template arguments;
- device code: `cuobjdump -symbols` when installed, and in any case every mangled name embedded in
  the file (the fatbin's ELF string tables and the host-side kernel registration strings);
- embedded strings: `libcublas...` / `cublasSgemm...` as a dlopen()/dlsym() bypass would need.

Device functions that were fully inlined leave no name behind; this check catches linking and
naming, not a copy of a library's source pasted under another name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from solbench.core.errors import BuildError, ConfigError


@dataclass(frozen=True)
class Rule:
    """How one library shows up in a binary."""

    display: str
    """Human name: 'cuBLAS'."""
    needed: str | None
    """Regex on NEEDED entries."""
    symbol: str
    """Regex searched in each demangled symbol or embedded name."""
    strings: tuple[bytes, ...] = ()
    """Regexes on the raw file bytes (library file names and C API names for dlopen/dlsym)."""


RULES = {
    "cublas": Rule("cuBLAS", r"^libcublas", r"^cublas[A-Z]\w*", (rb"libcublas[\w.]*", rb"\bcublas[A-Z]\w+")),
    "cudnn": Rule("cuDNN", r"^libcudnn", r"^cudnn[A-Z]\w*", (rb"libcudnn[\w.]*", rb"\bcudnn[A-Z]\w+")),
    "cutlass": Rule("CUTLASS", r"^libcutlass", r"(?<![\w])cutlass::"),
    "cute": Rule("CuTe", None, r"(?<![\w])cute::"),
}
FORBIDDEN_LIBRARIES = tuple(RULES)


@dataclass(frozen=True)
class Finding:
    """One piece of evidence that a library is used."""

    library: str
    """Key of RULES: 'cublas', 'cudnn', 'cutlass' or 'cute'."""
    symbol: str
    """The offending name, demangled (or the NEEDED entry, or the embedded string)."""
    where: str
    """'NEEDED', 'dynamic symbol', 'symbol table', 'device code' or 'embedded string'."""


@dataclass(frozen=True)
class BinaryReport:
    """What the inspection of one .so found."""

    so_path: str
    needed: tuple[str, ...]
    """The library's NEEDED entries."""
    findings: tuple[Finding, ...]
    """Evidence of forbidden libraries that are not allowed: non-empty means rejected."""
    allowed_findings: tuple[Finding, ...]
    """Evidence of libraries the caller allowed."""
    allowed: tuple[str, ...]
    inspections: tuple[str, ...]
    """Which inspections ran."""
    missing_tools: tuple[str, ...]
    """Tools that were not installed (their inspection was skipped)."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def verdict(self) -> str:
        """One line for people."""
        if self.findings:
            return "; ".join(_library_line(lib, fs) for lib, fs in _by_library(self.findings).items())
        line = f"no forbidden library ({', '.join(l for l in FORBIDDEN_LIBRARIES if l not in self.allowed)})"
        if self.allowed_findings:
            line += "; allowed and used: " + ", ".join(_by_library(self.allowed_findings))
        if self.missing_tools:
            line += f"; not checked with: {', '.join(self.missing_tools)}"
        return line


def check_binary(so_path, allow=(), source=None) -> BinaryReport:
    """inspect_binary, raising BuildError naming each forbidden library and one offending symbol.

    `source` (the .cu the library was built from) names the culprit in the message when given.
    """
    report = inspect_binary(so_path, allow)
    if not report.ok:
        hint = " ".join(f"--allow-lib {lib}" for lib in _by_library(report.findings))
        raise BuildError(f"{source or so_path}: forbidden library: {report.verdict()} (to permit: {hint})")
    return report


def inspect_binary(so_path, allow=()) -> BinaryReport:
    """Collect evidence of every library in RULES; those in `allow` are reported but not held against it."""
    allow = tuple(allow)
    unknown = [a for a in allow if a not in RULES]
    if unknown:
        raise ConfigError(f"--allow-lib: unknown library {unknown[0]!r}; known: {', '.join(RULES)}")
    path = Path(so_path)
    if not path.is_file():
        raise BuildError(f"{so_path}: no such shared library")
    inspections, missing = [], []

    def tool(name: str, *args: str) -> str | None:
        if shutil.which(name) is None:
            missing.append(name)
            return None
        inspections.append(" ".join((name, *args[:-1])))
        proc = subprocess.run([name, *args], capture_output=True, text=True, errors="replace")
        return proc.stdout if proc.returncode == 0 else ""

    needed = tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", tool("readelf", "-d", str(path)) or ""))
    names: list[tuple[str, str]] = [(n, "dynamic symbol") for n in _nm_names(tool("nm", "-D", "-P", str(path)))]
    names += [(n, "symbol table") for n in _nm_names(tool("nm", "-P", str(path)))]
    cuobjdump = tool("cuobjdump", "-symbols", str(path))
    names += [(m, "device code") for m in re.findall(r"^\s*STT_\w+.*?\s(\S+)\s*$", cuobjdump or "", re.M)]
    data = path.read_bytes()
    inspections.append("embedded-name scan")
    names += [(m.decode(), "embedded string") for m in sorted(set(re.findall(rb"_Z[A-Za-z0-9_$]{3,}", data)))]

    evidence: list[Finding] = []
    for lib, rule in RULES.items():
        if rule.needed:
            evidence += [Finding(lib, n, "NEEDED") for n in needed if re.search(rule.needed, n)]
    demangled = demangle([n for n, _ in names])
    for (raw, where), name in zip(names, demangled):
        for lib, rule in RULES.items():
            if re.search(rule.symbol, name):
                evidence.append(Finding(lib, name, where))
    for lib, rule in RULES.items():
        for pattern in rule.strings:
            evidence += [Finding(lib, m.decode(), "embedded string") for m in sorted(set(re.findall(pattern, data)))]

    unique = list(dict.fromkeys(evidence))
    seen_symbols: set[tuple[str, str]] = set()
    deduped = []
    for f in unique:  # one finding per (library, name): the first place it was seen
        if (f.library, f.symbol) not in seen_symbols:
            seen_symbols.add((f.library, f.symbol))
            deduped.append(f)
    return BinaryReport(
        so_path=str(path), needed=needed,
        findings=tuple(f for f in deduped if f.library not in allow),
        allowed_findings=tuple(f for f in deduped if f.library in allow),
        allowed=allow, inspections=tuple(inspections), missing_tools=tuple(dict.fromkeys(missing)),
    )


def demangle(names: list[str]) -> list[str]:
    """Itanium-demangled names, in order (cu++filt, else c++filt; unchanged if neither exists)."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not names or tool is None:
        return list(names)
    proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, errors="replace")
    out = proc.stdout.splitlines()
    return out if proc.returncode == 0 and len(out) == len(names) else list(names)


def _nm_names(text: str | None) -> list[str]:
    """Symbol names from `nm -P` output ('name type [value size]' per line)."""
    return [line.split()[0] for line in (text or "").splitlines() if line.strip() and not line.endswith(":")]


def _by_library(findings) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.library, []).append(f)
    return out


def _library_line(lib: str, findings: list[Finding]) -> str:
    """'cuBLAS (cublas): symbol `cublasCreate_v2` (dynamic symbol, +2 more), links libcublas.so.13'."""
    symbols = [f for f in findings if f.where != "NEEDED"]
    needed = [f.symbol for f in findings if f.where == "NEEDED"]
    parts = []
    if symbols:
        more = f", +{len(symbols) - 1} more" if len(symbols) > 1 else ""
        parts.append(f"symbol `{symbols[0].symbol}` ({symbols[0].where}{more})")
    if needed:
        parts.append("links " + ", ".join(needed))
    return f"{RULES[lib].display} ({lib}): " + ", ".join(parts)
