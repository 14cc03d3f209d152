"""Speedup of spec-on over spec-off per concurrency, every crossing of 1, and C*.

Arms are paired by role (spec_on against spec_off; names decide when there is no
manifest). speedup(C) = spec-on system tok/s / spec-off system tok/s. Each rung has a
noise band: the range of the repeat pairs' speedups when there are repeats, else
±2% (`NOISE_BAND`). A rung is decided "on" when its whole band is above 1, "off" when
it is below 1 and a "tie" when the band holds 1; with an SLO the decision is the arm
that meets it with more tok/s, and a rung where neither meets it is left out.

The verdict never says "always" or "never" while a rung is a tie. C* is where
speculation stops paying off: after the last "on" rung, the curve's last downward
crossing of 1 before the first "off" rung, interpolated linearly in log C (or the last
"on" rung itself when the SLO, not the speedup, decides). Every crossing of 1 and
every rise of the curve is reported too, so a non-monotone curve shows. With repeats,
C* is also computed per repeat pair (without a band) and its range reported, and the
repeats agree (`agreement`) when more of them share one verdict (its bracket for C*, or
"always"/"never") than any other, at least two. C* has an interval, a bootstrap over the
repeats or the rung windows' requests (`c_star_interval`).
`find_crossover` takes any increasing load level: open-loop runs use it on arrival
rates (`rate_axis.py`), which need not be whole numbers.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from specload.report.c_star_interval import Interval, c_star_interval
from specload.report.run_files import ArmSource
from specload.report.slo import SloTarget

ALWAYS = "always"  # on at every rung measured
NEVER = "never"  # off at every rung measured
CROSSES = "crosses"  # on, then off from some rung on: C* exists
INCONCLUSIVE = "inconclusive"  # ties or a non-monotone curve leave no clean answer
UNKNOWN = "unknown"  # no concurrency measured by both arms
SLO_UNMET = "slo_unmet"  # neither arm meets the SLO at any rung
ON, OFF, TIE, NEITHER = "on", "off", "tie", "neither"
NOISE_BAND = 0.02  # without repeats, a speedup within 1 ± 2% is a tie
BAND_REPEATS = "repeats' spread"
BAND_DEFAULT = f"±{NOISE_BAND:.0%}"
Level = int | float  # a rung's level: a user count, or an arrival rate


def rep_tok_s(per_rep: pd.DataFrame, arms: Sequence[str]) -> pd.DataFrame:
    """Each arm's system tok/s per repeat and rung (arm, rep, concurrency, output_tok_s);
    a rung a search measured twice in a repeat counts once there, at its mean."""
    rows = per_rep[per_rep["arm"].isin(arms)]
    return rows.groupby(["arm", "rep", "concurrency"], as_index=False)["output_tok_s"].mean()


def noise_band(ratio: float, rep_ratios: Sequence[float]) -> tuple[float, float]:
    """A ratio's noise band, the verdicts' rule: the per-repeat ratios' range with two
    repeats or more, else the ratio ± NOISE_BAND (widened to hold the ratio itself)."""
    lo, hi = ((min(rep_ratios), max(rep_ratios)) if len(rep_ratios) > 1
              else (ratio - NOISE_BAND, ratio + NOISE_BAND))
    return min(lo, ratio), max(hi, ratio)


@dataclass(frozen=True, slots=True)
class Crossing:
    """The mean speedup curve crossing 1 between two rungs."""

    c: float  # interpolated in log C
    direction: str  # "down": speculation stops paying off; "up": it pays off again
    below: Level  # the rungs around the crossing
    above: Level
    within_noise: bool  # a rung beside it is a tie: the crossing may be noise

    def as_dict(self) -> dict[str, object]:
        return {"c": self.c, "direction": self.direction, "between": [self.below, self.above],
                "within_noise": self.within_noise}


@dataclass(frozen=True, slots=True)
class Crossover:
    """The verdict on one speedup curve, its C* and the on/off policy it implies."""

    verdict: str
    c_star: float | None = None
    below: Level | None = None  # the last rung where speculation still paid off
    above: Level | None = None  # the first rung from which it no longer does
    speculate_to: float | None = None  # C up to which to speculate; None: nowhere
    off_above: bool = False  # turn speculation off above speculate_to
    crossings: tuple[Crossing, ...] = ()
    ties: tuple[Level, ...] = ()  # rungs inside the noise band
    behind: tuple[Level, ...] = ()  # rungs decided "off"
    unmet: tuple[Level, ...] = ()  # rungs where neither arm meets the SLO
    rises: tuple[tuple[Level, Level, bool], ...] = ()  # (from C, to C, beyond the noise)
    band: str = BAND_DEFAULT

    @property
    def monotone(self) -> bool:
        return not self.rises

    def as_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "c_star": self.c_star, "below": self.below,
                "above": self.above, "speculate_to": self.speculate_to,
                "off_above": self.off_above, "band": self.band,
                "crossings": [c.as_dict() for c in self.crossings],
                "ties": list(self.ties), "behind": list(self.behind),
                "slo_unmet": list(self.unmet), "monotone": self.monotone,
                "rises": [{"from": a, "to": b, "beyond_noise": big}
                          for a, b, big in self.rises]}


@dataclass(slots=True)
class PairResult:
    on: ArmSource
    off: ArmSource
    # concurrency, output_tok_s_on/_off, speedup, speedup_min/_max, band_lo/_hi,
    # decision, batch_on/_off (the servers' mean running requests), p99s per arm
    speedup: pd.DataFrame
    crossover: Crossover  # on raw system tok/s
    rep_c_stars: list[Crossover] = field(default_factory=list)
    goodput: Crossover | None = None  # on SLO goodput, when the scenario has an SLO
    interval: Interval | None = None  # on C* of the tok/s crossover (`c_star_interval`)

    @property
    def decision(self) -> Crossover:
        """The crossover the recommendation follows: SLO goodput if given, else tok/s."""
        return self.goodput or self.crossover

    def c_star_range(self) -> tuple[float, float] | None:
        values = [c.c_star for c in self.rep_c_stars if c.c_star is not None]
        return (min(values), max(values)) if len(values) >= 2 else None

    def agreement(self) -> Agreement | None:
        return agreement(self.rep_c_stars) if self.rep_c_stars else None


def bracket(cross: Crossover) -> tuple[str, Level | None, Level | None]:
    """What two repeats must share to give the same verdict: the verdict, and where it
    crosses, the two rungs around C*."""
    return (cross.verdict, cross.below, cross.above) if cross.verdict == CROSSES else (
        cross.verdict, None, None)


def verdict_words(cross: Crossover) -> str:
    """A repeat's verdict as it counts for agreement: "crosses between C=2 and C=4"."""
    return (f"crosses between C={cross.below} and C={cross.above}"
            if cross.verdict == CROSSES else f"says {cross.verdict}")


