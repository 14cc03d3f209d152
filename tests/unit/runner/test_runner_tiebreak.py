"""Tie-break repeats: when they are added, how many, and what a resumed run counts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from specload.report import render
from specload.runfiles.manifest import ArmEntry, Manifest, RepEntry
from specload.runner.loop import drive
from specload.runner.stages import tiebreak
from specload.runner.stages.tiebreak import TieBreak
from specload.traffic.kinds import USERS
from tests.support.sweeps import Passes


def _arm(name: str, reps: int, pending: tuple[int, ...] = ()) -> ArmEntry:
    arm = ArmEntry(name=name, role=f"spec_{name}", reps=[
        RepEntry(rep=r, dir=f"{name}/rep-{r}",
                 status="pending" if r in pending else "done")
        for r in range(1, reps + 1)])
    arm.refresh_status()
    return arm


def _settle(budget: int, arms: list[ArmEntry], tmp_path: Path) -> Passes:
    """Run the tie-break stage on `arms` with `budget` repeats; the passes it ran."""
    sweep = SimpleNamespace(
        scenario=SimpleNamespace(repeats=2, tiebreak_repeats=budget, interleave=False,
                                 levels=[1, 2], workload_kind=USERS),
        manifest=Manifest(scenario={}, arms=arms), run_dir=tmp_path,
        analysed=lambda step: "the run's report", save=lambda: None)
    passes = Passes()
    drive(sweep, [TieBreak()], passes)
    return passes


@pytest.fixture
def verdicts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What the run's analysis says after each round (popped in turn)."""
    said: list[list[str]] = []
    monkeypatch.setattr(render, "unsettled_pairs", lambda report: said.pop(0))
    return said


def test_repeats_are_added_one_round_at_a_time_until_they_agree(
        verdicts: list[list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts += [["on vs off: the repeats disagree"], ["on vs off: still"], []]
    arms = [_arm("on", 2), _arm("off", 2)]
    passes = _settle(3, arms, tmp_path)
    assert [[r.dir for r in a.reps] for a in arms] == [
        [f"{n}/rep-{r}" for r in (1, 2, 3, 4)] for n in ("on", "off")]
    assert [(p.why, [(r.arm, r.rep, r.levels) for rnd in p.rounds for r in rnd.runs])
            for p in passes.seen] == [
        (f"tie-break repeat {n}", [("on", n, (1, 2)), ("off", n, (1, 2))]) for n in (3, 4)]
    out = capsys.readouterr().out
    assert "running repeat 3 of every arm (1 of at most 3 more)" in out
    assert "running repeat 4 of every arm (2 of at most 3 more)" in out
    assert "tie-break: the repeats agree after 2 more" in out


def test_the_budget_ends_it_and_says_the_repeats_still_disagree(
        verdicts: list[list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts += [["on vs off: the repeats disagree"]] * 2
    arms = [_arm("on", 2), _arm("off", 2)]
    _settle(1, arms, tmp_path)
    assert [len(a.reps) for a in arms] == [3, 3]
    assert ("tie-break: on vs off: the repeats disagree after 1 more repeat(s) "
            "(tiebreak_repeats: 1); the report gives their range") in capsys.readouterr().out


def test_a_resumed_run_counts_the_repeats_it_added(verdicts: list[list[str]],
                                                   tmp_path: Path) -> None:
    # repeat 3 was added and finished before the interruption: one of two is used
    verdicts += [["on vs off: the repeats disagree"], []]
    arms = [_arm("on", 3), _arm("off", 3)]
    assert tiebreak.added(arms, 2) == 1
    _settle(2, arms, tmp_path)
    assert [len(a.reps) for a in arms] == [4, 4]


def test_nothing_is_tried_while_an_arm_has_not_finished(
        verdicts: list[list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arms = [_arm("on", 2), _arm("off", 2, pending=(2,))]
    _settle(1, arms, tmp_path)
    assert [len(a.reps) for a in arms] == [2, 2] and verdicts == []
    assert "not tried, an arm did not finish every repeat" in capsys.readouterr().out
    _settle(0, arms, tmp_path)  # no budget: not even that
