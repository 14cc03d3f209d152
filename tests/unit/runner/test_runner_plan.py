"""The plan a sweep runs, built from its manifest and finished rungs alone: a fresh
sweep, a resume, an interleaved round, a search round and a tie-break repeat, without
a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specload.config.scenario import Scenario, parse_scenario
from specload.runfiles.manifest import Manifest, RepEntry, SearchEntry, SearchRound
from specload.runner.manifest_entries import new_manifest
from specload.runner.plan import Pass, Run, build


def _scenario(**keys: Any) -> Scenario:
    return parse_scenario({
        "name": "s", "ladder": [1, 2, 4], "repeats": 2, **keys,
        "arms": [{"name": "on", "sim": {"profile": "seed-glm", "spec": "on"}},
                 {"name": "off", "sim": {"profile": "seed-glm", "spec": "off"}}]}, Path("."))


def _runs(todo: Pass) -> list[list[tuple[str, int, tuple[float, ...]]]]:
    return [[(r.arm, r.rep, r.levels) for r in rnd.runs] for rnd in todo.rounds]


def _done(manifest: Manifest, *dirs: str) -> None:
    for arm in manifest.arms:
        for rep in arm.reps:
            if rep.dir in dirs:
                rep.status = "done"


def test_a_fresh_sweep_runs_repeat_1_of_every_arm_then_repeat_2() -> None:
    scenario = _scenario()
    todo = build(scenario, new_manifest(scenario), ["on", "off"], {})
    assert _runs(todo) == [[("on", 1, (1, 2, 4)), ("off", 1, (1, 2, 4))],
                           [("on", 2, (1, 2, 4)), ("off", 2, (1, 2, 4))]]
    assert todo.why is None and len(todo.levels()) == 12


def test_a_resume_runs_only_what_is_not_on_disk() -> None:
    scenario = _scenario()
    manifest = new_manifest(scenario)
    _done(manifest, "on/rep-1")
    manifest.arm("off").reps[0].status = "interrupted"
    finished = {"on/rep-1": [1, 2, 4], "off/rep-1": [1, 2], "on/rep-2": [1, 2, 4]}
    todo = build(scenario, manifest, ["on", "off"], finished)
    # on/rep-2 has every rung but was never marked done: a run with none, to mark it
    assert _runs(todo) == [[("off", 1, (4,))], [("on", 2, ()), ("off", 2, (1, 2, 4))]]


def test_an_interleaved_round_goes_rung_by_rung_across_the_arms() -> None:
    scenario = _scenario(interleave=True, repeats=1)
    manifest = new_manifest(scenario)
    todo = build(scenario, manifest, ["on", "off"], {"off": [1]})
    [rnd] = todo.rounds
    assert rnd.together
    assert _runs(todo) == [[("on", 1, (1,)), ("on", 1, (2,)), ("off", 1, (2,)),
                            ("on", 1, (4,)), ("off", 1, (4,))]]
    assert rnd.repeats() == [("on", 1), ("off", 1)]
    assert rnd.last_run("off", 1) == Run("off", 1, (4,))


def test_interleaved_contexts_keep_one_contexts_servers_up_at_a_time() -> None:
    """Each context is its own comparison, and a command arm's start line (its port) is
    the same at every context: its servers must not be up together."""
    scenario = _scenario(interleave=True, repeats=1, ladder=[1, 2], contexts=[64, 2048])
    todo = build(scenario, new_manifest(scenario), [a.name for a in scenario.arms], {})
    assert [rnd.repeats() for rnd in todo.rounds] == [
        [("on-ctx64", 1), ("off-ctx64", 1)], [("on-ctx2048", 1), ("off-ctx2048", 1)]]
    assert all(rnd.together for rnd in todo.rounds)


def test_a_search_round_runs_its_new_rungs_on_the_compared_arms() -> None:
    scenario = _scenario(ladder="auto", search={"max_concurrency": 64}, repeats=1)
    manifest = new_manifest(scenario)
    manifest.search = SearchEntry(arms=["on", "off"], rounds=[
        SearchRound(levels=[1, 8, 64], reasons=["coarse"]),
        SearchRound(levels=[15, 28, 64], reasons=["below", "above", "again"])])
    finished = {"on": [1, 8, 64], "off": [1, 8, 64]}
    todo = build(scenario, manifest, ["on", "off"], finished, "search round 1")
    # a rung the round measures again (64) runs again
    assert _runs(todo) == [[("on", 1, (15, 28, 64)), ("off", 1, (15, 28, 64))]]
    assert todo.why == "search round 1"


def test_a_tie_break_repeat_runs_every_rung_of_the_new_repeat_only() -> None:
    scenario = _scenario()
    manifest = new_manifest(scenario)
    _done(manifest, "on/rep-1", "on/rep-2", "off/rep-1", "off/rep-2")
    for arm in manifest.arms:
        arm.reps.append(RepEntry(rep=3, dir=f"{arm.name}/rep-3"))
    finished = {f"{a}/rep-{r}": [1, 2, 4] for a in ("on", "off") for r in (1, 2)}
    todo = build(scenario, manifest, ["on", "off"], finished, "tie-break repeat 3")
    assert _runs(todo) == [[("on", 3, (1, 2, 4)), ("off", 3, (1, 2, 4))]]


def test_only_the_named_arms_are_in_the_pass() -> None:
    scenario = _scenario(repeats=1)
    todo = build(scenario, new_manifest(scenario), ["off"], {})
    assert _runs(todo) == [[("off", 1, (1, 2, 4))]]
