"""The adaptive crossover search (`ladder: auto`) as pure data and pure rules.

`coarse` plans the first pass: a geometric ladder from `min_concurrency` to
`max_concurrency`, rungs at most `COARSE_RATIO` apart. After each pass the run is
analysed, and `refine` turns what the analysis found (`Found`: the rungs measured so
far, C*, its interval and the rungs whose noise band holds 1) into the next round: the
rungs to add, each with its reason, or why the search stops. A refinement round places
two rungs around the estimated C* inside the interval, a third of the interval apart
in log C while more rounds are left and `precision` either side in the last one (both
on one side, the second further out, when a measured rung already stands on the
other), and measures again each rung of the interval whose noise band holds 1 (once). The search
stops once C*'s interval is within ±`precision`, when it lies past an end of the
search's range, when no whole concurrency is left inside it, or when the rounds, the
rungs per arm or the minutes are spent. Every rung a round adds runs on every compared
arm, one Locust run (and one server start) per arm and round. Pairs searched together
(one per context) each add their own rungs to a round (`refine_each`), until every
pair's search has stopped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specload.config.settings import Search

AUTO = "auto"  # `ladder: auto`
COARSE_RATIO = 16.0


def level_words(c: float) -> str:
    """A concurrency as the search says it: 16, 17.8, 1000."""
    return f"{c:.1f}".removesuffix(".0")


def coarse(spec: Search) -> list[int]:
    """The first pass: geometric from the lowest to the highest concurrency, at least
    three rungs, neighbours at most `COARSE_RATIO` apart."""
    lo, hi = spec.min_concurrency, spec.max_concurrency or spec.min_concurrency
    n = max(3, math.ceil(math.log(hi / lo) / math.log(COARSE_RATIO) - 1e-9) + 1)
    levels = {round(lo * (hi / lo) ** (i / (n - 1))) for i in range(n)}
    return sorted(levels)


def known_ratio(precision: float) -> float:
    """How far apart an interval's ends may be for C* to be known to ±precision."""
    return (1.0 + precision) / (1.0 - precision)


@dataclass(frozen=True, slots=True)
class Found:
    """What the last analysis says, as the search needs it."""

    measured: tuple[int, ...]  # every rung run per arm, a rung measured twice twice
    c_star: float | None
    lo: float  # C*'s interval; 0: below the lowest rung, inf: above the highest
    hi: float
    ties: tuple[int, ...]  # rungs whose speedup's noise band holds 1
    elapsed_s: float  # the search so far
    round_s: float  # what one more rung costs, every compared arm together


@dataclass(frozen=True, slots=True)
class Planned:
    level: int
    why: str


@dataclass(frozen=True, slots=True)
class Step:
    """The next round's rungs, or why there is none (`stop`)."""

    rungs: tuple[Planned, ...] = ()
    stop: str | None = None

    @property
    def levels(self) -> list[int]:
        return sorted(p.level for p in self.rungs)


def _estimate(found: Found, lo: float, hi: float) -> float:
    c = found.c_star
    return c if c is not None and lo < c < hi else math.sqrt(lo * hi)


def _around(estimate: float, lo: float, hi: float, width: float, tight: float,
            measured: Sequence[int]) -> list[int]:
    """Whole concurrencies `width` apart in log C around `estimate`, strictly inside (lo,
    hi), rounded inwards, one each side. A side where a measured rung already stands
    within `tight` (the precision's width) of the estimate gets none, and the other side
    gets a second, a whole `width` further out; a rung that would leave the interval goes
    halfway to its end."""
    half, near = math.sqrt(width), math.sqrt(tight)
    below = any(estimate / near <= m <= estimate for m in measured)
    above = any(estimate <= m <= estimate * near for m in measured)
    wanted = [] if below else [estimate / half]
    wanted += [] if above else [estimate * half]
    if below != above:
        wanted.append(estimate * half * width if below else estimate / half / width)
    picks = set()
    for x in wanted:
        x = x if lo < x < hi else math.sqrt((lo if x <= lo else hi) * estimate)
        picks.add(math.ceil(x - 1e-9) if x < estimate else math.floor(x + 1e-9))
    return sorted(x for x in picks if lo < x < hi and x not in measured)


