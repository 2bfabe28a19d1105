"""Cheat: ends the run before a scenario it would fail. It ignores the softcap (wrong there); on a softcap
scenario it writes, during its call, one frame of 100,000 '[' on its own reply socket. Decoding that raised
RecursionError out of the supervisor, which ended the run with that scenario never judged.

What stops it: a reply is decoded in one place (solbench/sandbox/replies.py decode_json) that turns whatever
the decoder raises, and nesting past MAX_REPLY_DEPTH, into a malformed reply: the scenario fails and the run
goes on; and any exception the supervisor meets while evaluating a scenario costs that scenario only
(tests/test_trust_cpu.py).

expect: passed or tampered
"""

import os
import struct
import sys
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_FD = int(sys.argv[2])  # solbench.sandbox.boot: argv = [-c, BOOT, sys.path json, socket fd, supervisor pid]


def forward(inp):
    if inp.scenario.softcap:
        frame = b"[" * 100_000
        os.write(_FD, struct.pack("!i", len(frame)) + frame)
        return
    _honest(inp)
