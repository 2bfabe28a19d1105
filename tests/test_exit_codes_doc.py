"""One table of exit codes (solbench.core.errors.EXIT_CODES): each typed error takes its code from it,
`solbench --help` prints it, and the README and docs/agents.md carry it word for word; every exit code the
docs mention elsewhere is one of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from solbench.core.errors import EXIT_CODES, NoGpuLeftError, SolbenchError
from solbench.front import cli

ROOT = Path(__file__).resolve().parents[1]
CARRIERS = (ROOT / "README.md", ROOT / "docs" / "agents.md")
"""The pages that carry the whole table."""
TABLE = re.compile(r"<!-- exit-codes:begin -->\n(.*?)<!-- exit-codes:end -->", re.S)


def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def test_one_code_one_name_one_meaning():
    codes = [e.code for e in EXIT_CODES]
    assert len(set(codes)) == len(codes) and codes == sorted(codes)
    assert len({e.name for e in EXIT_CODES}) == len(EXIT_CODES)
    assert all(e.meaning and "\n" not in e.meaning for e in EXIT_CODES)


def test_every_typed_error_has_a_code_of_the_table_and_every_error_code_a_class():
    table = {e.code for e in EXIT_CODES}
    raised = {cls.exit_code for cls in subclasses(SolbenchError)}
    assert raised <= table
    assert table - raised == {0, 1, 130}  # outcomes and Ctrl-C, not errors


def test_help_prints_the_table(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert out.rstrip().endswith("exit codes:\n" + cli.exit_codes_text())
    for e in EXIT_CODES:
        assert len(re.findall(rf"^ *{e.code}  {e.name} ", out, re.M)) == 1


@pytest.mark.parametrize("page", CARRIERS, ids=lambda p: p.name)
def test_the_pages_carry_the_table_word_for_word(page):
    blocks = TABLE.findall(page.read_text())
    assert len(blocks) == 1, f"{page.name}: expected one exit-code table between exit-codes markers"
    assert blocks[0] == cli.exit_codes_markdown(), (
        f"{page.name}: the exit-code table is stale; paste the output of "
        "python -c 'from solbench.front.cli import exit_codes_markdown as m; print(m(), end=\"\")'")


def test_every_exit_code_the_docs_mention_is_in_the_table():
    codes = {e.code for e in EXIT_CODES}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    mentioned = {(p.name, int(n)) for p in pages
                 for n in re.findall(r"\bexit(?:s| code| codes)? (\d+)\b", TABLE.sub("", p.read_text()))}
    assert mentioned, "the pattern found no mention at all: it is broken"
    assert [(page, n) for page, n in sorted(mentioned) if n not in codes] == []


def test_a_run_no_gpu_can_take_exits_9(monkeypatch, capsys):
    import solbench.commands.run as run_command

    def no_gpu(args):
        raise NoGpuLeftError("no agent started on GPU(s) 0, 1")

    monkeypatch.setattr(run_command, "run", no_gpu)
    assert cli.main(["run", "kernel.cu"]) == 9
    assert capsys.readouterr().err == "solbench run: error: no agent started on GPU(s) 0, 1\n"


def _dies_at_start(conn, ctx, label):
    """An agent whose GPU is gone: it exits before saying it started."""
    raise SystemExit(1)


def test_no_agent_starting_is_no_gpu_left(tmp_path):
    from solbench.core.policy import QUICK
    from solbench.executor.local import LocalExecutor
    from solbench.executor.units import UnitContext
    from solbench.sandbox.impls import ImplSpec

    good = str(ROOT / "reference_kernels" / "torch_attention.py")
    specs = {"candidate": ImplSpec("candidate", "python", good, "torch_attention.py")}
    ctx = UnitContext(specs, "cpu", QUICK, 5.0, "cpu", "run", str(tmp_path))
    executor = LocalExecutor(ctx, b"s" * 16, ["0", "1"], target=_dies_at_start)
    try:
        with pytest.raises(NoGpuLeftError, match="no agent started on GPU"):
            executor.start()
    finally:
        executor.close()
