"""Speedup of spec-on over spec-off per concurrency, and the crossover concurrency C*.

Arms are paired by role (spec_on against spec_off; names decide when there is no
manifest). speedup(C) = spec-on system tok/s / spec-off system tok/s. C* is where the
speedup crosses 1 for the last time and stays below, interpolated linearly in log C
between the two rungs around the crossing. With repeats, C* is also computed per
repeat pair and its range reported.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from specload.report.run_files import ArmSource

ALWAYS = "always"  # spec-on ahead at every measured concurrency
NEVER = "never"  # spec-on behind already at the lowest concurrency
CROSSES = "crosses"
UNKNOWN = "unknown"  # no concurrency measured by both arms


@dataclass(frozen=True, slots=True)
class Crossover:
    """C* of one speedup curve, or why there is none."""

    verdict: str  # ALWAYS, NEVER, CROSSES or UNKNOWN
    c_star: float | None = None
    below: int | None = None  # the last rung where speculation still paid off
    above: int | None = None  # the first rung from which it no longer does

    def as_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "c_star": self.c_star,
                "below": self.below, "above": self.above}


@dataclass(slots=True)
class PairResult:
    on: ArmSource
    off: ArmSource
    speedup: pd.DataFrame  # concurrency, speedup, speedup_min, speedup_max
    crossover: Crossover
    rep_c_stars: list[Crossover] = field(default_factory=list)

    def c_star_range(self) -> tuple[float, float] | None:
        values = [c.c_star for c in self.rep_c_stars if c.c_star is not None]
        return (min(values), max(values)) if len(values) >= 2 else None


def find_crossover(concurrency: Sequence[float], speedup: Sequence[float]) -> Crossover:
    """C* in log C for a speedup curve (NaN points are ignored)."""
    c = np.asarray(concurrency, dtype=float)
    s = np.asarray(speedup, dtype=float)
    keep = np.isfinite(c) & np.isfinite(s) & (c > 0)
    c, s = c[keep], s[keep]
    order = np.argsort(c)
    c, s = c[order], s[order]
    if c.size == 0:
        return Crossover(UNKNOWN)
    paying = s >= 1.0
    if paying[-1]:
        return Crossover(ALWAYS, below=int(c[-1]))
    if not paying.any():
        return Crossover(NEVER, above=int(c[0]))
    j = int(np.flatnonzero(paying)[-1]) + 1  # first rung of the final run below 1
    x0, x1 = math.log(c[j - 1]), math.log(c[j])
    t = (s[j - 1] - 1.0) / (s[j - 1] - s[j])
    return Crossover(CROSSES, float(math.exp(x0 + t * (x1 - x0))), int(c[j - 1]), int(c[j]))


def pair_arms(arms: Sequence[ArmSource]) -> list[tuple[ArmSource, ArmSource]]:
    """(spec_on, spec_off) pairs: each with the only counterpart, in order, or all pairs."""
    on = [a for a in arms if a.role == "spec_on"]
    off = [a for a in arms if a.role == "spec_off"]
    if not on or not off:
        return []
    if len(off) == 1 or len(on) == 1 or len(on) != len(off):
        return list(itertools.product(on, off))
    return list(zip(on, off, strict=True))


def _ratio_table(per_arm_on: pd.DataFrame, per_arm_off: pd.DataFrame) -> pd.DataFrame:
    merged = per_arm_on.merge(per_arm_off, on="concurrency", suffixes=("_on", "_off"))
    merged["speedup"] = merged["output_tok_s_on"] / merged["output_tok_s_off"]
    return merged.sort_values("concurrency").reset_index(drop=True)


def analyse_pair(
    on: ArmSource, off: ArmSource, summary: pd.DataFrame, per_rep: pd.DataFrame
) -> PairResult:
    """Speedup per concurrency (with its range over repeat pairs) and C*."""
    cols = ["concurrency", "output_tok_s"]
    table = _ratio_table(summary.loc[summary["arm"] == on.name, cols],
                         summary.loc[summary["arm"] == off.name, cols])
    rep_curves = []
    reps_on = per_rep[per_rep["arm"] == on.name]
    reps_off = per_rep[per_rep["arm"] == off.name]
    for rep in sorted(set(reps_on["rep"]) & set(reps_off["rep"])):
        curve = _ratio_table(reps_on.loc[reps_on["rep"] == rep, cols],
                             reps_off.loc[reps_off["rep"] == rep, cols])
        rep_curves.append(curve[["concurrency", "speedup"]].assign(rep=rep))
    if rep_curves:
        spread = pd.concat(rep_curves).groupby("concurrency")["speedup"].agg(["min", "max"])
        spread.columns = ["speedup_min", "speedup_max"]
        table = table.merge(spread, on="concurrency", how="left")
    speedup = table.reindex(columns=["concurrency", "output_tok_s_on", "output_tok_s_off",
                                     "speedup", "speedup_min", "speedup_max"])
    rep_c_stars = [find_crossover(c["concurrency"], c["speedup"]) for c in rep_curves]
    return PairResult(on, off, speedup, find_crossover(table["concurrency"], table["speedup"]),
                      rep_c_stars if len(rep_curves) > 1 else [])
