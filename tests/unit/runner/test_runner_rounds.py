"""The order in which a sweep runs its arms' repeats."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from specload.manifest import ArmEntry, RepEntry
from specload.runner import rounds


def _arm(name: str, reps: int, done: tuple[int, ...] = ()) -> ArmEntry:
    return ArmEntry(name=name, reps=[
        RepEntry(rep=r, dir=f"{name}/rep-{r}", status="done" if r in done else "pending")
        for r in range(1, reps + 1)])


def test_repeats_run_in_rounds_across_the_arms(monkeypatch: pytest.MonkeyPatch) -> None:
    # arm-major order (on 1, on 2, off 1, off 2) would put a machine's drift between the
    # arms of one repeat; rounds keep each repeat's two arms next to each other
    ran: list[str] = []
    monkeypatch.setattr(rounds, "run_rep", lambda s, arm, rep: ran.append(rep.dir))
    arms = [_arm("on", 3, done=(1,)), _arm("off", 2)]
    state = SimpleNamespace(scenario=SimpleNamespace(interleave=False), save=lambda: None)
    rounds.run_rounds(state, arms)
    assert ran == ["off/rep-1", "on/rep-2", "off/rep-2", "on/rep-3"]
    assert all(r.status == "done" for a in arms for r in a.reps)


def test_an_interleaved_round_that_breaks_leaves_no_repeat_marked_done(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every server of the round is stopped and each repeat says why it ended
    from contextlib import contextmanager

    stopped: list[str] = []

    @contextmanager
    def serving(sweep, arm, rep):
        yield SimpleNamespace(label=arm.name, url="http://x")
        stopped.append(arm.name)

    def run_levels(sweep, live, levels, announce):
        raise ValueError("a bug")

    monkeypatch.setattr(rounds, "serving", serving)
    monkeypatch.setattr(rounds, "run_levels", run_levels)
    monkeypatch.setattr(rounds, "missing_levels", lambda sweep, arm, rep: [1])
    arms = [_arm("on", 1), _arm("off", 1)]
    state = SimpleNamespace(scenario=SimpleNamespace(interleave=True, levels=[1]),
                            save=lambda: None)
    with pytest.raises(ValueError):
        rounds.run_rounds(state, arms)
    assert sorted(stopped) == ["off", "on"]
    assert [(a.reps[0].status, a.reps[0].error) for a in arms] == [
        ("failed", "internal error: ValueError('a bug')")] * 2
