"""Suites: named lists of scenarios read from `scenarios/<name>.toml` by one loader.

A suite file holds axes and products (every combination of the named axes is one scenario) and
single `[[scenario]]` entries. Each axis entry is a partial set of Scenario fields; a product merges
one entry per axis, and an entry may not set a field another axis already set. Lengths are lists
whose items are numbers or generators:
    { repeat = 4096, n = 2 }      -> 4096, 4096
    { geom = [128, 4096], n = 6 } -> 6 lengths spaced geometrically from 128 to 4096 (rounded)
`context_lens` (same syntax) makes kv_lens = q_lens + context_lens; omitted kv_lens = q_lens.
`include = ["_file.toml"]` merges the axes of shared files (paths relative to the suite file).
`[[lint_exception]]` entries (scenarios = an id glob, checks = [...], reason = "...") excuse the flags of
`solbench lint` a suite keeps on purpose, each with its written reason.
Errors name the file and the line of the offending entry.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from solbench.core.errors import ConfigError, ScenarioError
from solbench.core.paths import SUITES_DIR
from solbench.core.scenario import Scenario

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

LENGTH_FIELDS = ("q_lens", "kv_lens", "context_lens")
SUITE_KEYS = {"name", "description", "arch", "include", "axis", "product", "scenario", "lint_exception"}
LINT_CHECKS = ("window", "sinks", "softcap", "fp16", "constant", "working_set", "sol_time")
"""What `solbench lint` flags (solbench.supervisor.lint): a feature that does not bite (fp16: fp16 accumulation
would pass), near-constant outputs, a working set under 2x L2, a roofline time under 20 us."""


@dataclass(frozen=True)
class LintException:
    """Flags of `solbench lint` a suite keeps on purpose, with the reason written in the suite file."""

    scenarios: str
    """Glob over scenario ids (fnmatch), e.g. 'splitkvdecode-*-wl*'; must match at least one scenario."""
    checks: tuple[str, ...]
    """Which checks of LINT_CHECKS it excuses."""
    reason: str
    """Why the flag is expected and the scenario kept."""

    def covers(self, scenario_id: str, check: str) -> bool:
        return check in self.checks and fnmatch.fnmatchcase(scenario_id, self.scenarios)


@dataclass(frozen=True)
class Suite:
    """A named, ordered list of scenarios and where it came from."""

    name: str
    """Suite name (the file's `name`)."""
    scenarios: tuple[Scenario, ...]
    """In file order; ids are unique."""
    description: str = ""
    """What the suite is for, from the file."""
    arch: str = ""
    """Arch the suite is sized for ('' = any)."""
    path: str = ""
    """File it was read from."""
    lint_exceptions: tuple[LintException, ...] = ()
    """The file's [[lint_exception]] entries."""

    @property
    def hash(self) -> str:
        """sha256 over the scenario definitions: an edited suite never ranks against the old one."""
        blob = json.dumps([s.to_dict() for s in self.scenarios], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def select(self, substring: str | None = None, limit: int | None = None) -> "Suite":
        """The scenarios whose id contains `substring`, the first `limit` of them (None: all)."""
        if limit is not None and limit < 1:
            raise ConfigError(f"--max-scenarios must be at least 1, got {limit}")
        chosen = [s for s in self.scenarios if not substring or substring in s.id]
        return Suite(self.name, tuple(chosen[:limit] if limit is not None else chosen), self.description, self.arch,
                     self.path, self.lint_exceptions)


def suites_dir() -> Path:
    """The shipped scenarios/ folder (solbench.core.paths)."""
    return SUITES_DIR


def available_suites() -> list[str]:
    return sorted(p.stem for p in suites_dir().glob("*.toml") if not p.stem.startswith("_"))


def load_suite(name_or_path: str) -> Suite:
    """Load a suite by name (scenarios/<name>.toml) or by path to a .toml file."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.exists()):
        path = suites_dir() / f"{name_or_path}.toml"
        if not path.exists():
            raise ConfigError(f"unknown suite {name_or_path!r}; available: {', '.join(available_suites())} (or pass a .toml path)")
    return _SuiteFile(path).load()


class _SuiteFile:
    def __init__(self, path: Path):
        self.path = path
        try:
            self.text = path.read_text()
            self.data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"{path}: malformed TOML: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None

    def where(self, table: str, index: int) -> str:
        """'file:line' of the index-th [[table]] header (TOML parsers keep no line numbers)."""
        pattern = re.compile(r"^\s*\[\[\s*" + re.escape(table) + r"\s*\]\]")
        hits = [n for n, line in enumerate(self.text.splitlines(), 1) if pattern.match(line)]
        return f"{self.path}:{hits[index]}" if index < len(hits) else str(self.path)

    def fail(self, where: str, message: str):
        raise ScenarioError(f"{where}: {message}")

    def load(self) -> Suite:
        unknown = set(self.data) - SUITE_KEYS
        if unknown:
            self.fail(str(self.path), f"unknown top-level key(s) {sorted(unknown)}; expected {sorted(SUITE_KEYS)}")
        if "name" not in self.data:
            self.fail(str(self.path), "missing `name`")
        axes = self.axes()
        scenarios = []
        for p, product in enumerate(self.data.get("product", [])):
            scenarios += self.expand(product, axes, self.where("product", p))
        for i, entry in enumerate(self.data.get("scenario", [])):
            scenarios.append(self.make(entry, self.where("scenario", i)))
        seen = {}
        for sc, where in scenarios:
            if sc.id in seen:
                self.fail(where, f"duplicate scenario id {sc.id} (also at {seen[sc.id]}); set `tag` to tell them apart")
            seen[sc.id] = where
        ids = [sc.id for sc, _ in scenarios]
        exceptions = tuple(self.lint_exception(entry, ids, self.where("lint_exception", i))
                           for i, entry in enumerate(self.data.get("lint_exception", [])))
        return Suite(self.data["name"], tuple(sc for sc, _ in scenarios), self.data.get("description", ""),
                     self.data.get("arch", ""), str(self.path), exceptions)

    def lint_exception(self, entry: dict, ids: list[str], where: str) -> LintException:
        if set(entry) != {"scenarios", "checks", "reason"}:
            self.fail(where, f"a [[lint_exception]] has exactly `scenarios`, `checks` and `reason`, "
                             f"got {sorted(entry)}")
        unknown = set(entry["checks"]) - set(LINT_CHECKS)
        if unknown or not entry["checks"]:
            self.fail(where, f"checks {sorted(unknown) or '[]'}: expected some of {list(LINT_CHECKS)}")
        if not str(entry["reason"]).strip():
            self.fail(where, "a lint exception needs its written reason")
        if not fnmatch.filter(ids, entry["scenarios"]):
            self.fail(where, f"scenarios {entry['scenarios']!r} matches no scenario of the suite")
        return LintException(entry["scenarios"], tuple(entry["checks"]), entry["reason"])

    def axes(self) -> dict[str, list[tuple[dict, str]]]:
        axes: dict[str, list[tuple[dict, str]]] = {}
        for include in self.data.get("include", []):
            included = _SuiteFile(self.path.parent / include)
            for name, entries in included.axes().items():
                axes.setdefault(name, []).extend(entries)
        for name, entries in self.data.get("axis", {}).items():
            if not isinstance(entries, list):
                self.fail(str(self.path), f"axis.{name} must be an array of tables ([[axis.{name}]])")
            axes.setdefault(name, []).extend((e, self.where(f"axis.{name}", i)) for i, e in enumerate(entries))
        return axes

    def expand(self, product: dict, axes: dict, where: str) -> list[tuple[Scenario, str]]:
        names = product.get("axes")
        if not names or not isinstance(names, list):
            self.fail(where, "a [[product]] needs `axes = [\"axis\", ...]`")
        missing = [n for n in names if n not in axes]
        if missing:
            self.fail(where, f"unknown axis {missing}; defined: {sorted(axes)}")
        excludes = product.get("exclude", [])
        out = []
        for combo in itertools.product(*(axes[n] for n in names)):
            merged: dict = dict(product.get("set", {}))
            for entry, entry_where in combo:
                clash = set(entry) & set(merged)
                if clash:
                    self.fail(entry_where, f"field(s) {sorted(clash)} already set by another axis of the product at {where}")
                merged.update(entry)
            if any(all(merged.get(k) == v for k, v in ex.items()) for ex in excludes):
                continue
            out.append(self.make(merged, combo[-1][1] if combo else where))
        return out

    def make(self, entry: dict, where: str) -> tuple[Scenario, str]:
        fields = dict(entry)
        try:
            for key in LENGTH_FIELDS:
                if key in fields:
                    fields[key] = expand_lengths(fields[key])
            if "q_lens" not in fields:
                raise ScenarioError("q_lens: missing")
            context = fields.pop("context_lens", None)
            if context is not None:
                if "kv_lens" in fields:
                    raise ScenarioError("kv_lens: give kv_lens or context_lens, not both")
                if len(context) != len(fields["q_lens"]):
                    raise ScenarioError(f"context_lens: {len(context)} entries for {len(fields['q_lens'])} sequences")
                fields["kv_lens"] = [q + c for q, c in zip(fields["q_lens"], context)]
            fields.setdefault("kv_lens", fields["q_lens"])
            return Scenario.from_dict(fields), where
        except (ScenarioError, TypeError) as exc:
            self.fail(where, str(exc))


def expand_lengths(spec) -> list[int]:
    """A length list whose items are ints or {repeat, n} / {geom = [lo, hi], n} generators."""
    if isinstance(spec, dict):
        spec = [spec]
    if not isinstance(spec, list):
        raise ScenarioError(f"lengths must be a list, got {spec!r}")
    out: list[int] = []
    for item in spec:
        if isinstance(item, int) and not isinstance(item, bool):
            out.append(item)
        elif isinstance(item, dict) and set(item) == {"repeat", "n"}:
            out += [int(item["repeat"])] * int(item["n"])
        elif isinstance(item, dict) and set(item) == {"geom", "n"}:
            lo, hi = item["geom"]
            n = int(item["n"])
            if n < 2 or lo <= 0 or hi < lo:
                raise ScenarioError(f"geom generator needs n >= 2 and 0 < lo <= hi, got {item}")
            out += [round(lo * (hi / lo) ** (i / (n - 1))) for i in range(n)]
        else:
            raise ScenarioError(f"length item {item!r}: expected an int, {{repeat, n}} or {{geom = [lo, hi], n}}")
    return out
