"""The crossover search stage: the passes it adds and the loop runs, what it keeps on
record, and a resumed search going on from there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from specload.config.scenario import parse_scenario
from specload.runfiles.manifest import SearchEntry, SearchRound
from specload.runner.loop import drive
from specload.runner.manifest_entries import new_manifest
from specload.runner.stages.ladder import Ladder
from specload.runner.stages.search import Search
from tests.support.sweeps import Passes


def _sweep(analyses: list[tuple[float, float, float]], tmp_path: Path) -> SimpleNamespace:
    """A sweep of a `ladder: auto` scenario whose analysis after each pass gives the next
    (lo, hi, C*) of `analyses`."""
    scenario = parse_scenario({
        "name": "s", "ladder": "auto", "search": {"max_concurrency": 64},
        "arms": [{"name": "on", "sim": {"profile": "seed-glm", "spec": "on"}},
                 {"name": "off", "sim": {"profile": "seed-glm", "spec": "off"}}]}, Path("."))

    def analysed(step: str) -> SimpleNamespace:
        lo, hi, c_star = analyses.pop(0)
        pair = SimpleNamespace(
            on=SimpleNamespace(name="on", context=None), off=SimpleNamespace(name="off"),
            speedup=pd.DataFrame({"concurrency": [1, 8, 64], "decision": ["on", "on", "off"]}),
            interval=SimpleNamespace(lo=lo, hi=hi), crossover=SimpleNamespace(c_star=c_star))
        return SimpleNamespace(pairs=[pair])

    return SimpleNamespace(scenario=scenario, manifest=new_manifest(scenario), rung_s=10.0,
                           save=lambda: None, analysed=analysed, run_dir=tmp_path,
                           selected=["on", "off"])


def _rungs(passes: Passes) -> list[tuple[str | None, list[float]]]:
    """Each pass's reason and the rungs it ran on the first arm."""
    return [(p.why, list(p.rounds[0].runs[0].levels)) for p in passes.seen]


def test_a_pass_per_round_until_c_star_is_known(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    sweep, passes = _sweep([(8.0, 64.0, 20.0), (17.0, 20.0, 18.5)], tmp_path), Passes()
    search = Search()
    drive(sweep, [search, Ladder(search)], passes)
    log = sweep.manifest.search
    assert [r.levels for r in log.rounds] == [[1, 8, 64], [15, 28]]
    # nothing on disk: the stand-in finished no rung, so round 1 asks for them all again
    assert _rungs(passes) == [(None, [1, 8, 64]), ("search round 1", [1, 8, 15, 28, 64])]
    assert all(len(p.rounds[0].runs) == 2 for p in passes.seen)
    assert sweep.scenario.levels == [1, 8, 15, 28, 64]
    assert log.stop == "C* is known to ±10%: between C=17 and C=20"
    assert all(a.ladder == [1, 8, 15, 28, 64] for a in sweep.manifest.arms)
    out = capsys.readouterr().out
    assert "search: round 1: C=15: below the estimate C*≈20.0, inside C*'s interval C=8-64" \
        in out
    assert "search: C* is known to ±10%: between C=17 and C=20 (5 rungs per arm in 2 " \
        "pass(es))" in out


def test_a_resumed_search_goes_on_from_its_last_pass(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    sweep, passes = _sweep([(17.0, 20.0, 18.5)], tmp_path), Passes()
    sweep.manifest.search = SearchEntry(arms=["on", "off"], rounds=[
        SearchRound(levels=[1, 8, 64], reasons=["coarse"], spent_s=60.0),
        SearchRound(levels=[14, 29], reasons=["below", "above"])])
    sweep.manifest.arms[0].reps[0].status = "done"  # spec-off was cut short in round 1
    search = Search()
    drive(sweep, [search, Ladder(search)], passes)
    assert [(r.arm, r.levels) for p in passes.seen for r in p.rounds[0].runs] == [
        ("off", (1, 8, 14, 29, 64))]
    assert passes.seen[0].why == "search round 1"
    assert len(sweep.manifest.search.rounds) == 2
    assert sweep.manifest.search.stop.startswith("C* is known")
    assert "coarse pass" not in capsys.readouterr().out


def test_an_arm_that_did_not_finish_stops_the_search(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep([], tmp_path)
    seen = []

    def failing(sweep: SimpleNamespace, todo: object) -> None:
        seen.append(todo)
        arm = sweep.manifest.arms[0]
        arm.reps[0].status = "failed"
        arm.refresh_status()
    search = Search()
    drive(sweep, [search, Ladder(search)], failing)
    assert len(seen) == 1  # the ladder has no arm the search did not run
    assert sweep.manifest.search.stop is None  # a resume goes on
    assert "search: stopped, an arm did not finish its rungs" in capsys.readouterr().out
