"""`solbench build KERNEL.cu --arch ARCH [--flag F]... [-I DIR]... [--allow-lib NAME]... [--json]`.

Compiles (or fetches from the cache), prints the library path, ptxas's per-kernel resources and the
forbidden-library verdict. Needs nvcc, not a GPU (except --arch auto). A library that does not export
the ABI entry point exits with LoadError's code (5), a forbidden library with BuildError's (4), after
saying which symbol; with --json the error is then the one object printed.
"""

from __future__ import annotations

import re

from solbench import schemas

HELP = "compile a kernel .cu with nvcc (cached), show per-kernel registers/smem/spills and the library check"
EXAMPLES = """\
solbench build reference_kernels/seed_attention.cu --arch h200
solbench build kernel.cu --arch b200 --flag=-DTILE=128 --json
"""


def add_arguments(parser) -> None:
    from solbench.build.binary_check import FORBIDDEN_LIBRARIES
    from solbench.core.archspec import known_arches

    parser.add_argument("kernel", metavar="KERNEL.cu", help="the candidate source (includes solbench_attention.h)")
    parser.add_argument("--arch", required=True, metavar="ARCH",
                        help=f"target GPU, as for run and roofline ({', '.join(known_arches())}: each spec file's "
                        "nvcc target), auto (the GPU present) or an nvcc target sm_XX[a]")
    parser.add_argument("--flag", action="append", default=[], metavar="F",
                        help="extra nvcc flag, repeatable (e.g. --flag=-DTILE=128 --flag=--use_fast_math)")
    parser.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                        help="extra include directory, repeatable (the ABI header's is always added)")
    parser.add_argument("--allow-lib", action="append", default=[], choices=FORBIDDEN_LIBRARIES, metavar="NAME",
                        help=f"permit a forbidden library, repeatable: {', '.join(FORBIDDEN_LIBRARIES)}")
    parser.add_argument("--json", action="store_true",
                        help=f"print one JSON object ({schemas.BUILD}): the build (path, flags, hashes, kernels) and the "
                        "library report")


def run(args) -> int:
    from solbench.build.binary_check import check_binary
    from solbench.build.exports import check_exports
    from solbench.build.nvcc import build

    result = build(args.kernel, args.arch, extra_flags=tuple(args.flag), include_dirs=tuple(args.include))
    if args.json:  # checked before printing: a failed check's error is then the one JSON object on stdout
        check_exports(result.so_path, source=args.kernel)
        report = check_binary(result.so_path, allow=tuple(args.allow_lib), source=args.kernel)
        d = result.to_dict()
        d.pop("log")
        d["libraries"] = {"ok": report.ok, "verdict": report.verdict(), "needed": list(report.needed),
                          "findings": [vars(f) for f in report.findings],
                          "allowed_findings": [vars(f) for f in report.allowed_findings],
                          "missing_tools": list(report.missing_tools)}
        print(schemas.dumps({"schema": schemas.BUILD, "ok": True, **d}))
        return 0
    how = "from cache" if result.cache_hit else "compiled"
    print(f"{result.so_path}")
    print(f"{result.sm} ({result.arch}), nvcc {result.nvcc_version}, {how}")
    print(resource_table(result.kernels))
    check_exports(result.so_path, source=args.kernel)
    report = check_binary(result.so_path, allow=tuple(args.allow_lib), source=args.kernel)
    print(f"libraries: {report.verdict()}")
    return 0


def resource_table(kernels) -> str:
    from tabulate import tabulate

    rows = [(short_name(k.name), k.registers, k.shared_bytes, k.spill_store_bytes, k.spill_load_bytes,
             k.stack_frame_bytes) for k in kernels]
    if not rows:
        return "(ptxas reported no kernels)"
    return tabulate(rows, headers=("kernel", "regs", "smem_B", "spill_st_B", "spill_ld_B", "stack_B"),
                    tablefmt="simple")


def short_name(name: str) -> str:
    """A demangled name without its parameter list and anonymous-namespace prefixes."""
    name = name.replace("(anonymous namespace)::", "")
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # cut the trailing '(...)' parameter list
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            return name[:i]
    return re.sub(r"\s+", " ", name)