@dataclass(frozen=True, slots=True)
class Agreement:
    """How the repeats' own verdicts (`bracket`) agree: settled when at least two repeats
    hold the most common one and no other verdict is held as often."""

    each: tuple[Crossover, ...]  # every repeat's, in order

    @property
    def _ranked(self) -> list[tuple[tuple, int]]:
        return Counter(bracket(c) for c in self.each).most_common()

    @property
    def verdict(self) -> Crossover:
        """The first repeat holding the most common verdict."""
        top = self._ranked[0][0]
        return next(c for c in self.each if bracket(c) == top)

    @property
    def repeats(self) -> int:
        return self._ranked[0][1]

    @property
    def settled(self) -> bool:
        ranked = self._ranked
        return ranked[0][1] >= 2 and (len(ranked) == 1 or ranked[1][1] < ranked[0][1])

    def words(self) -> str:
        if self.settled:
            return f"{self.repeats} of {len(self.each)} repeats: {verdict_words(self.verdict)}"
        return "the repeats disagree: " + "; ".join(
            f"repeat {n} {verdict_words(c)}" for n, c in enumerate(self.each, 1))

    def as_dict(self) -> dict[str, object]:
        verdict, below, above = bracket(self.verdict)
        return {"verdict": verdict, "below": below, "above": above,
                "repeats": self.repeats, "of": len(self.each), "settled": self.settled}


