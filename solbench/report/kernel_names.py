"""Demangled C++ kernel names, short enough to read in a table: the kernel records of FA3, cuDNN or PyTorch
name templates hundreds of characters long (`void cutlass::device_kernel<flash::enable_sm90_or_later<
flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<...`). Pages show the short form
and keep the whole name in a title attribute; JSON and Markdown keep it whole.

`short_kernel_names(text)` shortens every name inside a line of text (the triage's evidence): a template
argument list keeps its first argument down to TEMPLATE_DEPTH levels (`device_kernel<flash::
enable_sm90_or_later<flash::FlashAttnFwdSm90<…>, …>>`), a parameter list becomes `(…)`, the `void ` before
a name and `(anonymous namespace)::` go, and a single word longer than LONGEST_WORD (CuTe DSL kernels
carry their whole signature in one) is cut. Text that is not a name (`(< 85 %)`, `kernel(s)`, `grid [1, 2,
32]`) is left as it is.
"""

from __future__ import annotations

import re

TEMPLATE_DEPTH = 3
"""Template levels whose first argument is kept; deeper argument lists become '…'."""
LONGEST_WORD = 60
"""Characters kept of one word (no template, no '::' joint) before '…'."""
ELLIPSIS = "…"
_NAME_CHAR = re.compile(r"[\w:>]")
_CLOSE = {"<": ">", "(": ")"}


def short_kernel_names(text: str) -> str:
    """`text` with each demangled name in it shortened (module docstring)."""
    text = re.sub(r"\bvoid (?=[\w:]+[<(])", "", text.replace("(anonymous namespace)::", ""))
    text = re.sub(rf"\w{{{LONGEST_WORD},}}", lambda m: m.group()[:LONGEST_WORD - 1] + ELLIPSIS, text)
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        opens_list = ch in _CLOSE and i > 0 and _NAME_CHAR.match(text[i - 1]) and text[i + 1:i + 2] not in ("", " ", "=")
        if not opens_list or (ch == "<" and text[i - 1] == ">"):
            out.append(ch)
            i += 1
            continue
        end = _matching(text, i)
        inner = text[i + 1:end]
        if ch == "(" and re.fullmatch(r"[a-z]{1,3}", inner):  # a plural: kernel(s)
            out.append(text[i:end + 1])
        elif ch == "(":
            out.append("()" if not inner else f"({ELLIPSIS})")
        else:
            out.append("<" + _first_argument(inner, 1) + ">")
        i = end + 1
    return "".join(out)


CUT_NAME_ENDS = ("'", '"', "\n", ";", " grid [")
"""What ends a name cut short (kernel records keep 200 characters) before its brackets close: a quote of a
listed name, the end of the line or clause, or the triage's ' grid [..]' after a kernel."""


def _matching(text: str, start: int) -> int:
    """Index of the bracket closing the one at `start`; for a name cut short, of its last character."""
    depth = 0
    for j in range(start, len(text)):
        c = text[j]
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
            if depth == 0:
                return j
        elif any(text.startswith(end, j) for end in CUT_NAME_ENDS):
            return j - 1
    return len(text) - 1


def _first_argument(inner: str, depth: int) -> str:
    """A template argument list cut to its first argument (itself cut the same way one level deeper)."""
    if depth >= TEMPLATE_DEPTH:
        return ELLIPSIS
    first, rest = _split_first(inner)
    head, bracket, tail = first.partition("<")
    if bracket:
        end = _matching("<" + tail, 0)
        first = f"{head}<{_first_argument(tail[:end - 1], depth + 1)}>{short_kernel_names(tail[end:])}"
    return first.strip() + (f", {ELLIPSIS}" if rest.strip() else "")


def _split_first(args: str) -> tuple[str, str]:
    """(first top-level argument, the rest) of a comma-separated template argument list."""
    depth = 0
    for j, c in enumerate(args):
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            return args[:j], args[j + 1:]
    return args, ""
