"""The README and the docs site say what is true: the site builds with `mkdocs build --strict` (no broken
link or anchor, no page left out of the nav), the README's links land, every test a page names exists, the
examples run, and the product speaks of itself, not of how it was made."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
RECORDED = ROOT / "reports" / "reference" / "h200-seed" / "smoke.json"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs is not installed (pip install -e '.[docs]'; the test extra includes it)")
def test_the_site_builds_strict(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "threat-model" / "index.html").exists()


def test_the_readme_links_land():
    targets = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", README.read_text())
    assert targets and [t for t in targets if not (ROOT / t).exists()] == []


def test_the_readme_fits_a_first_visit():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "dates belong in docs/ beside their measurements"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_product_speaks_of_itself(page):
    found = re.findall(r"(?i)\breview [a-z0-9]+\b|\bsession[- ][a-z0-9]", page.read_text())
    assert found == [], f"{page.name}: {found}"


def test_every_test_a_page_names_exists():
    defined = {m for path in (ROOT / "tests").glob("test_*.py")
               for m in re.findall(r"^\s*def (test_\w+)\(", path.read_text(), re.M)}
    named = {(p.name, t) for p in PAGES for t in re.findall(r"`(test_\w+)`", p.read_text())}
    assert named and sorted((page, t) for page, t in named if t not in defined) == []


def test_the_suite_example_loads(tmp_path):
    from solbench.core.suites import load_suite

    example = re.search(r"```toml\n(.*?)```", (DOCS / "suites.md").read_text(), re.S).group(1)
    (tmp_path / "mine.toml").write_text(example)
    suite = load_suite(str(tmp_path / "mine.toml"))
    assert len(suite.scenarios) == 4 and {s.causal for s in suite.scenarios} == {True, False}


def test_the_policy_table_gives_every_field_and_its_default():
    from solbench.core.policy import TimingPolicy

    text = (DOCS / "timing.md").read_text()
    missing = [f.name for f in fields(TimingPolicy) if f"| `{f.name}` | {f.default} |" not in text]
    assert missing == []


@pytest.fixture
def hook(tmp_path):
    """The Stop hook of docs/agents.md, with `solbench run` answered by a recorded run's summary."""
    code = re.search(r"```python\n(\"\"\"Stop hook.*?)```", (DOCS / "agents.md").read_text(), re.S).group(1)
    (tmp_path / "solbench_stop.py").write_text(code)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "solbench"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = run ]; then set -- report "{RECORDED}" --format json; fi\n'
                    f'exec "{sys.executable}" -m solbench "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

    def stop():
        return subprocess.run([sys.executable, "solbench_stop.py"], input="{}", capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=300)
    return stop


def test_the_stop_hook_lets_a_passing_kernel_stop(hook, tmp_path):
    (tmp_path / "base").mkdir()
    shutil.copy(RECORDED, tmp_path / "base" / "results.json")
    proc = hook()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / ".solbench-stop-tries").exists()


def test_the_stop_hook_blocks_and_says_why(hook, tmp_path):
    proc = hook()  # no base/results.json: the check cannot be made
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "not done" in proc.stderr and "base/results.json" in proc.stderr
    assert json.loads((tmp_path / ".solbench-stop-tries").read_text()) == 1