def refine(spec: Search, found: Found, rounds_done: int) -> Step:
    """The next round of the search, or why it stops (pure)."""
    bottom, top = spec.min_concurrency, spec.max_concurrency or spec.min_concurrency
    lo, hi = found.lo, found.hi
    if math.isinf(hi) and lo >= top:
        return Step(stop=f"C* is above C={top}, the search's max_concurrency: speculation "
                         "paid at every rung")
    if lo == 0.0 and hi <= bottom:
        return Step(stop=f"C* is below C={bottom}, the search's min_concurrency: "
                         "speculation paid at no rung")
    lo, hi = max(lo, bottom), min(hi, top)
    between = f"between C={level_words(lo)} and C={level_words(hi)}"
    if hi / lo <= known_ratio(spec.precision) + 1e-9:
        return Step(stop=f"C* is known to ±{spec.precision:.0%}: {between}")
    if rounds_done >= spec.rounds:
        return Step(stop=f"the refinement rounds are spent (search.rounds: {spec.rounds}); "
                         f"C* lies {between}")
    estimate = _estimate(found, lo, hi)
    last = rounds_done + 1 == spec.rounds
    width = known_ratio(spec.precision) if last else max(known_ratio(spec.precision),
                                                         (hi / lo) ** (1 / 3))
    inside = f"inside C*'s interval C={level_words(lo)}-{level_words(hi)}"
    rungs = [Planned(x, f"{'below' if x < estimate else 'above'} the estimate "
                        f"C*≈{estimate:.1f}, {inside}")
             for x in _around(estimate, lo, hi, width, known_ratio(spec.precision),
                              found.measured)]
    rungs += [Planned(x, f"measured again: its speedup's noise band holds 1, {inside}")
              for x in sorted(set(found.ties))
              if lo <= x <= hi and found.measured.count(x) == 1]
    if not rungs:
        return Step(stop=f"no whole concurrency is left to try {between}")
    rungs = _within_budget(spec, found, sorted(rungs, key=lambda p: abs(
        math.log(p.level / estimate))))
    if not rungs:
        return Step(stop=f"the budget is spent ({_budget_words(spec)}); C* lies {between}")
    return Step(tuple(sorted(rungs, key=lambda p: p.level)))


def refine_each(spec: Search, founds: Mapping[str, Found], rounds_done: int) -> Step:
    """The next round of several crossovers searched together (one pair per context):
    each pair's own rungs, where its answer is still uncertain, taken in turn within the
    budget and run by every compared arm; the search stops once every pair's has. One
    pair is `refine` itself."""
    steps = {name: refine(spec, found, rounds_done) for name, found in founds.items()}
    if len(steps) == 1:
        return next(iter(steps.values()))
    going = {name: step for name, step in steps.items() if step.stop is None}
    if not going:
        return Step(stop="; ".join(f"{name}: {step.stop}" for name, step in steps.items()))
    by_level: dict[int, Planned] = {}
    for at in range(max(len(step.rungs) for step in going.values())):
        for name, step in going.items():
            if at < len(step.rungs):
                rung = step.rungs[at]
                by_level.setdefault(rung.level, Planned(rung.level, f"{name}: {rung.why}"))
    rungs = _within_budget(spec, next(iter(founds.values())), list(by_level.values()))
    return Step(tuple(sorted(rungs, key=lambda p: p.level)))


def _within_budget(spec: Search, found: Found, rungs: Sequence[Planned]) -> list[Planned]:
    """The rungs nearest the estimate that the rungs and minutes left allow."""
    room = spec.max_rungs - len(found.measured)
    if spec.max_minutes:
        left_s = spec.max_minutes * 60.0 - found.elapsed_s
        room = min(room, int(left_s // found.round_s) if found.round_s > 0 else room)
    return list(rungs[:max(0, room)])


def _budget_words(spec: Search) -> str:
    minutes = f", max_minutes: {spec.max_minutes:g}" if spec.max_minutes else ""
    return f"search.max_rungs: {spec.max_rungs}{minutes}"
