"""solbench: a speed-of-light evaluation harness for GPU attention-forward kernels."""

__version__ = "0.1.0"
