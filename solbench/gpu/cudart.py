"""The few CUDA runtime calls torch does not expose: the persisting-L2 carve-out, the runtime version,
and clearing a non-sticky error.

`load()` tries cuda-python (`cuda.bindings.runtime`, then the older `cuda.cudart`), then ctypes into the
libcudart this process already mapped (the one torch uses, so the same primary context), then the usual
sonames. It raises `RuntimeUnavailable` with the reason; callers record what was impossible.
"""

from __future__ import annotations

import ctypes

LIMIT_PERSISTING_L2_CACHE_SIZE = 6
"""cudaLimitPersistingL2CacheSize in the cudaLimit enum."""

_SONAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")


class RuntimeUnavailable(RuntimeError):
    """No CUDA runtime could be reached from Python in this process."""


class Runtime:
    """Thin wrapper: each method raises RuntimeError naming the CUDA error code on failure."""

    def __init__(self, source: str, call):
        self.source = source
        """Where the runtime came from: 'cuda.bindings', 'cuda.cudart' or a libcudart path."""
        self._call = call

    def set_persisting_l2_limit(self, nbytes: int) -> None:
        self._call("cudaDeviceSetLimit", LIMIT_PERSISTING_L2_CACHE_SIZE, int(nbytes))

    def persisting_l2_limit(self) -> int:
        return int(self._call("cudaDeviceGetLimit", LIMIT_PERSISTING_L2_CACHE_SIZE))

    def reset_persisting_l2(self) -> None:
        self._call("cudaCtxResetPersistingL2Cache")

    def runtime_version(self) -> int:
        """e.g. 12080 for CUDA 12.8."""
        return int(self._call("cudaRuntimeGetVersion"))

    def clear_last_error(self) -> int:
        """cudaGetLastError: returns and clears a pending non-sticky error, so torch's next launch check does
        not report an error from a call of ours (a refused limit, a failed graph capture)."""
        return int(self._call("cudaGetLastError", check=False))


def load() -> Runtime:
    reasons = []
    for modname in ("cuda.bindings.runtime", "cuda.cudart"):
        try:
            module = __import__(modname, fromlist=["_"])
        except ImportError as exc:
            reasons.append(f"{modname}: {exc}")
            continue
        return Runtime(modname.rsplit(".runtime", 1)[0], _python_caller(module))
    for path in _mapped_cudart() + list(_SONAMES):
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            reasons.append(f"{path}: {exc}")
            continue
        return Runtime(path, _ctypes_caller(lib))
    raise RuntimeUnavailable("no CUDA runtime reachable (" + "; ".join(reasons[-3:]) + ")")


def _python_caller(rt):
    """cuda-python returns (err, *values); err is an enum whose value 0 is success."""

    def call(name, *args, check=True):
        if name in ("cudaDeviceSetLimit", "cudaDeviceGetLimit"):
            args = (rt.cudaLimit(args[0]),) + args[1:]
        err, *values = getattr(rt, name)(*args)
        code = int(getattr(err, "value", err))
        if not check:
            return code
        if code != 0:
            raise RuntimeError(f"{name} failed: CUDA error {code} ({getattr(err, 'name', '?')})")
        return values[0] if values else None

    return call


def _ctypes_caller(lib):
    size_t = ctypes.c_size_t

    def call(name, *args, check=True):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        out = None
        if name == "cudaDeviceSetLimit":
            fn.argtypes = [ctypes.c_int, size_t]
        elif name == "cudaDeviceGetLimit":
            out = size_t(0)
            fn.argtypes = [ctypes.POINTER(size_t), ctypes.c_int]
            args = (ctypes.byref(out), args[0])
        elif name == "cudaRuntimeGetVersion":
            out = ctypes.c_int(0)
            fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
            args = (ctypes.byref(out),)
        else:
            fn.argtypes = []
        code = fn(*args)
        if not check:
            return code
        if code != 0:
            raise RuntimeError(f"{name} failed: CUDA error {code}")
        return out.value if out is not None else None

    return call


def _mapped_cudart() -> list[str]:
    """Paths of libcudart already mapped into this process (Linux), so we talk to torch's runtime."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart.so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))
