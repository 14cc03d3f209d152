"""An interval on C*: where the crossover lies, given how much each rung's tok/s can move
and how little the rungs say about the curve between them.

A bootstrap. Each draw makes every rung of both arms again: with repeats, the rung's
repeats resampled with replacement and averaged; within a repeat, its window's tok/s
moved by the spread that resampling the window's requests gives
(`client_metrics.tok_s_se`, drawn from its normal limit). The draw's C* follows the
per-repeat rule of `crossover.find_crossover` without a band: after the last rung where
spec-on leads, interpolated in log C to the next (above the ladder's top, inf, when it
leads at every rung; below its bottom, 0, when it leads at none). Between two rungs the
curve's shape is unknown, so each draw's C* stands for a span: `SHAPE` of its bracket's
width in log C either way (within the bracket). On the simulator's profiles the log-C
interpolation missed the true crossing by at most 0.24 of its bracket
(docs/measurement.md), so a coarse ladder's interval spans most of its bracket and
finer rungs narrow it. The interval runs from the lower end that all but (1 - `LEVEL`)
/ 2 of the draws reach up to, to the upper end likewise; an end past the ladder is said
as such ("C* is above C=250"). Seeded: a report is the same every time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVEL = 0.95
DRAWS = 2000
SEED = 20261204
SHAPE = 0.3  # of a bracket's width in log C: how far C* may lie from its interpolation
REPEATS = "repeats"  # what a draw resamples
REQUESTS = "requests"


@dataclass(frozen=True, slots=True)
class Interval:
    """Where C* lies in the central `level` of the bootstrap's draws; 0 is below the
    ladder, inf above it."""

    lo: float
    hi: float
    bottom: float  # the ladder's ends
    top: float
    basis: str  # REPEATS or REQUESTS
    level: float = LEVEL
    name: str = "C*"  # what the interval is on, and how a level of its axis reads
    at: str = "C={:g}"

    def contains(self, c: float) -> bool:
        return self.lo <= c <= self.hi

    @property
    def above(self) -> bool:
        """The interval reaches past the ladder's top rung."""
        return math.isinf(self.hi)

    @property
    def below(self) -> bool:
        return self.lo == 0.0

    def words(self) -> str:
        """"95% interval 21.0-26.1", or where it leaves the ladder, that said plainly."""
        pct, name = f"{self.level:.0%}", self.name
        top, bottom = self.at.format(self.top), self.at.format(self.bottom)
        if self.above and self.lo >= self.top:
            return f"{name} is above {top} ({pct} of the bootstrap's draws)"
        if self.below and self.hi <= self.bottom:
            return f"{name} is below {bottom} ({pct} of the bootstrap's draws)"
        lo = f"below {bottom}" if self.below else f"{self.lo:.3g}"
        hi = f"above {top}" if self.above else f"{self.hi:.3g}"
        text = f"{pct} interval {lo} to {hi}" if self.below or self.above else \
            f"{pct} interval {lo}-{hi}"
        if self.above:
            text += f": {name} may be above {top}"
        elif self.below:
            text += f": {name} may be below {bottom}"
        return f"{text} (bootstrap over {self.basis})"

    def as_dict(self) -> dict[str, object]:
        return {"lo": None if self.below else self.lo, "hi": None if self.above else self.hi,
                "below_ladder": self.below, "above_ladder": self.above,
                "level": self.level, "basis": self.basis, "words": self.words()}


def draw_spans(c: np.ndarray, speedup: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where C* may lie in each row of `speedup` (draws x rungs, at increasing `c`): its
    log-C interpolation after the last rung above 1, `SHAPE` of the bracket's log width
    either way within it; (top, inf) when every rung is above 1, (0, bottom) when none."""
    n = c.size
    on = speedup > 1.0
    some = on.any(axis=1)
    last = np.where(some, n - 1 - np.argmax(on[:, ::-1], axis=1), -1)
    ends = np.concatenate(([0.0], c, [np.inf]))
    low, high = ends[last + 1], ends[last + 2]
    mid = np.flatnonzero(some & (last < n - 1))
    m = last[mid]
    s0, s1 = speedup[mid, m], speedup[mid, m + 1]
    width = np.log(c[m + 1]) - np.log(c[m])
    at = np.log(c[m]) + (s0 - 1.0) / (s0 - s1) * width
    low[mid] = np.exp(np.maximum(at - SHAPE * width, np.log(c[m])))
    high[mid] = np.exp(np.minimum(at + SHAPE * width, np.log(c[m + 1])))
    return low, high


@dataclass(frozen=True, slots=True)
class Columns:
    """Where a pair's per-repeat rows hold the level, the figure whose ratio is the
    speedup (higher is better) and its standard error."""

    level: str = "concurrency"
    value: str = "output_tok_s"
    se: str = "output_tok_s_se"


TOK_S = Columns()


def _arm_draws(rows: pd.DataFrame, levels: np.ndarray, rng: np.random.Generator,
               draws: int, cols: Columns) -> np.ndarray:
    """The figure (tok/s) of every rung of one arm in each draw (draws x rungs)."""
    out = np.empty((draws, levels.size))
    for j, level in enumerate(levels):
        at = rows[(rows[cols.level] == level) & np.isfinite(rows[cols.value])]
        value = at[cols.value].to_numpy(dtype=float)
        se = np.nan_to_num(at[cols.se].to_numpy(dtype=float)) \
            if cols.se in at else np.zeros(value.size)
        pick = rng.integers(0, value.size, size=(draws, value.size)) if value.size > 1 \
            else np.zeros((draws, 1), dtype=int)
        out[:, j] = (value[pick] + se[pick] * rng.standard_normal(pick.shape)).mean(axis=1)
    return out


def c_star_interval(levels: np.ndarray, on: pd.DataFrame, off: pd.DataFrame,
                    draws: int = DRAWS, level: float = LEVEL, cols: Columns = TOK_S,
                    name: str = "C*", at: str = "C={:g}") -> Interval | None:
    """The interval on C* of a pair, from each arm's per-repeat rows (`rep`,
    `concurrency`, `output_tok_s`, `output_tok_s_se`, or the `cols` given) at the pair's
    `levels`; None without a rung both arms measured."""
    levels = np.asarray(sorted(levels), dtype=float)
    if levels.size == 0:
        return None
    rng = np.random.default_rng(SEED)
    speedup = _arm_draws(on, levels, rng, draws, cols) / \
        _arm_draws(off, levels, rng, draws, cols)
    below, above = (np.sort(end) for end in draw_spans(levels, speedup))
    tail = (1.0 - level) / 2
    lo = below[math.floor(tail * draws)]
    hi = above[math.ceil((1.0 - tail) * draws) - 1]
    multi = on.groupby(cols.level)["rep"].nunique().max() > 1
    return Interval(float(lo), float(hi), float(levels[0]), float(levels[-1]),
                    REPEATS if multi else REQUESTS, level, name, at)
