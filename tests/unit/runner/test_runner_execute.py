"""How the runner runs a pass: each repeat's server up for its runs, the statuses it
records, a server started again after it exits, and an interleaved round that breaks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from specload.runfiles.manifest import ArmEntry, Manifest, RepEntry
from specload.runner import execute
from specload.runner.attempt import ServerExited
from specload.runner.plan import Pass, Round, Run


def _sweep(restarts: int = 0) -> SimpleNamespace:
    arms = [ArmEntry(name=n, reps=[RepEntry(rep=1, dir=n)]) for n in ("on", "off")]
    command = SimpleNamespace(restart_on_exit=restarts)
    return SimpleNamespace(manifest=Manifest(scenario={}, arms=arms), save=lambda: None,
                           arm=lambda name: SimpleNamespace(command=command))


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What happened, in order: servers started and stopped, rungs run."""
    events: list[str] = []

    @contextmanager
    def serving(sweep: Any, arm: ArmEntry, rep: RepEntry) -> Iterator[SimpleNamespace]:
        events.append(f"start {arm.name}")
        yield SimpleNamespace(label=arm.name, url="http://x", arm=arm.name)
        events.append(f"stop {arm.name}")

    def run_levels(sweep: Any, live: SimpleNamespace, levels: list[float],
                   announce: bool) -> None:
        events.append(f"run {live.arm} {levels}")

    monkeypatch.setattr(execute, "serving", serving)
    monkeypatch.setattr(execute, "run_levels", run_levels)
    return events


def _statuses(sweep: SimpleNamespace) -> list[tuple[str, str | None]]:
    return [(a.reps[0].status, a.reps[0].error) for a in sweep.manifest.arms]


def test_each_repeat_has_its_server_for_its_runs_only(log: list[str]) -> None:
    sweep = _sweep()
    execute.run_pass(sweep, Pass((Round((Run("on", 1, (1, 2)), Run("off", 1, ()))),)))
    # a repeat with nothing left to run is marked done without a server
    assert log == ["start on", "run on [1, 2]", "stop on"]
    assert _statuses(sweep) == [("done", None), ("done", None)]


def test_a_server_that_exits_is_started_again_for_the_rungs_left(
        log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = _sweep(restarts=1)
    runs = 0

    def run_levels(sweep: Any, live: SimpleNamespace, levels: list[float],
                   announce: bool) -> None:
        nonlocal runs
        runs += 1
        log.append(f"run {live.arm} {levels}")
        if runs <= 2:
            raise ServerExited("the server exited")

    monkeypatch.setattr(execute, "run_levels", run_levels)
    left = iter([[2, 4], [4]])  # what the folder has not finished after each exit
    monkeypatch.setattr(execute, "missing_levels", lambda sweep, arm, rep: next(left))
    execute.run_pass(sweep, Pass((Round((Run("on", 1, (1, 2, 4)),)),)))
    # one restart allowed: the second exit fails the repeat, its server stopped
    assert log == ["start on", "run on [1, 2, 4]", "stop on", "start on", "run on [2, 4]",
                   "stop on"]
    assert _statuses(sweep)[0] == ("failed", "the server exited")


def test_an_interleaved_round_starts_every_server_first(log: list[str]) -> None:
    sweep = _sweep()
    runs = (Run("on", 1, (1,)), Run("off", 1, (1,)), Run("on", 1, (2,)), Run("off", 1, (2,)))
    execute.run_pass(sweep, Pass((Round(runs, together=True),)))
    assert log == ["start on", "start off", "run on [1]", "run off [1]", "run on [2]",
                   "stop on", "run off [2]", "stop off"]
    assert _statuses(sweep) == [("done", None), ("done", None)]


def test_an_interleaved_round_that_breaks_leaves_no_repeat_marked_done(
        log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # every server of the round is stopped and each repeat says why it ended
    def run_levels(sweep: Any, live: Any, levels: list[float], announce: bool) -> None:
        raise ValueError("a bug")

    monkeypatch.setattr(execute, "run_levels", run_levels)
    sweep = _sweep()
    with pytest.raises(ValueError):
        execute.run_pass(sweep, Pass((Round((Run("on", 1, (1,)), Run("off", 1, (1,))),
                                            together=True),)))
    assert sorted(e for e in log if e.startswith("stop")) == ["stop off", "stop on"]
    assert _statuses(sweep) == [("failed", "internal error: ValueError('a bug')")] * 2


def test_ctrl_c_marks_the_repeat_under_way_interrupted_and_leaves_the_rest(
        log: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def run_levels(sweep: Any, live: Any, levels: list[float], announce: bool) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "run_levels", run_levels)
    sweep = _sweep()
    with pytest.raises(KeyboardInterrupt):
        execute.run_pass(sweep, Pass((Round((Run("on", 1, (1,)), Run("off", 1, (1,)))),)))
    assert _statuses(sweep) == [("interrupted", "interrupted by the user"), ("pending", None)]
