"""Compile one candidate .cu into a shared library with nvcc, cached by content.

The only module that runs nvcc. The cache key is the sha256 of the source, every local header it
includes (quoted includes, followed recursively), the full flag list and `nvcc --version`, so a
hit is a byte-for-byte rebuild avoided and a changed header is never served stale. Builds land in
`$SOLBENCH_CACHE/build` (default `~/.cache/solbench/build`), one directory per key, made atomically.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from solbench import abi
from solbench.build.binary_check import demangle
from solbench.core.archspec import known_arches, load_arch
from solbench.core.errors import BuildError, ConfigError
from solbench.sandbox import hide

BASE_FLAGS = ("-O3", "-lineinfo", "-shared", "-Xcompiler", "-fPIC", "--std=c++17", "-Xptxas", "-v")
COMPILE_TIMEOUT_S = 900.0
_KEY_SALT = b"solbench-build-v1\0"  # bump to invalidate every cached build


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one __global__ function."""

    name: str
    """Demangled name (mangled if c++filt is missing)."""
    mangled: str
    registers: int
    """Registers per thread."""
    shared_bytes: int
    """Static shared memory per CTA, bytes (dynamic shared memory is chosen at launch, not here)."""
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int


@dataclass(frozen=True)
class BuildResult:
    """One built candidate and how it was built."""

    so_path: Path
    """The shared library, inside the build cache."""
    source: str
    """Absolute path of the .cu."""
    arch: str
    """The arch name built for ('h200'; with --arch auto, the GPU found)."""
    sm: str
    """nvcc target, e.g. 'sm_90a'."""
    flags: tuple[str, ...]
    """Every nvcc flag, in order (source and -o excluded)."""
    nvcc_version: str
    """e.g. '13.0.88'."""
    source_sha256: str
    """sha256 of the .cu alone."""
    cache_key: str
    """sha256 of source + local headers + flags + nvcc --version: the cache directory's name."""
    binary_sha256: str
    cache_hit: bool
    """True when the library came from the cache without running nvcc."""
    kernels: tuple[KernelResources, ...]
    log: str
    """nvcc's and ptxas's raw output (ptxas -v resource lines included)."""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["so_path"] = str(self.so_path)
        d["flags"] = list(self.flags)
        d["kernels"] = [asdict(k) for k in self.kernels]
        return d


def cache_root(cache_dir=None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    root = os.environ.get("SOLBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "solbench") / "build"


def resolve_arch(arch: str) -> tuple[str, str]:
    """(arch name, nvcc sm target) for an --arch value: an arch with a spec file (the one list `run` and
    `roofline` take; its `sm_arch` is the target), 'auto', or a raw 'sm_XX[a]'."""
    if arch in known_arches():
        return arch, load_arch(arch).sm_arch
    if re.fullmatch(r"sm_\d+[af]?", arch or ""):
        return arch, arch
    if arch == "auto":
        found = detect_gpu()
        if found is None:
            raise ConfigError("--arch auto: no NVIDIA GPU found (torch.cuda, nvidia-smi); pass --arch "
                              + "|".join(known_arches()))
        return found
    raise ConfigError(f"unknown arch {arch!r}; known arches: {', '.join(known_arches())}, auto, or an nvcc target sm_XX")


def detect_gpu() -> tuple[str, str] | None:
    """(arch name, sm target) of GPU 0, from torch if it sees a GPU, else nvidia-smi; None if none."""
    name = cap = None
    try:
        import torch

        if torch.cuda.is_available():
            name, cap = torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)
    except ImportError:
        pass
    if name is None and shutil.which("nvidia-smi"):
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True)
        line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
        if "," in line:
            name, cc = (s.strip() for s in line.split(",", 1))
            cap = tuple(int(x) for x in cc.split("."))
    if name is None:
        return None
    sm = f"sm_{cap[0]}{cap[1]}" + ("a" if cap[0] >= 9 else "")
    for label, needle in (("h100", "H100"), ("h200", "H200"), ("b200", "B200"), ("rtx3080", "3080")):
        if needle in name and load_arch(label).sm_arch == sm:
            return label, sm
    return sm, sm


def find_nvcc() -> str:
    candidates = [shutil.which("nvcc")]
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(os.path.join(os.environ[env], "bin", "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise BuildError("nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): install the CUDA toolkit "
                     "or put nvcc on PATH")


@functools.lru_cache(maxsize=None)
def nvcc_version_text(nvcc: str) -> str:
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{nvcc} --version failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def local_headers(source: Path, include_dirs=()) -> list[Path]:
    """Quoted #includes that resolve to files (next to the includer, then include_dirs), recursively."""
    found: list[Path] = []
    todo = [source]
    while todo:
        current = todo.pop(0)
        try:
            text = current.read_text(errors="replace")
        except OSError:
            continue
        for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            for folder in (current.parent, *include_dirs):
                path = (Path(folder) / name).resolve()
                if path.is_file():
                    if path not in found and path != source:
                        found.append(path)
                        todo.append(path)
                    break
    return found