def agreement(crossovers: Sequence[Crossover]) -> Agreement:
    """How the repeats' verdicts, in order, agree."""
    return Agreement(tuple(crossovers))


def rung_decisions(band_lo: Sequence[float], band_hi: Sequence[float]) -> list[str]:
    """ON where the whole band is above 1, OFF where it is below, else TIE."""
    return [ON if lo > 1.0 else OFF if hi < 1.0 else TIE
            for lo, hi in zip(band_lo, band_hi, strict=True)]


def _level(x: float) -> Level:
    """A rung's level as given: a user count stays whole, a rate may be fractional."""
    x = float(x)
    return int(x) if x.is_integer() else x


def log_crossing(c0: float, c1: float, s0: float, s1: float) -> float:
    """Where a ratio going from s0 (at c0) to s1 (at c1) reaches 1, linear in log C."""
    t = (s0 - 1.0) / (s0 - s1)
    return float(math.exp(math.log(c0) + t * (math.log(c1) - math.log(c0))))


def _crossings(c: np.ndarray, s: np.ndarray, raw: Sequence[str]) -> list[Crossing]:
    out = []
    for m in range(c.size - 1):
        down = s[m] >= 1.0 > s[m + 1]
        if down or s[m] < 1.0 <= s[m + 1]:
            clean = (raw[m], raw[m + 1]) == ((ON, OFF) if down else (OFF, ON))
            out.append(Crossing(log_crossing(c[m], c[m + 1], s[m], s[m + 1]),
                                "down" if down else "up", _level(c[m]), _level(c[m + 1]),
                                not clean))
    return out


def _rises(c: np.ndarray, s: np.ndarray, lo: np.ndarray,
           hi: np.ndarray) -> list[tuple[Level, Level, bool]]:
    return [(_level(c[m]), _level(c[m + 1]), bool(lo[m + 1] > hi[m]))
            for m in range(c.size - 1) if s[m + 1] > s[m]]


