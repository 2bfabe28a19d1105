"""Correct (the torch reference's forward), but replaces the kernel records its worker sends with each round:
records that are not dicts crashed every report of the run (`solbench triage`, the summary, the
HTML page); well-formed ones could name another library's kernel family and turn the triage's `routing`
into `kernel`. Replacing solbench.sandbox.kernel_records.record_kernels is now seen by the integrity check,
and the supervisor keeps only records of the shape the triage reads (solbench.core.kernels).

expect: tampered
"""
import importlib.util
import os
from pathlib import Path

import solbench.sandbox.kernel_records as _records

_spec = importlib.util.spec_from_file_location("_ref", Path(__file__).resolve().parents[2] / "torch_attention.py")
_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref)

if os.environ.get("LIE") == "1":
    _records.record_kernels = lambda call: ([{"name": "flash_fwd_splitkv_kernel", "grid": [132, 8, 1],
                                              "block": [128, 1, 1], "duration_ms": 0.001, "stream": 7}], "")
else:
    _records.record_kernels = lambda call: ([1, "x", None], "")

forward = _ref.forward
