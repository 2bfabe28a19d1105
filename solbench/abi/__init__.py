"""The C ABI as Python sees it: the ctypes twin of `solbench_attention.h` and how Inputs fill it.

The header is canonical. `tests/test_abi.py` compiles a C program against it and checks that every
field's offset and size, and the struct's size, match `SolbenchAttentionParams` below; a change to
either side without the other fails CI.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

ABI_VERSION = 1
"""Must equal SOLBENCH_ABI_VERSION in the header (tested)."""

HEADER_PATH = Path(__file__).with_name("solbench_attention.h")
INCLUDE_DIR = HEADER_PATH.parent

ENTRY_POINT = "solbench_attention_forward"
WORKSPACE_QUERY = "solbench_attention_workspace_size"
VERSION_SYMBOL = "solbench_abi_version"
NONDETERMINISTIC_SYMBOL = "solbench_nondeterministic"
"""Optional export: two calls on the same inputs may differ in their bits (the header says how)."""

DTYPE_CODES = {"bf16": 0, "fp16": 1, "fp8_e4m3": 2}
DESCALE_CODES = {"none": 0, "per_tensor": 1, "per_head": 2}
ERROR_NAMES = {
    0: "SOLBENCH_OK",
    1: "SOLBENCH_ERR_INVALID_ARGUMENT",
    2: "SOLBENCH_ERR_UNSUPPORTED",
    3: "SOLBENCH_ERR_CUDA",
    4: "SOLBENCH_ERR_WORKSPACE",
}
ERR_UNSUPPORTED = 2


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"unknown error code {code}")


_i32, _u64, _f32, _ptr = ctypes.c_int32, ctypes.c_uint64, ctypes.c_float, ctypes.c_void_p


class SolbenchAttentionParams(ctypes.Structure):
    """One attention-forward call; field for field the C struct (see the header for meanings)."""

    _fields_ = [
        ("abi_version", _i32),
        ("struct_bytes", _i32),
        ("q", _ptr),
        ("k", _ptr),
        ("v", _ptr),
        ("out", _ptr),
        ("lse", _ptr),
        ("cu_seqlens_q", _ptr),
        ("cu_seqlens_kv", _ptr),
        ("kv_lens", _ptr),
        ("page_table", _ptr),
        ("sinks", _ptr),
        ("mask_bits", _ptr),
        ("q_descale", _ptr),
        ("k_descale", _ptr),
        ("v_descale", _ptr),
        ("workspace", _ptr),
        ("workspace_bytes", _u64),
        ("stream", _ptr),
        ("batch", _i32),
        ("total_q", _i32),
        ("total_kv", _i32),
        ("max_q_len", _i32),
        ("max_kv_len", _i32),
        ("heads_q", _i32),
        ("heads_kv", _i32),
        ("head_dim_qk", _i32),
        ("head_dim_v", _i32),
        ("page_size", _i32),
        ("num_pages", _i32),
        ("page_table_stride", _i32),
        ("mask_row_words", _i32),
        ("dtype", _i32),
        ("descale_mode", _i32),
        ("causal", _i32),
        ("window_left", _i32),
        ("window_right", _i32),
        ("softmax_scale", _f32),
        ("softcap", _f32),
    ]


PARAMS_BYTES = 224
"""sizeof(SolbenchAttentionParams) on LP64 (SOLBENCH_PARAMS_BYTES in the header)."""


def _ptr_of(t) -> int | None:
    """A tensor's data pointer, or None (NULL) for an absent tensor."""
    return None if t is None else t.data_ptr()


def params_from_inputs(inputs, stream: int = 0, workspace: int = 0, workspace_bytes: int = 0) -> SolbenchAttentionParams:
    """Fill the struct from an `solbench.core.tensors.Inputs`: pointers into its own tensors, no copies.

    `stream` is a cudaStream_t as an integer (0 = legacy default stream); `workspace` a device
    pointer of `workspace_bytes` bytes. The tensors must stay alive while the struct is used.
    """
    sc = inputs.scenario
    paged = sc.kv_layout == "paged"
    p = SolbenchAttentionParams()
    p.abi_version = ABI_VERSION
    p.struct_bytes = ctypes.sizeof(SolbenchAttentionParams)
    for name in ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens", "page_table",
                 "sinks", "mask_bits", "q_descale", "k_descale", "v_descale"):
        setattr(p, name, _ptr_of(getattr(inputs, name)))
    p.workspace = workspace or None
    p.workspace_bytes = workspace_bytes
    p.stream = stream or None
    p.batch = sc.batch
    p.total_q = sc.total_q
    p.total_kv = 0 if paged else sc.total_kv
    p.max_q_len = max(sc.q_lens)
    p.max_kv_len = max(sc.kv_lens)
    p.heads_q, p.heads_kv = sc.heads_q, sc.heads_kv
    p.head_dim_qk, p.head_dim_v = sc.head_dim_qk, sc.head_dim_v
    p.page_size = sc.page_size if paged else 0
    p.num_pages = int(inputs.k.shape[0]) if paged else 0
    p.page_table_stride = int(inputs.page_table.stride(0)) if paged else 0
    p.mask_row_words = int(inputs.mask_bits.shape[-1]) if inputs.mask_bits is not None else 0
    p.dtype = DTYPE_CODES[sc.dtype]
    p.descale_mode = DESCALE_CODES[sc.descale]
    p.causal = int(sc.causal)
    p.window_left, p.window_right = sc.window_left, sc.window_right
    p.softmax_scale = sc.scale
    p.softcap = sc.softcap
    return p
