"""`--help` teaches: every command shows examples that parse, options show their defaults, the exit codes
are listed once (top level) and match the typed errors, and the arch defaults say what the code does."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from solbench.core.errors import SolbenchError
from solbench.front import cli

COMMANDS = dict(cli._available_commands())
ROOT = Path(__file__).resolve().parents[1]


def help_text(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def examples(text: str) -> list[list[str]]:
    """The argv of every `solbench ...` example line, its trailing comment cut."""
    return [shlex.split(line.split("#")[0])[1:] for line in text.splitlines() if line.strip().startswith("solbench ")]


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_shows_examples_that_parse(capsys, name):
    out = help_text(capsys, name)
    shown = out[out.index("examples:"):]
    assert examples(COMMANDS[name].EXAMPLES) == examples(shown) and len(examples(shown)) >= 2
    parser = cli.build_parser()
    for argv in examples(shown):
        args = parser.parse_args(argv)  # an unknown flag or a bad choice exits 2 here
        assert args.command == name


def test_top_level_examples_parse(capsys):
    out = help_text(capsys)
    found = examples(out[out.index("examples:"):out.index("exit codes:")])
    assert len(found) >= 3
    for argv in found:
        assert cli.build_parser().parse_args(argv).command in COMMANDS


def test_defaults_are_shown_once_and_never_as_none(capsys):
    out = " ".join(help_text(capsys, "run").split())
    assert "per-scenario timeout in seconds (default: 120.0)" in out and "(default: smoke)" in out
    assert "(default: None)" not in out and "(default: False)" not in out
    assert "(default: every available one except flex" in out
    assert "'none' for none) (default" not in out  # a help that states its default is not given a second one
    lb = " ".join(help_text(capsys, "leaderboard", "add").split())
    assert "(default: candidate)" not in lb and "(default: )" not in lb  # says it in words; '' is no default


def test_exit_codes_are_listed_once_and_match_the_typed_errors(capsys):
    top = help_text(capsys)
    codes = top[top.index("exit codes:"):]
    listed = {int(line.split()[0]) for line in codes.splitlines()[1:] if line.strip()[:1].isdigit()}

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    assert {c.exit_code for c in subclasses(SolbenchError)} | {0, 1, 2, 130} == listed
    assert "a candidate that does not compile" in codes and "a usage error" in codes
    for name in COMMANDS:
        out = help_text(capsys, name)
        assert "exit codes: see solbench --help" in out and "  130  " not in out


def test_roofline_and_baselines_say_their_real_arch_default(capsys, monkeypatch):
    import solbench.commands.baselines as baselines
    from solbench.core.suites import load_suite

    roofline = " ".join(help_text(capsys, "roofline").split())
    assert "required" in roofline and "the GPU present" not in roofline
    assert cli.main(["roofline", "--suite", "smoke"]) == 2  # and it is: no default arch
    assert "roofline needs --arch" in capsys.readouterr().err

    text = " ".join(help_text(capsys, "baselines").split())
    assert "default: the GPU present, else the suite's own arch, else h200" in text
    args = cli.build_parser().parse_args(["baselines"])
    assert baselines._arch(args, load_suite("hopper"), None)[0] == load_suite("hopper").arch
    assert baselines._arch(args, load_suite("smoke"), None)[0] == (load_suite("smoke").arch or baselines.DEFAULT_ARCH)
    assert baselines._arch(args, load_suite("hopper"), "h100")[0] == "h100"



def _checkout_paths_the_wheel_carries() -> list[str]:
    """The package-data globs of pyproject.toml under solbench/data/, as paths of a checkout (each folder
    there links to the top-level one of the same name)."""
    import re

    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index("[tool.setuptools.package-data]"):]
    return [p[len("data/"):] for p in re.findall(r'"(data/[^"]+)"', block)]


def test_every_file_an_example_names_ships_with_solbench(capsys):
    """An example pointed at reports/reference/..., which the wheel does not carry: every path an example
    names that is a file of the checkout is one the wheel ships (and --help says where to find it)."""
    import fnmatch

    shipped = _checkout_paths_the_wheel_carries()
    texts = [help_text(capsys)] + [module.EXAMPLES for module in COMMANDS.values()]
    named = {arg for text in texts for argv in examples(text) for arg in argv if (ROOT / arg).is_file()}
    assert {"reference_kernels/torch_attention.py", "baselines/h200/hopper.json"} <= named
    assert [p for p in sorted(named) if not any(fnmatch.fnmatch(p, glob) for glob in shipped)] == []
    assert "solbench info --paths" in " ".join(help_text(capsys).split())
