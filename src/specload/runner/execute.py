"""Running a pass (`runner/plan.py`): its rounds in order, each repeat's server and status.

A repeat is marked running when its round reaches it, and done, failed (with the reason)
or interrupted once its last run of the round ends; the manifest is saved at each change
and a failed repeat does not stop the others. A repeat's server starts for its first run
and stops after its last; in a round run `together` every repeat's server starts before
the first run, and one that does not start fails its repeat alone. A server that exits
during a run is started again, and the run's rungs not yet finished run again, while the
arm's `command.restart_on_exit` allows.
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack

from specload.runfiles.manifest import RepEntry, utc_now
from specload.runner.attempt import (
    RepFailed,
    Restarts,
    ServerExited,
    Serving,
    Sweep,
    missing_levels,
    run_levels,
    say,
    serving,
)
from specload.runner.plan import Level, Pass, Round, Run

Key = tuple[str, int]  # an arm's name and a repeat's number


def _rep(sweep: Sweep, key: Key) -> RepEntry:
    return next(r for r in sweep.manifest.arm(key[0]).reps if r.rep == key[1])


def _begin(sweep: Sweep, key: Key) -> None:
    rep = _rep(sweep, key)
    rep.status, rep.started, rep.finished, rep.error = "running", utc_now(), None, None
    sweep.save()


def _end(sweep: Sweep, key: Key, error: BaseException | None = None) -> None:
    """Record how a repeat ended: done, failed (why) or interrupted."""
    rep = _rep(sweep, key)
    if isinstance(error, KeyboardInterrupt):
        rep.status, rep.error = "interrupted", "interrupted by the user"
    elif error is not None:  # RepFailed says why; anything else is specload's own bug
        why = str(error) if isinstance(error, RepFailed) else f"internal error: {error!r}"
        rep.status, rep.error = "failed", why
        say(f"[{key[0]}] FAILED: {why}")
    else:
        rep.status = "done"
    rep.finished = utc_now()
    sweep.save()


class _Servers:
    """The servers of a round's repeats that are up, each with what stops it."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self.up: dict[Key, tuple[ExitStack, Serving]] = {}

    def open(self, key: Key, together: bool) -> Serving:
        """The repeat's server, started if it is not up; raises RepFailed."""
        if key not in self.up:
            stack = ExitStack()
            try:
                live = stack.enter_context(
                    serving(self.sweep, self.sweep.manifest.arm(key[0]), _rep(self.sweep, key)))
            except BaseException:
                stack.close()
                raise
            self.up[key] = (stack, live)
            if together:
                say(f"[{live.label}] {live.url} ready; its rungs interleave with the other "
                    "arms'")
        return self.up[key][1]

    def close(self, key: Key) -> None:
        if key in self.up:
            self.up.pop(key)[0].close()


def _left(sweep: Sweep, run: Run) -> list[Level]:
    """The run's rungs its repeat has not finished (all of them, before it starts)."""
    missing = Counter(missing_levels(sweep, run.arm, _rep(sweep, (run.arm, run.rep))))
    return sorted((Counter(run.levels) & missing).elements())


def _execute(sweep: Sweep, run: Run, servers: _Servers, restarts: Restarts,
             together: bool) -> None:
    """One Locust run of the repeat's server, started again (and the rungs left run
    again) if it exits and may; raises RepFailed or KeyboardInterrupt."""
    key = (run.arm, run.rep)
    levels = list(run.levels)
    while levels:
        live = servers.open(key, together)
        try:
            run_levels(sweep, live, levels, announce=not together)
            return
        except ServerExited as exc:
            restarts.take(run.arm, exc)
            servers.close(key)
            levels = _left(sweep, run)


class _Round:
    """A round under way: which of its repeats have begun and ended, their servers."""

    def __init__(self, sweep: Sweep, rnd: Round) -> None:
        self.sweep, self.rnd = sweep, rnd
        self.servers = _Servers(sweep)
        self.begun: list[Key] = []
        self.ended: set[Key] = set()
        self.restarts = {key: Restarts(sweep, sweep.manifest.arm(key[0]))
                         for key in rnd.repeats()}

    def begin(self, key: Key) -> None:
        if key not in self.begun:
            self.begun.append(key)
            _begin(self.sweep, key)

    def end(self, key: Key, error: BaseException | None = None) -> None:
        self.servers.close(key)
        self.ended.add(key)
        _end(self.sweep, key, error)

    def open_all(self) -> None:
        """Start every repeat's server; a repeat whose server does not start fails."""
        for key in self.rnd.repeats():
            self.begin(key)
            try:
                self.servers.open(key, together=True)
            except RepFailed as exc:
                self.end(key, exc)

    def run(self, run: Run) -> None:
        key = (run.arm, run.rep)
        if key in self.ended:
            return
        self.begin(key)
        try:
            _execute(self.sweep, run, self.servers, self.restarts[key], self.rnd.together)
        except RepFailed as exc:
            self.end(key, exc)
            return
        if run is self.rnd.last_run(*key):
            self.end(key)

    def end_rest(self, error: BaseException | None) -> None:
        """End every repeat begun and not ended: by `error`, if the round broke off."""
        for key in self.begun:
            if key not in self.ended:
                self.end(key, error)


def _run_round(sweep: Sweep, rnd: Round) -> None:
    state = _Round(sweep, rnd)
    error: BaseException | None = None
    try:
        if rnd.together:
            state.open_all()
        for run in rnd.runs:
            state.run(run)
    except BaseException as exc:
        error = exc
        raise
    finally:
        state.end_rest(error)


def run_pass(sweep: Sweep, todo: Pass) -> None:
    """Run every round of the pass; its `why` goes on each run's first line."""
    sweep.adding, sweep.report = todo.why, None
    try:
        for rnd in todo.rounds:
            _run_round(sweep, rnd)
    finally:
        sweep.adding = None
