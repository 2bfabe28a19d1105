"""`solbench calibrate [--arch auto] [--out PATH] [--write ...]`: measure this GPU's ceilings into a profile TOML."""

from __future__ import annotations

HELP = "measure this GPU's matmul TFLOP/s, copy bandwidth and launch latency into roofline/measured/<arch>.toml"
EXAMPLES = """\
solbench calibrate                                  # on the GPU: roofline/measured/<arch>.toml
solbench calibrate --arch h200 --out /tmp/h200.toml --samples 100
solbench calibrate --write --arch a100_sxm --datasheet bf16=312,fp16=312,memory_tbps=2.039,boost_clock_mhz=1410 --source https://www.nvidia.com/en-us/data-center/a100/
"""


def add_arguments(parser) -> None:
    parser.add_argument("--arch", default="auto",
                        help="arch to file the profile under (a roofline/<arch>.toml name); default: detected from "
                             "the GPU's exact name and memory size")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="where to write the profile TOML (default: roofline/measured/<arch>.toml, "
                             "or $SOLBENCH_ROOFLINE_DIR/measured/<arch>.toml)")
    parser.add_argument("--samples", type=int, default=50, help="timed calls per measurement (median is kept)")
    parser.add_argument("--write", action="store_true",
                        help="for a GPU without a spec file: first write roofline/<--arch>.toml from the driver's "
                             "properties and --datasheet (with --source), then calibrate it")
    parser.add_argument("--datasheet", metavar="KEY=NUMBER,...",
                        help="with --write: the datasheet's dense bf16, fp16 (and fp8) TFLOP/s, memory_tbps and "
                             "boost_clock_mhz")
    parser.add_argument("--source", help="with --write: where the datasheet numbers come from (a URL)")


def run(args) -> int:
    from solbench.core.errors import ConfigError
    from solbench.gpu.calibrate import calibrate, write_profile

    if args.write:
        if args.arch in (None, "", "auto"):
            raise ConfigError("--write needs --arch NAME: the name the new spec file gets (e.g. a100_sxm)")
        print(f"wrote {_write_spec(args)}")
    profile = calibrate(args.arch, samples=args.samples)
    path = write_profile(profile, args.out)
    print(f"wrote {path}")
    return 0


def _write_spec(args):
    from solbench.core.archdetect import detect_arch
    from solbench.core.errors import ConfigError
    from solbench.gpu.calibrate import _torch_cuda
    from solbench.gpu.specwrite import parse_datasheet, spec_text, write_spec

    datasheet = parse_datasheet(args.datasheet)
    torch = _torch_cuda()
    name, props = torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0)
    known = detect_arch(name, props.total_memory)
    if known is not None:
        raise ConfigError(f"GPU {name!r} already has a spec file ({known}); run `solbench calibrate` without --write")
    return write_spec(args.arch.lower(), spec_text(args.arch.lower(), name, props, datasheet, args.source))
