"""The runner's crossover search: the passes it plans and runs, what it keeps on record,
and a resumed search going on from there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from specload.manifest import SearchEntry, SearchRound
from specload.runner import search as runner_search
from specload.runner.manifest import new_manifest
from specload.scenario import parse_scenario
from tests.support.sweeps import finish_every_repeat


def _sweep(analyses: list[tuple[float, float, float]]) -> SimpleNamespace:
    """A sweep of a `ladder: auto` scenario whose analysis after each pass gives the next
    (lo, hi, C*) of `analyses`."""
    scenario = parse_scenario({
        "name": "s", "ladder": "auto", "search": {"max_concurrency": 64},
        "arms": [{"name": "on", "sim": {"profile": "seed-glm", "spec": "on"}},
                 {"name": "off", "sim": {"profile": "seed-glm", "spec": "off"}}]}, Path("."))

    def analysed(step: str) -> SimpleNamespace:
        lo, hi, c_star = analyses.pop(0)
        pair = SimpleNamespace(
            on=SimpleNamespace(name="on"), off=SimpleNamespace(name="off"),
            speedup=pd.DataFrame({"concurrency": [1, 8, 64], "decision": ["on", "on", "off"]}),
            interval=SimpleNamespace(lo=lo, hi=hi), crossover=SimpleNamespace(c_star=c_star))
        return SimpleNamespace(pairs=[pair])

    return SimpleNamespace(scenario=scenario, manifest=new_manifest(scenario), rung_s=10.0,
                           save=lambda: None, analysed=analysed)


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[list[float]]:
    """The ladder each pass ran with, the arms' repeats finished by it."""
    ran: list[list[float]] = []

    def run_rounds(sweep: SimpleNamespace, arms: list) -> None:
        ran.append(list(sweep.scenario.levels))
        finish_every_repeat(sweep, arms)
    monkeypatch.setattr(runner_search, "run_rounds", run_rounds)
    return ran


def test_a_pass_per_round_until_c_star_is_known(passes: list[list[float]],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep([(8.0, 64.0, 20.0), (17.0, 20.0, 18.5)])
    runner_search.explore(sweep, sweep.manifest.arms)
    log = sweep.manifest.search
    assert [r.levels for r in log.rounds] == [[1, 8, 64], [15, 28]]
    assert passes == [[1, 8, 64], [1, 8, 15, 28, 64]]
    assert log.stop == "C* is known to ±10%: between C=17 and C=20"
    assert all(a.ladder == [1, 8, 15, 28, 64] for a in sweep.manifest.arms)
    out = capsys.readouterr().out
    assert "search: round 1: C=15: below the estimate C*≈20.0, inside C*'s interval C=8-64" \
        in out
    assert "search: C* is known to ±10%: between C=17 and C=20 (5 rungs per arm in 2 " \
        "pass(es))" in out


def test_a_resumed_search_goes_on_from_its_last_pass(passes: list[list[float]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep([(17.0, 20.0, 18.5)])
    sweep.manifest.search = SearchEntry(arms=["on", "off"], rounds=[
        SearchRound(levels=[1, 8, 64], reasons=["coarse"], spent_s=60.0),
        SearchRound(levels=[14, 29], reasons=["below", "above"])])
    sweep.manifest.arms[0].reps[0].status = "done"  # spec-off was cut short in round 1
    runner_search.explore(sweep, sweep.manifest.arms)
    assert passes == [[1, 8, 14, 29, 64]] and len(sweep.manifest.search.rounds) == 2
    assert sweep.manifest.search.stop.startswith("C* is known")
    assert "coarse pass" not in capsys.readouterr().out


def test_an_arm_that_did_not_finish_stops_the_search(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _sweep([])

    def failing(sweep: SimpleNamespace, arms: list) -> None:
        arms[0].reps[0].status = "failed"
        arms[0].refresh_status()
    monkeypatch.setattr(runner_search, "run_rounds", failing)
    assert runner_search.explore(sweep, sweep.manifest.arms) is None
    assert sweep.manifest.search.stop is None  # a resume goes on
    assert "search: stopped, an arm did not finish its rungs" in capsys.readouterr().out
