"""No false positive: the same low-bit flips as flips_low_bits.py, from a candidate that declares it is
non-deterministic (as a kernel with atomics in a split-KV reduction would): each call's output passes
the reference on its own, so it passes.

expect: passed
"""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

NONDETERMINISTIC = True

forward = PythonImpl(str(Path(__file__).with_name("flips_low_bits.py"))).module.forward
