"""The crossover search of a `ladder: auto` sweep, as a stage: a coarse pass, then rounds.

The coarse pass runs `search.coarse` on every compared arm; after each pass the run is
analysed and `search.refine_each` (one pair, or one per context) gives the next round's
rungs (printed, each with its reason) or why the search stops. A round's rungs run on
every compared arm as planned rungs do (`runner/loop.py`): one Locust run and one server
start per arm and repeat. The passes are kept in the manifest (`SearchEntry`) as they
are planned and run, so `--resume` finishes a pass cut short and goes on searching from
there.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from specload.ladder.search import COARSE_RATIO, Found, coarse, refine_each
from specload.runfiles.manifest import ArmEntry, SearchEntry, SearchRound
from specload.runner.attempt import Sweep, say
from specload.runner.loop import PLANNED

if TYPE_CHECKING:
    from specload.report.render import Report


def _plan(sweep: Sweep, arms: list[ArmEntry]) -> SearchEntry:
    """The search on record, or a new one with its coarse pass."""
    if sweep.manifest.search is not None:
        return sweep.manifest.search
    spec = sweep.scenario.search
    assert spec is not None
    levels = coarse(spec)
    why = (f"coarse pass: geometric from C={spec.min_concurrency} to "
           f"C={spec.max_concurrency}, neighbours at most {COARSE_RATIO:g}x apart")
    sweep.manifest.search = SearchEntry(arms=[a.name for a in arms],
                                        rounds=[SearchRound(levels=levels, reasons=[why])])
    say(f"search: {why}: C={','.join(map(str, levels))}; then up to {spec.rounds} "
        f"refinement round(s) inside C*'s interval until it is known to "
        f"±{spec.precision:.0%} (at most {spec.max_rungs} rungs per arm"
        + (f", {spec.max_minutes:g} min" if spec.max_minutes else "") + ")")
    return sweep.manifest.search


def _apply(sweep: Sweep, log: SearchEntry) -> None:
    """Every planned rung in the scenario's ladder and each searched arm's entry."""
    planned = log.planned()
    sweep.scenario = sweep.scenario.model_copy(update={"ladder": sorted(set(planned))})
    for arm in sweep.manifest.arms:
        if arm.name in log.arms:
            arm.ladder = list[int | float](planned)
    sweep.save()


def _found(report: Report, log: SearchEntry, round_s: float) -> dict[str, Found]:
    """What the search needs of the analysis: each pair of its arms (one per context),
    by its context's name, or its own."""
    from specload.report.crossover import TIE  # loaded with the analysis (pandas)

    found: dict[str, Found] = {}
    for pair in report.pairs:
        if not {pair.on.name, pair.off.name} <= set(log.arms):
            continue
        table, interval = pair.speedup, pair.interval
        name = (f"context {pair.on.context}" if pair.on.context is not None
                else f"{pair.on.name} vs {pair.off.name}")
        found.setdefault(name, Found(
            measured=tuple(log.planned()), c_star=pair.crossover.c_star,
            lo=interval.lo if interval else 0.0,
            hi=interval.hi if interval else float("inf"),
            ties=tuple(int(c) for c in table.loc[table["decision"] == TIE, "concurrency"]),
            elapsed_s=sum(r.spent_s for r in log.rounds), round_s=round_s))
    return found


class Search:
    """The stage of a `ladder: auto` sweep's crossover search, on its compared arms: the
    pass on record (the coarse one, or the last round cut short), then a round per
    refinement, until `search.refine` stops it or an arm does not finish a pass."""

    def __init__(self) -> None:
        self.compared: list[str] = []
        self.log: SearchEntry | None = None
        self.started = 0.0  # when the pass under way began

    def arms(self, sweep: Sweep) -> list[str]:
        return self.compared

    def next(self, sweep: Sweep) -> str | None:
        if self.log is None:
            return self._first(sweep)
        log = self.log
        log.rounds[-1].spent_s += time.monotonic() - self.started
        sweep.save()
        if any(r.status != "done" for a in self.compared for r in sweep.manifest.arm(a).reps):
            say("search: stopped, an arm did not finish its rungs (resume to go on)")
            return None
        report = sweep.analysed("search: stopped")
        if report is None or log.stop is not None:
            return None
        return self._refine(sweep, log, report)

    def _first(self, sweep: Sweep) -> str | None:
        if not sweep.scenario.searching:
            return None
        arms = [sweep.manifest.arm(n) for n in sweep.selected]
        compared = [a for a in arms if a.role in ("spec_on", "spec_off")]
        if {a.role for a in compared} != {"spec_on", "spec_off"}:
            say("search: needs a spec-on and a spec-off arm among the arms run; they run "
                "its coarse pass")
            return None
        self.compared = [a.name for a in compared]
        self.log = _plan(sweep, compared)
        return self._begin(sweep, self.log)

    def _begin(self, sweep: Sweep, log: SearchEntry) -> str:
        _apply(sweep, log)
        self.started = time.monotonic()
        n = len(log.rounds) - 1
        return f"search round {n}" if n else PLANNED

    def _refine(self, sweep: Sweep, log: SearchEntry, report: Report) -> str | None:
        spec = sweep.scenario.search
        assert spec is not None
        round_s = sweep.rung_s * len(self.compared) * sweep.scenario.repeats
        found = _found(report, log, round_s)
        if not found:
            log.stop = "no spec-on/spec-off pair to search a crossover of"
            say(f"search: {log.stop}")
            sweep.save()
            return None
        step = refine_each(spec, found, rounds_done=len(log.rounds) - 1)
        if step.stop is not None:
            log.stop = step.stop
            sweep.save()
            say(f"search: {step.stop} ({len(log.planned())} rungs per arm in "
                f"{len(log.rounds)} pass(es))")
            return None
        n = len(log.rounds)
        log.rounds.append(SearchRound(levels=step.levels, reasons=[p.why for p in step.rungs]))
        for p in step.rungs:
            say(f"search: round {n}: C={p.level}: {p.why}")
        for name in self.compared:
            for rep in sweep.manifest.arm(name).reps:
                rep.status = "pending"
        return self._begin(sweep, log)
