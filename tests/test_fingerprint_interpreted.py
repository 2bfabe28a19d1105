"""The fused fingerprint's arithmetic under Triton's interpreter on a CPU (where Triton is installed): the same
values as the torch form for odd sizes, large offsets and keys. On a GPU, tests/test_fingerprint_gpu.py checks
the compiled kernel, and the audit itself uses it only after it agreed on a random sample."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

SCRIPT = """
import torch
from solbench.supervisor import fingerprint as f
gen = torch.Generator().manual_seed(3)
bad = 0
for n in [1, 4095, 4097, 3 * 4096 + 5, 5 * 4096]:
    w = torch.randint(-2**31, 2**31, (n,), dtype=torch.int32, generator=gen)
    for o, key in [(0, 0), (1, 1), (3 * 2**31 + 5, 2**62 - 1), (123456789, 0x2545F4914F6CDD1D)]:
        bad += int(f._fused(w, o, key)) != int(f._chunked(w, o, key))
print(bad)
"""


def test_the_fused_pass_computes_the_torch_forms_value_when_interpreted():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "0", proc.stdout
