"""What a sweep has left to run, as data: a pass of rounds of Locust runs, built purely.

The manifest says what the sweep plans (its arms, their repeats and rungs, a search's
passes, the tie-break repeats and the verification arm the stages added) and the run
folder says what each repeat finished. `build` turns the two into the `Pass` the runner
runs next, and nothing else decides what runs: a fresh sweep, a `--resume`, a search
round and a tie-break repeat differ only in the manifest they start from. A pass runs
its repeats in rounds (repeat 1 of every arm, then repeat 2, ...), each repeat's
missing rungs in one Locust `Run`; an interleaved round (`interleave`) keeps every
arm's server up and runs rung by rung, one `Run` per arm and rung (with `contexts`, a
round per context: one context's servers at a time).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from specload.config.scenario import Scenario
from specload.runfiles.manifest import ArmEntry, Manifest, RepEntry

Level = int | float  # what a rung steps: users, sessions, or an open load's arrival rate


@dataclass(frozen=True)
class Run:
    """One Locust run: some rungs of one repeat of one arm (none: its repeat has every
    rung on disk and is only to be marked done)."""

    arm: str
    rep: int
    levels: tuple[Level, ...]


@dataclass(frozen=True)
class Round:
    """Repeat n of each arm that has it to run. `together`: every arm's server stays up
    through the round and the runs go rung by rung across the arms."""

    runs: tuple[Run, ...]
    together: bool = False

    def repeats(self) -> list[tuple[str, int]]:
        """The round's (arm, repeat)s, in the order of their first run."""
        return list(dict.fromkeys((r.arm, r.rep) for r in self.runs))

    def last_run(self, arm: str, rep: int) -> Run:
        return [r for r in self.runs if (r.arm, r.rep) == (arm, rep)][-1]


@dataclass(frozen=True)
class Pass:
    """What the runner runs before a stage next looks at the results. `why`: what the
    pass adds ("search round 1", "tie-break repeat 3"), or None for the planned rungs."""

    rounds: tuple[Round, ...]
    why: str | None = None

    def levels(self) -> list[Level]:
        """Every rung the pass runs, on every arm."""
        return [x for rnd in self.rounds for run in rnd.runs for x in run.levels]


def planned(scenario: Scenario, manifest: Manifest, arm: str) -> list[Level]:
    """Every rung each repeat of the arm runs: the crossover search's passes so far for
    the arms it compares (a rung measured twice, twice), else the scenario's."""
    search = manifest.search
    if search is not None and arm in search.arms:
        return list(search.planned())
    return list(scenario.levels)


def missing(scenario: Scenario, manifest: Manifest, arm: str,
            finished: Sequence[Level]) -> list[Level]:
    """The rungs a repeat of the arm has still to run, given those it `finished` (one
    planned twice and finished once: once more); for a kind whose rungs only mean
    something together (load steps), all of them in order while any is missing."""
    rungs = planned(scenario, manifest, arm)
    left = Counter(rungs) - Counter(finished)
    if scenario.workload_kind.whole_runs:
        return rungs if left else []
    return sorted(left.elements())


def _pending(arms: Sequence[ArmEntry]) -> Iterator[list[tuple[ArmEntry, RepEntry]]]:
    """Repeat 1 of every arm, then repeat 2 of every arm, ...: the repeats not done."""
    for rnd in itertools.zip_longest(*([(a, rep) for rep in a.reps] for a in arms)):
        pending = [(a, rep) for a, rep in filter(None, rnd) if rep.status != "done"]
        if pending:
            yield pending


def _round(todo: list[tuple[str, int, list[Level]]], together: bool) -> Round:
    if not together:
        return Round(tuple(Run(arm, rep, tuple(levels)) for arm, rep, levels in todo))
    runs = [Run(arm, rep, ()) for arm, rep, levels in todo if not levels]
    for level in sorted({x for *_, levels in todo for x in levels}):
        runs += [Run(arm, rep, (level,) * levels.count(level))
                 for arm, rep, levels in todo if level in levels]
    return Round(tuple(runs), together=True)


def build(scenario: Scenario, manifest: Manifest, arms: Sequence[str],
          finished: Mapping[str, Sequence[Level]], why: str | None = None) -> Pass:
    """The pass that runs what the named `arms` have left: each repeat not done, in
    rounds, its rungs not among those its folder `finished` (by the repeat's `dir`)."""
    entries = [manifest.arm(name) for name in arms]
    rounds = []
    for pending in _pending(entries):
        todo = [(a.name, rep.rep, missing(scenario, manifest, a.name, finished.get(rep.dir, ())))
                for a, rep in pending]
        if not scenario.interleave:
            rounds.append(_round(todo, False))
            continue
        # arms at different contexts are different comparisons: each context's arms are up
        # together, one context after another (their start lines may share a port)
        contexts = [manifest.arm(name).context for name, *_ in todo]
        for context in dict.fromkeys(contexts):
            rounds.append(_round([t for t, c in zip(todo, contexts, strict=True)
                                  if c == context], True))
    return Pass(tuple(rounds), why)
