"""The scenarios a command line selects (--suite, --filter, --max-scenarios), or one line saying what
selected nothing: a suite file that defines no scenario (exit 3, a bad suite file), or a --filter no id
contains (exit 2, a bad option)."""

from __future__ import annotations

from solbench.core.errors import ConfigError, ScenarioError


def selected(suite_name: str, substring: str | None = None, max_scenarios: int | None = None):
    """The Suite `suite_name` cut to the ids containing `substring` (--filter), the first `max_scenarios`."""
    from solbench.core.suites import load_suite

    suite = load_suite(suite_name)
    if not suite.scenarios:
        raise ScenarioError(f"{suite.path}: suite {suite.name!r} defines no scenario; add a [[scenario]] or "
                            "[[product]] table (or loosen a product's `exclude`, which removes every combination)")
    chosen = suite.select(substring, max_scenarios)
    if not chosen.scenarios:
        raise ConfigError(f"--filter {substring!r}: no scenario id of suite {suite.name!r} contains it; "
                          f"`solbench scenarios --suite {suite_name}` lists its {len(suite.scenarios)} ids")
    return chosen