def cache_key(source: Path, headers, flags, nvcc_version: str) -> str:
    h = hashlib.sha256(_KEY_SALT)
    for part in (source.read_bytes(), *(p.name.encode() + b"\0" + p.read_bytes() for p in headers),
                 "\0".join(flags).encode(), nvcc_version.encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def build(source, arch: str, extra_flags=(), include_dirs=(), cache_dir=None) -> BuildResult:
    """Build `source` for `arch` (see resolve_arch), or fetch it from the cache.

    Raises BuildError (the compiler's first error lines, file:line first) when it does not compile,
    ConfigError for an unknown arch or a missing source file.
    """
    source = Path(source).resolve()
    if not source.is_file():
        raise ConfigError(f"{source}: no such file")
    label, sm = resolve_arch(arch)
    nvcc = find_nvcc()
    version_text = nvcc_version_text(nvcc)
    incs = tuple(str(Path(d).resolve()) for d in include_dirs) + (str(abi.INCLUDE_DIR),)
    flags = (*BASE_FLAGS, f"-gencode=arch=compute_{sm[3:]},code={sm}", *(f"-I{d}" for d in incs), *extra_flags)
    key = cache_key(source, local_headers(source, incs), flags, version_text)
    root = cache_root(cache_dir)
    final = root / key[:2] / key
    cached = _read_cached(final, source)
    if cached is not None:
        return cached
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=final.parent))
    except OSError as exc:
        raise ConfigError(f"build cache {root} is not writable ({exc.strerror}); set SOLBENCH_CACHE") from None
    try:
        so = work / "kernel.so"
        cmd = [nvcc, *flags, str(source), "-o", str(so)]
        # Where a server hides its state, nvcc reads only the source's folder, the include folders and its own
        # work folder there (an #include of another client's file fails), and keeps its temporary files in it.
        run_cmd = hide.command(cmd, keep=[source.parent, work, *incs])
        env = {**os.environ, "TMPDIR": str(work)} if run_cmd != cmd else None
        try:
            proc = subprocess.run(run_cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                                  cwd=source.parent, env=env)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{source}: nvcc did not finish in {COMPILE_TIMEOUT_S:.0f} s") from None
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not so.is_file():
            raise BuildError(compile_error_message(source, sm, log, _keep_log(root, key, cmd, log)))
        result = BuildResult(
            so_path=final / "kernel.so", source=str(source), arch=label, sm=sm, flags=flags,
            nvcc_version=_version_number(version_text), source_sha256=_sha256(source.read_bytes()),
            cache_key=key, binary_sha256=_sha256(so.read_bytes()), cache_hit=False,
            kernels=parse_ptxas(log), log=log,
        )
        (work / "build.json").write_text(json.dumps(result.to_dict(), indent=1))
        try:
            os.rename(work, final)
        except OSError:  # another process built the same key first: use theirs
            result = _read_cached(final, source)
            if result is None:
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _read_cached(folder: Path, source: Path) -> BuildResult | None:
    try:
        d = json.loads((folder / "build.json").read_text())
        so = folder / "kernel.so"
        if _sha256(so.read_bytes()) != d["binary_sha256"]:
            return None
    except (OSError, ValueError, KeyError):
        return None
    d.update(so_path=so, source=str(source), flags=tuple(d["flags"]), cache_hit=True,
             kernels=tuple(KernelResources(**k) for k in d["kernels"]))
    return BuildResult(**d)


def _keep_log(root: Path, key: str, cmd, log: str) -> Path:
    path = root / "failed" / f"{key}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(" ".join(cmd) + "\n\n" + log)
    return path


def compile_error_message(source: Path, sm: str, log: str, log_path: Path | None = None, max_lines: int = 3) -> str:
    """'file:line: error: ...' lines first (nvcc's 'file(line): error' rewritten), then where the log is."""
    errors = []
    for line in log.splitlines():
        line = re.sub(r"^(.*?)\((\d+)\): (error|catastrophic error)", r"\1:\2: \3", line.strip())
        if re.search(r"errors? detected in the compilation", line):
            continue  # nvcc's summary line, not an error
        if re.search(r"\b(error|fatal)\b", line, re.I) and line not in errors:
            errors.append(line)
    if not errors:
        errors = [f"{source}: nvcc failed for {sm} with no error line; last output: "
                  + (log.strip().splitlines() or ["(none)"])[-1]]
    msg = "\n  ".join(errors[:max_lines])
    if len(errors) > max_lines:
        msg += f"\n  ... and {len(errors) - max_lines} more error line(s)"
    if log_path is not None:
        msg += f"\n  full log: {log_path}"
    return msg


def parse_ptxas(log: str) -> tuple[KernelResources, ...]:
    """Per-kernel resources from `ptxas -v` output (entry functions only, device functions skipped)."""
    rows: dict[str, dict] = {}
    entry = props_for = None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            entry = props_for = m.group(1)
            rows[entry] = dict(registers=0, shared_bytes=0, spill_store_bytes=0, spill_load_bytes=0, stack_frame_bytes=0)
        elif m := re.search(r"Function properties for (\S+)", line):
            props_for = m.group(1)
        elif (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)) \
                and entry is not None and props_for == entry:
            rows[entry].update(stack_frame_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)),
                               spill_load_bytes=int(m.group(3)))
        elif (m := re.search(r"Used (\d+) registers", line)) and entry is not None:
            rows[entry]["registers"] = int(m.group(1))
            if s := re.search(r"(\d+) bytes smem", line):
                rows[entry]["shared_bytes"] = int(s.group(1))
            entry = None
    names = demangle(list(rows))
    return tuple(KernelResources(name=n, mangled=m, **rows[m]) for n, m in zip(names, rows))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _version_number(text: str) -> str:
    m = re.search(r"V(\d+\.\d+\.\d+)", text) or re.search(r"release (\d+\.\d+)", text)
    return m.group(1) if m else text.strip().splitlines()[-1]