def find_crossover(
    concurrency: Sequence[float], speedup: Sequence[float],
    band_lo: Sequence[float] | None = None, band_hi: Sequence[float] | None = None,
    decisions: Sequence[str] | None = None, from_speedup: Sequence[bool] | None = None,
    band: str = BAND_DEFAULT,
) -> Crossover:
    """Verdict, C* and crossings of a speedup curve (points without a speedup are ignored).

    Without `band_lo`/`band_hi` each rung's band is its speedup ± NOISE_BAND. The
    verdict follows `decisions` (one per rung, ON/OFF/TIE/NEITHER; default: from the
    band); `from_speedup` marks rungs whose decision the speedup made, the only ones
    between which C* is interpolated.
    """
    c = np.asarray(concurrency, dtype=float)
    s = np.asarray(speedup, dtype=float)
    lo = s - NOISE_BAND if band_lo is None else np.asarray(band_lo, dtype=float)
    hi = s + NOISE_BAND if band_hi is None else np.asarray(band_hi, dtype=float)
    lo, hi = np.fmin(lo, s), np.fmax(hi, s)  # a NaN band edge falls back to the speedup
    raw = rung_decisions(lo, hi)
    chosen = np.asarray(raw if decisions is None else list(decisions), dtype=object)
    by_speedup = np.asarray([True] * c.size if from_speedup is None else list(from_speedup))
    keep = np.isfinite(c) & np.isfinite(s) & (c > 0)
    order = np.argsort(c[keep], kind="stable")
    c, s, lo, hi = (a[keep][order] for a in (c, s, lo, hi))
    raw = [d for d, k in zip(raw, keep, strict=True) if k]
    raw = [raw[i] for i in order]
    chosen, by_speedup = chosen[keep][order], by_speedup[keep][order]
    common = Crossover(UNKNOWN, crossings=tuple(_crossings(c, s, raw)),
                       rises=tuple(_rises(c, s, lo, hi)), band=band,
                       unmet=tuple(_level(x) for x in c[chosen == NEITHER]))
    if c.size == 0:
        return common
    # NEITHER rungs take no part in the verdict: no arm gives goodput there.
    idx = np.flatnonzero(chosen != NEITHER)
    if idx.size == 0:
        return replace(common, verdict=SLO_UNMET)
    d = chosen[idx]
    common = replace(common, ties=tuple(_level(x) for x in c[idx][d == TIE]),
                     behind=tuple(_level(x) for x in c[idx][d == OFF]))
    top, bottom = _level(c[idx[-1]]), _level(c[idx[0]])
    ons = np.flatnonzero(d == ON)
    if (d == ON).all():
        return replace(common, verdict=ALWAYS, below=top, speculate_to=float(top))
    if not ons.size:
        verdict = INCONCLUSIVE if (d == TIE).any() else NEVER
        return replace(common, verdict=verdict, above=bottom, off_above=True)
    last_on = idx[ons[-1]]
    offs_after = [i for i in idx if i > last_on and chosen[i] == OFF]
    if not offs_after:
        if last_on == idx[-1]:  # ahead at the top, a dip or a tie somewhere below
            return replace(common, verdict=INCONCLUSIVE, below=top, speculate_to=float(top))
        return replace(common, verdict=INCONCLUSIVE, below=_level(c[last_on]),
                       speculate_to=float(c[last_on]), off_above=True)
    first_off = offs_after[0]
    c_star = float(c[last_on])
    if by_speedup[last_on] and by_speedup[first_off]:
        downs = [m for m in range(last_on, first_off) if s[m] >= 1.0 > s[m + 1]]
        if downs:
            m = downs[-1]
            c_star = log_crossing(c[m], c[m + 1], s[m], s[m + 1])
    return replace(common, verdict=CROSSES, c_star=c_star, below=_level(c[last_on]),
                   above=_level(c[first_off]), speculate_to=c_star, off_above=True)


def pair_arms(arms: Sequence[ArmSource]) -> list[tuple[ArmSource, ArmSource]]:
    """(spec_on, spec_off) pairs: each with the only counterpart, in order, or all pairs;
    arms run at several contexts pair only at the same context."""
    on = [a for a in arms if a.role == "spec_on"]
    off = [a for a in arms if a.role == "spec_off"]
    if not on or not off:
        return []
    if any(a.context is not None for a in arms):
        return [(a, b) for a in on for b in off if a.context == b.context]
    if len(off) == 1 or len(on) == 1 or len(on) != len(off):
        return list(itertools.product(on, off))
    return list(zip(on, off, strict=True))


# Columns of each arm carried into the pair table (suffixed _on / _off).
_ARM_COLUMNS = {"output_tok_s": "output_tok_s", "server_running_mean": "batch",
                "ttft_p99_ms": "ttft_p99_ms", "tpot_p99_ms": "tpot_p99_ms"}
PAIR_COLUMNS = ("concurrency", "output_tok_s_on", "output_tok_s_off", "speedup",
                "speedup_min", "speedup_max", "band_lo", "band_hi", "decision", "batch_on",
                "batch_off", "ttft_p99_ms_on", "ttft_p99_ms_off", "tpot_p99_ms_on",
                "tpot_p99_ms_off")


