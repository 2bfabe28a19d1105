"""Numerics shortcut at the edge of what inputs can show: skips_blocks.py with the threshold
raised until it passes, e^-12 below the row's max for bf16/fp16 and e^-10 for fp8 (on a GPU a skipped block
still needs its Q K^T for its max, but no exp and no P V). On rows where so little mass lies that far below the
max, the result is exact to rounding, and no verdict can tell it from an honest kernel's: an earlier
`high_logits` (scores of std 11) made half of a long row's blocks that negligible (44-47 % skipped, passed).
The profile now offsets each row over a bulk of std 4, where this skips under 0.1 % of the blocks
(tests/test_numerics_cheats.py). On `peaked` rows of 64k keys it still passes skipping 3-14 % of the blocks (fp8
at e^-10: up to 18 %), and on softcapped `high_logits` rows (std 11, so that the top keys reach the cap) up to
~21 %: the README's known limit.

expect: passed or mismatch
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_dense = PythonImpl(str(Path(__file__).with_name("_dense.py"))).module
BLOCK = 128
THRESHOLD = {"bf16": 12.0, "fp16": 12.0, "fp8_e4m3": 10.0}
skipped = [0, 0]
"""Blocks skipped, and blocks seen (a test reads them)."""


def forward(inp):
    threshold = THRESHOLD[inp.scenario.dtype]

    def softmax(s):
        m = _dense.row_max(s)
        keys = s.shape[-1]
        padded = torch.nn.functional.pad(s, (0, -keys % BLOCK), value=float("-inf"))
        block_max = padded.unflatten(-1, (-1, BLOCK)).amax(dim=-1)
        live = block_max > float("-inf")
        skip = live & (block_max < m - threshold)
        skipped[0] += int(skip.sum())
        skipped[1] += int(live.sum())
        return torch.exp(s.masked_fill(skip.repeat_interleave(BLOCK, dim=-1)[..., :keys], float("-inf")) - m), m

    _dense.attention(inp, softmax)
