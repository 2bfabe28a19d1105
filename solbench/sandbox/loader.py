"""Load a built candidate (.so) through the C ABI and bind it to one set of Inputs.

`load` checks, before anything runs, that the library was compiled against this harness's ABI
version and exports the entry point; each failure is one LoadError line naming what and where.
`CuKernel.bind` does all per-input set-up (the parameter struct, the workspace) once, outside any
timed region, and returns a zero-argument callable whose only work is the foreign call.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from solbench import abi
from solbench.core.errors import LoadError


class KernelCallError(RuntimeError):
    """The entry point returned a non-zero SOLBENCH_ERR_* code."""

    def __init__(self, code: int, so_path: str):
        self.code = code
        self.code_name = abi.error_name(code)
        super().__init__(f"{abi.ENTRY_POINT} in {so_path} returned {code} ({self.code_name})")

    @property
    def unsupported(self) -> bool:
        """The kernel declined a valid scenario (SOLBENCH_ERR_UNSUPPORTED), rather than failing."""
        return self.code == abi.ERR_UNSUPPORTED


@dataclass(frozen=True)
class CuKernel:
    """A loaded candidate library. Build one with `load`."""

    so_path: str
    """Absolute path of the shared library."""
    abi_version: int
    """The library's solbench_abi_version (equal to abi.ABI_VERSION once loaded)."""
    has_workspace_query: bool
    """Whether it exports solbench_attention_workspace_size."""
    writes_lse: bool = True
    """Every C-ABI candidate must write lse when the pointer is non-NULL (it always is here)."""
    _lib: ctypes.CDLL = field(default=None, repr=False, compare=False)

    def workspace_bytes(self, params: abi.SolbenchAttentionParams) -> int:
        """Bytes of workspace the library asks for (0 when it exports no size query)."""
        if not self.has_workspace_query:
            return 0
        return int(getattr(self._lib, abi.WORKSPACE_QUERY)(ctypes.byref(params)))

    def bind(self, inputs, stream: int | None = None) -> Callable[[], None]:
        """A callable that runs one forward on `inputs`, writing `inputs.out` and `inputs.lse`.

        The struct and the workspace (a torch uint8 tensor on the inputs' device) are made here,
        once. `stream` is a cudaStream_t as an integer; None means the current torch CUDA stream at
        each call (0, the legacy default stream, for CPU tensors: the CPU-emulation tests).
        The callable raises KernelCallError (a RuntimeError) when the library returns non-zero.
        """
        import torch

        on_cuda = inputs.out.is_cuda
        params = abi.params_from_inputs(inputs, stream=stream or 0)
        nbytes = self.workspace_bytes(params)
        workspace = None
        if nbytes:
            workspace = torch.empty(nbytes, dtype=torch.uint8, device=inputs.out.device)
            params.workspace, params.workspace_bytes = workspace.data_ptr(), nbytes
        forward = getattr(self._lib, abi.ENTRY_POINT)  # attribute access: the typed, cached pointer
        params_ref = ctypes.byref(params)
        so_path = self.so_path
        follow_torch_stream = stream is None and on_cuda
        current_stream = torch.cuda.current_stream if follow_torch_stream else None

        def call() -> None:
            if follow_torch_stream:
                params.stream = current_stream().cuda_stream or None
            code = forward(params_ref)
            if code:
                raise KernelCallError(code, so_path)

        # Keep what the struct points into alive as long as the callable lives.
        call.params, call.workspace, call.inputs = params, workspace, inputs
        return call


def load(so_path) -> CuKernel:
    """Open a candidate library and check its ABI version and entry point (LoadError otherwise)."""
    path = Path(so_path).resolve()
    if not path.is_file():
        raise LoadError(f"{so_path}: no such shared library")
    try:
        lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise LoadError(f"{path}: cannot be loaded: {exc}") from None
    try:
        version = ctypes.c_int32.in_dll(lib, abi.VERSION_SYMBOL).value
    except ValueError:
        raise LoadError(
            f"{path}: no `{abi.VERSION_SYMBOL}` symbol; #include \"solbench_attention.h\" in the kernel source "
            f"(it defines the symbol) and rebuild"
        ) from None
    if version != abi.ABI_VERSION:
        raise LoadError(
            f"{path}: built against solbench ABI version {version}, this solbench speaks version "
            f"{abi.ABI_VERSION}; rebuild it against {abi.HEADER_PATH} (solbench build ...)"
        )
    try:
        forward = getattr(lib, abi.ENTRY_POINT)
    except AttributeError:
        raise LoadError(
            f"{path}: missing entry point `{abi.ENTRY_POINT}`; define "
            f"extern \"C\" int {abi.ENTRY_POINT}(const SolbenchAttentionParams*)"
        ) from None
    forward.restype = ctypes.c_int
    forward.argtypes = [ctypes.POINTER(abi.SolbenchAttentionParams)]
    has_query = hasattr(lib, abi.WORKSPACE_QUERY)
    if has_query:
        query = getattr(lib, abi.WORKSPACE_QUERY)
        query.restype = ctypes.c_size_t
        query.argtypes = [ctypes.POINTER(abi.SolbenchAttentionParams)]
    return CuKernel(so_path=str(path), abi_version=version, has_workspace_query=has_query, _lib=lib)