def _ratio_table(per_arm_on: pd.DataFrame, per_arm_off: pd.DataFrame) -> pd.DataFrame:
    merged = per_arm_on.merge(per_arm_off, on="concurrency", suffixes=("_on", "_off"))
    merged["speedup"] = merged["output_tok_s_on"] / merged["output_tok_s_off"]
    return merged.sort_values("concurrency").reset_index(drop=True)


def _arm_rows(summary: pd.DataFrame, arm: str) -> pd.DataFrame:
    rows = summary.loc[summary["arm"] == arm].rename(columns=_ARM_COLUMNS)
    return rows.reindex(columns=["concurrency", *_ARM_COLUMNS.values()])


def _slo_decisions(table: pd.DataFrame, slo: SloTarget) -> tuple[list[str], list[bool]]:
    """Per rung: the arm meeting the SLO with more tok/s; the speedup decides when both do."""
    on_ok = slo.meets(table["ttft_p99_ms_on"], table["tpot_p99_ms_on"])
    off_ok = slo.meets(table["ttft_p99_ms_off"], table["tpot_p99_ms_off"])
    both = on_ok & off_ok
    decisions = [raw if b else ON if a else OFF if o else NEITHER
                 for raw, a, o, b in zip(table["decision"], on_ok, off_ok, both, strict=True)]
    return decisions, [bool(b) for b in both]


def analyse_pair(
    on: ArmSource, off: ArmSource, summary: pd.DataFrame, per_rep: pd.DataFrame,
    slo: SloTarget | None = None,
) -> PairResult:
    """Speedup per concurrency with its band and decision, crossings and C*.

    With an SLO, `goodput` is the crossover on SLO goodput as well.
    """
    table = _ratio_table(_arm_rows(summary, on.name), _arm_rows(summary, off.name))
    cols = ["concurrency", "output_tok_s"]
    rep_curves = []
    reps = rep_tok_s(per_rep, [on.name, off.name])
    reps_on, reps_off = (reps[reps["arm"] == a.name].drop(columns="arm") for a in (on, off))
    for rep in sorted(set(reps_on["rep"]) & set(reps_off["rep"])):
        curve = _ratio_table(reps_on.loc[reps_on["rep"] == rep, cols],
                             reps_off.loc[reps_off["rep"] == rep, cols])
        rep_curves.append(curve[["concurrency", "speedup"]].assign(rep=rep))
    multi = len(rep_curves) > 1
    if multi:
        spread = pd.concat(rep_curves).groupby("concurrency")["speedup"].agg(["min", "max"])
        spread.columns = ["speedup_min", "speedup_max"]
        table = table.merge(spread, on="concurrency", how="left")
    table = table.reindex(columns=list(PAIR_COLUMNS))
    band = BAND_REPEATS if table["speedup_min"].notna().any() else BAND_DEFAULT
    table["band_lo"] = table["speedup_min"].fillna(table["speedup"] - NOISE_BAND)
    table["band_hi"] = table["speedup_max"].fillna(table["speedup"] + NOISE_BAND)
    table["decision"] = rung_decisions(np.fmin(table["band_lo"], table["speedup"]),
                                       np.fmax(table["band_hi"], table["speedup"]))
    args = (table["concurrency"], table["speedup"], table["band_lo"], table["band_hi"])
    crossover = find_crossover(*args, band=band)
    goodput = None
    if slo is not None:
        decisions, from_speedup = _slo_decisions(table, slo)
        table["slo_decision"] = decisions
        goodput = find_crossover(*args, decisions=decisions, from_speedup=from_speedup,
                                 band=band)
    rep_c_stars = [find_crossover(r["concurrency"], r["speedup"], r["speedup"], r["speedup"])
                   for r in rep_curves]
    both = table.loc[np.isfinite(table["speedup"]), "concurrency"].to_numpy()
    interval = c_star_interval(both, per_rep[per_rep["arm"] == on.name],
                               per_rep[per_rep["arm"] == off.name])
    return PairResult(on, off, table, crossover, rep_c_stars if multi else [], goodput,
                      interval)
