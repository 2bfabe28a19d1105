"""The plugin's run in pytest-benchmark's files (`--benchmark-json PATH`, `--benchmark-save NAME`,
`--benchmark-autosave`), made through pytest-benchmark's documented hooks and options, and for a saved
run its storage loader (`pytest_benchmark.utils.load_storage`); no private attribute of its session.

pytest-benchmark writes its files only when some test used its `benchmark` fixture; its
`pytest_benchmark_update_json` hook then lets solbench add its run (BenchmarkFiles implements it).
When no test did, it writes nothing and warns "Not saving anything"; `write` then makes the documents
the same way: machine and commit info from its generate/update hooks, the document from
`pytest_benchmark_generate_json` with no benchmarks of its own, the solbench entries from
`pytest_benchmark_update_json`, and the saved run through its storage, so each file lands where, and
reads as, pytest-benchmark would make it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PLUGIN = "benchmark"
"""pytest-benchmark's plugin name (`-p no:benchmark` disables it)."""
NOTHING_SAVED = "Not saving anything, no benchmarks have been run"
"""pytest-benchmark's warning when none of its own benchmarks ran: false for a solbench session, which writes them."""


def requested(config) -> bool:
    """True when pytest-benchmark is active and one of its file options was given."""
    if not config.pluginmanager.hasplugin(PLUGIN):
        return False
    return bool(config.getoption("benchmark_json") or _save_name(config))


class BenchmarkFiles:
    """Registered as a plugin (by SolbenchSession) when pytest-benchmark files were asked for."""

    def __init__(self, session):
        self.session = session
        """The SolbenchSession: its run goes into the files."""
        self.in_document = False
        """True once pytest_benchmark_update_json added the run to a document."""
        self.written: list[str] = []
        """Files written here (not by pytest-benchmark itself)."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        if self.session.result is not None:
            from solbench.supervisor.run_files import add_to_benchmark_doc

            add_to_benchmark_doc(output_json, self.session.result)
            self.in_document = True

    def pytest_sessionfinish(self, session):
        """After pytest-benchmark's hook wrapper saved, or found nothing of its own to save."""
        if self.session.result is not None and not self.in_document:
            self.written = write(session.config)


def write(config) -> list[str]:
    """Write the requested files (the plugin's update_json hook fills in the run); returns what was written."""
    hook = config.hook
    machine_info = hook.pytest_benchmark_generate_machine_info(config=config)
    hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine_info)
    commit_info = hook.pytest_benchmark_generate_commit_info(config=config)
    hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)

    def document(include_data: bool) -> dict:
        doc = hook.pytest_benchmark_generate_json(config=config, benchmarks=[], include_data=include_data,
                                                  machine_info=machine_info, commit_info=commit_info)
        hook.pytest_benchmark_update_json(config=config, benchmarks=[], output_json=doc)
        return doc

    written = []
    target = config.getoption("benchmark_json")
    if target:
        data = json.dumps(document(include_data=True), indent=4).encode()
        if hasattr(target, "write"):  # pytest-benchmark < 5.3 opens the file itself (argparse.FileType)
            with target:
                target.write(data)
            written.append(target.name)
        else:
            Path(target).write_bytes(data)
            written.append(str(target))
    name = _save_name(config)
    if name:
        from pytest_benchmark.logger import Logger
        from pytest_benchmark.utils import get_machine_id, load_storage

        storage = load_storage(config.getoption("benchmark_storage"), logger=Logger(config=config),
                               default_machine_id=get_machine_id(), netrc=config.getoption("benchmark_netrc"))
        storage.save(document(include_data=bool(config.getoption("benchmark_save_data"))), name)
        written.append(f"{storage} ({name})")
    return written


def _save_name(config) -> str | None:
    return config.getoption("benchmark_save") or config.getoption("benchmark_autosave")
