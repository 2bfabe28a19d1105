"""`solbench calibrate [--arch auto] [--out PATH]`: measure this GPU's ceilings into a profile TOML."""

from __future__ import annotations

HELP = "measure this GPU's matmul TFLOP/s, copy bandwidth and launch latency into roofline/measured/<arch>.toml"
EXAMPLES = """\
solbench calibrate                                  # on the GPU: roofline/measured/<arch>.toml
solbench calibrate --arch h200 --out /tmp/h200.toml --samples 100
"""


def add_arguments(parser) -> None:
    parser.add_argument("--arch", default="auto",
                        help="arch to file the profile under (h100, h200, b200, rtx3080); default: detected from the GPU")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="where to write the profile TOML (default: roofline/measured/<arch>.toml, "
                             "or $SOLBENCH_ROOFLINE_DIR/measured/<arch>.toml)")
    parser.add_argument("--samples", type=int, default=50, help="timed calls per measurement (median is kept)")


def run(args) -> int:
    from solbench.gpu.calibrate import calibrate, write_profile

    profile = calibrate(args.arch, samples=args.samples)
    path = write_profile(profile, args.out)
    print(f"wrote {path}")
    return 0
