"""The sweep's one loop: each stage in turn adds to the plan, and the runner runs it.

A `Stage` decides what runs next from the results so far, and only by adding to the
manifest: the crossover search its rounds, the ladder the planned rungs, the tie-break
a repeat, the verification its arm (`runner/stages/`, a module each). It names the arms
its passes run; `plan.build` turns the manifest and the run folder into the pass, and
`execute.run_pass` runs it. A fresh
sweep and a `--resume` go through the same stages: what is done on disk is simply not
in the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from specload.runner.attempt import Sweep, finished
from specload.runner.execute import run_pass
from specload.runner.plan import Pass, build

PLANNED = ""  # what a stage's next pass adds when it runs the rungs as planned


class Stage(Protocol):
    """One kind of work of a sweep: the passes it adds, one at a time."""

    def arms(self, sweep: Sweep) -> list[str]:
        """The arms its passes run."""
        ...

    def next(self, sweep: Sweep) -> str | None:
        """Add the stage's next pass to the manifest, and say what it adds (`PLANNED`:
        the rungs on record); None, once it has said why, when the stage is over."""
        ...


Runner = Callable[[Sweep, Pass], None]


def drive(sweep: Sweep, stages: Sequence[Stage], runner: Runner = run_pass) -> None:
    """Run every stage's passes, in turn, until each says it is over (a pass with
    nothing left to run is not run)."""
    for stage in stages:
        while (why := stage.next(sweep)) is not None:
            todo = build(sweep.scenario, sweep.manifest, stage.arms(sweep), finished(sweep),
                         why or None)
            if todo.rounds:
                runner(sweep, todo)
