"""In which order a sweep runs its arms' repeats, and what each repeat's status becomes.

Repeat 1 of every arm, then repeat 2 of every arm (`run_rounds`): a machine that speeds
up or slows down during the sweep moves each repeat's arms together. With the
scenario's `interleave`, every arm's server of a round stays up and each rung runs on
every arm before the next rung (`run_interleaved`). Each repeat's status in the
manifest (running, done, failed with the reason, interrupted) is saved as it changes;
a failed repeat does not stop the others.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack

from specload.manifest import ArmEntry, RepEntry, utc_now
from specload.runner.attempt import (
    RepFailed,
    Restarts,
    ServerExited,
    Serving,
    Sweep,
    missing_levels,
    run_levels,
    run_rep,
    say,
    serving,
)


def _begin(sweep: Sweep, rep: RepEntry) -> None:
    rep.status, rep.started, rep.finished, rep.error = "running", utc_now(), None, None
    sweep.save()


def _end(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry,
         error: BaseException | None = None) -> None:
    """Record how a repeat ended: done, failed (why) or interrupted."""
    if isinstance(error, KeyboardInterrupt):
        rep.status, rep.error = "interrupted", "interrupted by the user"
    elif error is not None:  # RepFailed says why; anything else is specload's own bug
        why = str(error) if isinstance(error, RepFailed) else f"internal error: {error!r}"
        rep.status, rep.error = "failed", why
        say(f"[{arm_entry.name}] FAILED: {why}")
    else:
        rep.status = "done"
    rep.finished = utc_now()
    sweep.save()


def run_attempt(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry) -> None:
    """One repeat of an arm, its status kept in the manifest; a failure is recorded."""
    if rep.status == "done":
        return
    _begin(sweep, rep)
    try:
        run_rep(sweep, arm_entry, rep)
    except RepFailed as exc:
        _end(sweep, arm_entry, rep, exc)
    except KeyboardInterrupt as exc:
        _end(sweep, arm_entry, rep, exc)
        raise
    else:
        _end(sweep, arm_entry, rep)


def run_arm(sweep: Sweep, arm_entry: ArmEntry) -> None:
    for rep in arm_entry.reps:
        run_attempt(sweep, arm_entry, rep)


def _rounds(arms: list[ArmEntry]) -> Iterator[list[tuple[ArmEntry, RepEntry]]]:
    """Repeat 1 of every arm, then repeat 2 of every arm, ...: the repeats not yet done."""
    for rnd in itertools.zip_longest(*([(a, rep) for rep in a.reps] for a in arms)):
        pending = [(a, rep) for a, rep in filter(None, rnd) if rep.status != "done"]
        if pending:
            yield pending


def run_rounds(sweep: Sweep, arms: list[ArmEntry]) -> None:
    """Every arm's repeats in rounds: a machine that speeds up or slows down during the
    sweep moves each repeat's arms together, so each repeat's speedup stays true and the
    repeats' spread shows the drift. With `interleave`, also rung by rung within a round."""
    for pending in _rounds(arms):
        if sweep.scenario.interleave:
            run_interleaved(sweep, pending)
        else:
            for arm_entry, rep in pending:
                run_attempt(sweep, arm_entry, rep)


Up = dict[str, tuple[ExitStack, Serving]]


def _serve(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry, up: Up) -> None:
    """Start the arm's server and keep it up in `up`; raises RepFailed."""
    stack = ExitStack()
    try:
        live = stack.enter_context(serving(sweep, arm_entry, rep))
    except BaseException:
        stack.close()
        raise
    up[arm_entry.name] = (stack, live)
    say(f"[{live.label}] {live.url} ready; its rungs interleave with the other arms'")


def _serve_all(sweep: Sweep, pending: list[tuple[ArmEntry, RepEntry]], up: Up) -> None:
    """Start every pending arm's server; an arm whose server does not start has failed."""
    for arm_entry, rep in pending:
        _begin(sweep, rep)
        try:
            _serve(sweep, arm_entry, rep, up)
        except RepFailed as exc:
            _end(sweep, arm_entry, rep, exc)


def _run_level(sweep: Sweep, arm_entry: ArmEntry, rep: RepEntry, level: float, up: Up,
               restarts: Restarts) -> None:
    """One rung on one arm of the round, its server started again (and the rung
    repeated) if it exits and may; raises RepFailed."""
    while True:
        try:
            run_levels(sweep, up[arm_entry.name][1], [level], announce=False)
            return
        except ServerExited as exc:
            restarts.take(arm_entry.name, exc)
            up.pop(arm_entry.name)[0].close()
            _serve(sweep, arm_entry, rep, up)


def run_interleaved(sweep: Sweep, pending: list[tuple[ArmEntry, RepEntry]]) -> None:
    """One round with every arm's server up: each rung on every arm in turn, one Locust
    run per arm and rung. An arm that fails is stopped; the others go on."""
    up: Up = {}

    def close(arm_entry: ArmEntry, rep: RepEntry, error: BaseException | None) -> None:
        up.pop(arm_entry.name)[0].close()
        _end(sweep, arm_entry, rep, error)

    error: BaseException | None = None
    try:
        _serve_all(sweep, pending, up)
        todo = {a.name: missing_levels(sweep, a, rep) for a, rep in pending}
        restarts = {a.name: Restarts(sweep, a) for a, _ in pending}
        for level in sweep.scenario.levels:
            for arm_entry, rep in pending:
                if arm_entry.name in up and level in todo[arm_entry.name]:
                    try:
                        _run_level(sweep, arm_entry, rep, level, up, restarts[arm_entry.name])
                    except RepFailed as exc:
                        if arm_entry.name in up:
                            close(arm_entry, rep, exc)
                        else:  # its server did not start again
                            _end(sweep, arm_entry, rep, exc)
    except BaseException as exc:
        error = exc
        raise
    finally:
        for arm_entry, rep in pending:
            if arm_entry.name in up:
                close(arm_entry, rep, error)
