"""Check that a built candidate exports the C ABI's symbols, by reading its dynamic symbol table.

The library is never loaded here: `dlopen` runs its constructors, and candidate code runs only in the
candidate's worker. So `nm -D` reads the table, and a library without `solbench_attention_forward` (or
without `solbench_abi_version`, which the ABI header defines) fails `solbench build` and `solbench run`
as a LoadError naming the symbol, before any scenario. Without `nm` the check is skipped; the worker's
loader (solbench.sandbox.loader) then finds the same problem when it loads the library.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from solbench import abi
from solbench.core.errors import LoadError


def check_exports(so_path, source=None) -> set[str] | None:
    """Raise LoadError when the library lacks the entry point or the ABI version symbol; else the names it
    exports (None without `nm`), for the caller's other questions about them."""
    defined = exported_symbols(so_path)
    if defined is None:
        return None
    where = source or so_path
    if abi.ENTRY_POINT not in defined:
        cxx = [n for n in _demangled(defined) if n.startswith(abi.ENTRY_POINT + "(")]
        hint = (f" (it has C++ linkage as `{cxx[0]}`: declare it extern \"C\", as solbench_attention.h does)" if cxx
                else f"; define extern \"C\" int {abi.ENTRY_POINT}(const SolbenchAttentionParams*)")
        raise LoadError(f"{where}: the built library does not export the entry point `{abi.ENTRY_POINT}`{hint}")
    if abi.VERSION_SYMBOL not in defined:
        raise LoadError(f"{where}: the built library has no `{abi.VERSION_SYMBOL}` symbol; "
                        "#include \"solbench_attention.h\" in the kernel source (it defines the symbol) and rebuild")
    return defined


def exported_symbols(so_path) -> set[str] | None:
    """Names the library defines in its dynamic symbol table; None when `nm` is not installed."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    proc = subprocess.run([nm, "-D", "--defined-only", "-P", str(Path(so_path))], capture_output=True, text=True,
                          errors="replace")
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["nm failed"])[0]
        raise LoadError(f"{so_path}: cannot read its dynamic symbol table: {why}")
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}


def _demangled(names) -> list[str]:
    from solbench.build.binary_check import demangle

    mangled = sorted(n for n in names if n.startswith("_Z"))
    return demangle(mangled)
