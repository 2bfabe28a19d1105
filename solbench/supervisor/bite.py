"""What `solbench run` says before it starts about features that do not bite: a scenario that turns on sinks, a
softcap, a window or fp16 inputs, on which a kernel ignoring that feature (or accumulating in fp16) would pass.

The test is `solbench lint`'s own (solbench.supervisor.lint.feature_flags, on the same probe), so `run` and `lint`
never disagree; flags the suite file excuses ([[lint_exception]]) are not repeated. One line per feature, once
per run: how many of the scenarios that have it it does not bite in, and the fix. The verdict is a pure function
of the scenario's definition and of solbench's drawing and judging code, so it is cached on disk (under
$SOLBENCH_CACHE, default ~/.cache/solbench, in lint/), keyed by both: a suite's second run pays nothing, and a
change to that code is a new key. A cache entry decides a warning only, never a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from solbench.core.scenario import Scenario
from solbench.core.suites import Suite

FIXES = {
    "window": "a window that covers every row's keys removes none: make it shorter than the rows",
    "sinks": "draw the sinks on the rows' LSE scale: leave input_profile unset, or set sinks_lse",
    "softcap": "draw scores that reach the cap: leave input_profile unset (caps up to ~60), or set high_logits",
    "fp16": "draw larger logits or longer rows: leave input_profile unset, or set high_logits",
}
"""Per feature (solbench.supervisor.lint.FEATURES), what a suite does to make it bite."""
CODE = ("supervisor/lint.py", "supervisor/inputs.py", "supervisor/reference.py", "supervisor/verdict.py",
        "supervisor/budget.py", "core/masks.py", "core/scenario.py", "core/tensors.py")
"""The code a verdict of feature_flags depends on beside the scenario (relative to the solbench package)."""


def cache_dir() -> Path:
    root = os.environ.get("SOLBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "solbench") / "lint"


def _code_digest() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in CODE:
        digest.update((package / name).read_bytes())
    return digest.hexdigest()


def feature_flags(sc: Scenario, code: str | None = None) -> list[tuple[str, str]]:
    """solbench.supervisor.lint.feature_flags(sc), from the cache when this code has answered it before."""
    from solbench.supervisor import lint

    if not any(lint.has_feature(sc, check) for check in lint.FEATURES):
        return []
    key = hashlib.sha256(json.dumps([code or _code_digest(), sc.to_dict()], sort_keys=True).encode()).hexdigest()
    path = cache_dir() / f"{key}.json"
    try:
        return [(check, detail) for check, detail in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        pass
    flags = lint.feature_flags(sc)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(flags))
        os.replace(part, path)
    except OSError:  # a read-only home: the warning is only computed again next time
        pass
    return flags


def not_biting(suite: Suite) -> dict[str, tuple[int, list[str]]]:
    """Per feature, (scenarios that turn it on, the ids of those it does not bite in and the suite does not
    excuse), for the features with at least one such scenario, in FEATURES order."""
    from solbench.supervisor import lint

    code = _code_digest()
    found: dict[str, tuple[int, list[str]]] = {}
    for check in lint.FEATURES:
        having = [sc for sc in suite.scenarios if lint.has_feature(sc, check)]
        if not having:
            continue
        bad = [sc.id for sc in having if any(c == check for c, _ in feature_flags(sc, code))
               and not any(e.covers(sc.id, check) for e in suite.lint_exceptions)]
        if bad:
            found[check] = (len(having), bad)
    return found


def warning_lines(suite: Suite) -> list[str]:
    """One line per feature that does not bite in some of the suite's scenarios (see the module docstring)."""
    what = {"fp16": "fp16 accumulation would pass"}
    return [f"solbench run: warning: {check} does not bite in {len(bad)} of the {having} scenario(s) of suite "
            f"{suite.name!r} that have it ({what.get(check, 'a kernel ignoring it would pass')}; "
            f"`solbench lint` names them): {FIXES[check]}"
            for check, (having, bad) in not_biting(suite).items()]
