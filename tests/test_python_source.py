"""The supervisor's check of a Python candidate: parsed with ast, never imported or run."""

import pytest

from solbench.core.errors import LoadError
from solbench.supervisor.python_source import check_python_candidate


def write(tmp_path, text: str, name: str = "cand.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_syntax_error_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "import torch\n\ndef forward(inputs:\n    pass\n")
    with pytest.raises(LoadError) as exc:
        check_python_candidate(path)
    assert str(exc.value).startswith(f"{path}:3:") and "syntax error" in str(exc.value)


def test_no_forward_says_what_to_define(tmp_path):
    path = write(tmp_path, "def forwards(inputs):\n    pass\n\nclass K:\n    def forward(self, inputs):\n        pass\n")
    with pytest.raises(LoadError, match=r"defines no top-level `forward`; add `def forward\(inputs\):`"):
        check_python_candidate(path)


@pytest.mark.parametrize("text", [
    "def forward(inputs):\n    pass\n",
    "async def forward(inputs):\n    pass\n",
    "forward = print\n",
    "forward: object = print\n",
    "impl, forward = print, print\n",
    "from os.path import join as forward\n",
    "from somewhere import *\n",
    "try:\n    import fast\n    forward = fast.forward\nexcept ImportError:\n    def forward(inputs):\n        pass\n",
    "if True:\n    def forward(inputs):\n        pass\n",
])
def test_every_module_level_binding_of_forward_counts(tmp_path, text):
    check_python_candidate(write(tmp_path, text))


def test_the_source_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    path = write(tmp_path, f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\ndef forward(inputs):\n    pass\n")
    check_python_candidate(path)
    assert not marker.exists()


def test_unreadable_and_non_source_files(tmp_path):
    with pytest.raises(LoadError, match="cannot read"):
        check_python_candidate(tmp_path / "missing.py")
    path = tmp_path / "nul.py"
    path.write_bytes(b"def forward(x):\n    pass\n\x00")
    with pytest.raises(LoadError, match="nul.py"):
        check_python_candidate(path)
