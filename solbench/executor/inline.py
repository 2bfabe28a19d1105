"""The plain run's executor: one agent in the `solbench` process itself, units in suite order, one after
another, on the GPU that process uses. Nothing crosses a process boundary but the workers' pipes, as
before the executor layer existed."""

from __future__ import annotations

from typing import Callable, Iterator

from solbench.core.model import Outcome
from solbench.core.scenario import Scenario
from solbench.executor.keys import unit_key
from solbench.executor.units import Agent, UnitContext


class InlineExecutor:
    """Units evaluated here, in the order given."""

    def __init__(self, ctx: UnitContext, secret: bytes):
        self.ctx = ctx
        self._secret = secret
        self.agent = Agent(ctx)
        self.events: list[str] = []
        """What happened to GPUs and agents during the run (none here: a failure here ends the run)."""
        self.unfinished: list[str] = []
        """Scenario ids no agent could finish."""

    def start(self) -> None:
        self.agent.load()

    def outcomes(self, scenarios: list[Scenario], on_start: Callable[[str, int, int], None] | None = None
                 ) -> Iterator[Outcome]:
        for index, sc in enumerate(scenarios):
            if on_start:
                on_start(sc.id, index, len(scenarios))
            yield self.agent.evaluate(sc, unit_key(self._secret, self.ctx.run_id, sc.id, 1))

    def close(self) -> None:
        self.agent.close()
