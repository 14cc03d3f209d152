"""The ladder stage: the planned rungs of the arms no earlier stage ran, in one pass."""

from __future__ import annotations

from specload.runner.attempt import Sweep
from specload.runner.loop import PLANNED, Stage


class Ladder:
    """The planned rungs of every selected arm that an earlier stage (the search) did
    not run, in one pass."""

    def __init__(self, *before: Stage) -> None:
        self.before, self.done = before, False

    def arms(self, sweep: Sweep) -> list[str]:
        taken = {name for stage in self.before for name in stage.arms(sweep)}
        return [name for name in sweep.selected if name not in taken]

    def next(self, sweep: Sweep) -> str | None:
        if self.done:
            return None
        self.done = True
        return PLANNED
