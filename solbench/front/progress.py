"""Progress on stderr, for people. A run's (RunProgress): on a terminal one live line (tqdm: k/N scenarios,
elapsed, ETA, the scenario being evaluated), elsewhere (a log, CI, an agent's pipe) one plain line per
finished scenario with the same numbers; the runner never prints, it calls `started` and `finished`.
A command stepping through many quick items (StepProgress: lint) says where it is at least every few seconds.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from solbench.core.model import Outcome, Status

REASON_CHARS = 100
"""How much of a failing scenario's reason the progress line repeats (the summary has all of it)."""


class RunProgress:
    """Follows one run: pass `started` and `finished` to `runner.run`; close it (or use `with`) at the end."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._bar = None
        self._first_start = None  # the clock starts at the first scenario, not at the build before it
        self._scenario_start = 0.0
        self._index, self._total = 0, 0

    def started(self, scenario_id: str, index: int, total: int) -> None:
        now = time.perf_counter()
        self._first_start = now if self._first_start is None else self._first_start
        self._scenario_start, self._index, self._total = now, index, total
        if not self.live:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=index, file=self.stream, unit="scenario", dynamic_ncols=True,
                             bar_format="{n_fmt}/{total_fmt} {bar} [{elapsed}<{remaining}, {rate_fmt}] {desc}")
        self._bar.set_description_str(scenario_id)

    def finished(self, outcome: Outcome) -> None:
        now = time.perf_counter()
        done = self._index + 1
        if self.live:
            if outcome.status is not Status.PASSED:
                self._bar.write(f"{outcome.status.value}: {outcome.scenario_id}: {_clip(outcome.reason)}",
                                file=self.stream)
            self._bar.update(1)
            return
        from tqdm import tqdm

        elapsed = now - self._first_start
        eta = elapsed / done * (self._total - done)
        width = len(str(self._total))
        print(f"[{done:>{width}}/{self._total}] {outcome.status.value:<17} {now - self._scenario_start:7.1f} s  "
              f"elapsed {tqdm.format_interval(elapsed)}  ETA {tqdm.format_interval(eta)}  {outcome.scenario_id}"
              + ("" if outcome.status is Status.PASSED else f": {_clip(outcome.reason)}"),
              file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


class StepProgress:
    """Progress of a command that steps through many quick items (lint: a CPU reference per scenario), on
    stderr: on a terminal one live line; elsewhere a line at the start, one at most every `every_s` seconds
    and one at the end, so that a log or an agent's pipe is never silent for long. Pass it as the
    `progress(i, n, item_id)` callback (called before each item); close it (or use `with`) at the end."""

    def __init__(self, what: str, stream: TextIO | None = None, live: bool | None = None, every_s: float = 5.0):
        self.what, self.every_s = what, every_s
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._start = self._last = None
        self._done, self._total = 0, 0

    def __call__(self, index: int, total: int, item_id: str) -> None:
        now = time.perf_counter()
        self._done, self._total = index, total
        if self.live:
            print(f"\r{self.what} {index + 1}/{total} {item_id[:80]:<80}", end="", file=self.stream, flush=True)
            self._start = self._start or now
            return
        if self._start is None:
            self._start = self._last = now
            print(f"{self.what}: {total} scenario(s)", file=self.stream, flush=True)
        elif now - self._last >= self.every_s:
            self._last = now
            elapsed = now - self._start
            eta = elapsed / index * (total - index) if index else 0.0
            print(f"{self.what}: {index}/{total} done, {elapsed:.0f} s, ETA {eta:.0f} s", file=self.stream, flush=True)

    def close(self, finished: bool = True) -> None:
        """End the live line; elsewhere say it is done (`finished`) and how long it took."""
        if self._start is None:
            return
        elapsed = time.perf_counter() - self._start
        if self.live:
            print(file=self.stream, flush=True)
        elif finished:
            print(f"{self.what}: {self._total}/{self._total} done in {elapsed:.1f} s", file=self.stream, flush=True)
        self._start = None

    def __enter__(self) -> StepProgress:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(finished=exc_type is None)
