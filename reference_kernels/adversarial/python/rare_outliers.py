"""False positive (not a cheat): the verdict allows isolated rounding outliers
(Tolerance.max_outside_frac = 1e-4 of the elements, verdict.py 26), and the checked call is judged on the
whole output, where they fit. The timed calls are judged on 4 sampled query rows (audit.py 21, 115-118)
with the same fraction: 4 rows x heads x d is 2048 elements in smoke (16384 at 32 heads), so a single
outlier in a sampled row is 0.05 % > 0.01 % and the scenario is `mismatch` "while timing". This forward is
the reference plus a fixed, deterministic set of outliers at 3x the element tolerance (below the 5x hard
limit), 0.9e-4 of the elements, one per row in distinct rows: it passes the checked call (twice, bit for
bit) and then fails as soon as the supervisor happens to draw one of those rows, so the verdict of a
kernel whose outliers the rule accepts is a coin toss that the longer policies (more rounds) lose.

expect: see tests/test_adversarial_python_cpu.py (must be passed: the same output passes the full check)
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

TOL = {torch.bfloat16: (1e-2, 2e-2), torch.float16: (5e-3, 1e-2)}  # verdict.py TOLERANCES (atol, rtol)


def forward(inp):
    _honest_forward(inp)
    out = inp.out
    rows, heads, d = out.shape
    count = min(rows, int(0.9e-4 * out.numel()))
    if count == 0 or out.dtype not in TOL:
        return
    atol, rtol = TOL[out.dtype]
    for i in range(count):  # fixed positions: row spread over the tokens, head and dim from the row
        r = (i * rows) // count
        h, c = r % heads, (7 * r) % d
        value = float(out[r, h, c])
        out[r, h, c] = value + 3.0 * (atol + rtol * abs(value))
