"""The break-even acceptance map: the speedup over acceptance length x C, and where it is 1.

A run whose spec-on arms were set to mean acceptance lengths (an `acceptance:` list;
`ArmSource.acceptance`) has one spec-on/spec-off pair per length. Each pair's speedup per
C is a row of the map. At each C the break-even acceptance is where the speedup crosses
1 between two neighbouring lengths, linear in acceptance (the speedup grows with
acceptance at every C); below the lowest length measured or above the highest it is only
bounded. The lengths are what each arm's server reported at that C where every mapped
arm reported one (a real engine's knob may deliver less than it was set to: drafts
shorter than their maximum), else what they were set to. C* per length is that pair's
crossover, so C* is a function of acceptance. A spec-on arm whose acceptance was not
set (the real drafter) is placed on the map at the acceptance its server reported
(`accept_len`) with its own speedup, and its margin is that acceptance minus the
break-even at each rung; at the last rung below its C* (the recommendation's bound) it
says how far acceptance may fall before speculating there stops paying.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.crossover import PairResult
from specload.report.run_files import ArmSource

BELOW, ABOVE = "below", "above"  # a break-even only bounded by the lengths measured


@dataclass(frozen=True, slots=True)
class BreakEven:
    """The acceptance length at which speculation breaks even at one C."""

    concurrency: float
    length: float  # the bound when `bound` is set
    bound: str = ""  # BELOW: pays at every length measured; ABOVE: at none

    def words(self) -> str:
        if self.bound == BELOW:
            return f"below {self.length:.3g}"
        if self.bound == ABOVE:
            return f"above {self.length:.3g}"
        return f"{self.length:.2f}"


def break_even(lengths: Sequence[float], speedups: Sequence[float], c: float) -> BreakEven:
    """Where the speedup over increasing `lengths` reaches 1, linear in acceptance."""
    a, s = np.asarray(lengths, dtype=float), np.asarray(speedups, dtype=float)
    ok = np.isfinite(s)
    a, s = a[ok], s[ok]
    if a.size == 0:
        return BreakEven(c, math.nan, ABOVE)
    if (s > 1).all():
        return BreakEven(c, float(a[0]), BELOW)
    if s[-1] <= 1:
        return BreakEven(c, float(a[-1]), ABOVE)
    m = int(np.flatnonzero(s <= 1)[-1])  # the last length that does not pay; the next does
    t = (1.0 - s[m]) / (s[m + 1] - s[m])
    return BreakEven(c, float(a[m] + t * (a[m + 1] - a[m])))


@dataclass(slots=True)
class AcceptanceMap:
    """A run's acceptance map; `real`: the spec-on arm whose acceptance was not set."""

    off: str
    speedup: pd.DataFrame  # acceptance x concurrency, the speedup
    break_even: list[BreakEven]
    delivered: pd.DataFrame  # acceptance x concurrency, what each arm's server reported
    c_star: dict[float, PairResult]  # by acceptance length
    real: PairResult | None = None
    real_acceptance: pd.Series | None = None  # by concurrency, what its server reported

    def margin(self) -> pd.DataFrame:
        """The real drafter's acceptance minus the break-even at each rung (both known)."""
        if self.real is None or self.real_acceptance is None:
            return pd.DataFrame(columns=["concurrency", "accept_len", "break_even", "margin"])
        rows = []
        for b in self.break_even:
            got = self.real_acceptance.get(b.concurrency, math.nan)
            if not b.bound and math.isfinite(got):
                rows.append((b.concurrency, got, b.length, got - b.length))
        return pd.DataFrame(rows, columns=["concurrency", "accept_len", "break_even", "margin"])

    def lines(self) -> list[str]:
        lengths = list(self.speedup.index)
        out = [f"acceptance map ({self.off} against spec-on at mean acceptance lengths "
               f"{', '.join(f'{x:g}' for x in lengths)}): break-even acceptance length "
               + ", ".join(f"C={b.concurrency:g} {b.words()}" for b in self.break_even)
               + self._basis()]
        inside = [b for b in self.break_even if not b.bound]
        if inside:
            top = inside[-1]
            out.append(f"  at C = {top.concurrency:g} a drafter needs an acceptance length "
                       f"of at least {top.length:.2f} to pay")
        out.append("  C* by acceptance length: " + ", ".join(
            f"{a:g} -> " + (f"{p.crossover.c_star:.1f}" if p.crossover.c_star is not None
                            else p.crossover.verdict)
            for a, p in self.c_star.items()))
        margin = self.margin()
        if self.real is not None and not margin.empty:
            out.append(f"  {self.real.on.name} (its acceptance not set) on the map: "
                       + ", ".join(f"C={r.concurrency:g} {r.accept_len:.2f} vs "
                                   f"{r.break_even:.2f} ({r.margin:+.2f})"
                                   for r in margin.itertuples()))
            out += self._bound_words(margin)
        return out

    def _basis(self) -> str:
        """Which lengths the break-even was read on, when the servers reported them."""
        reported = [c for c in self.speedup.columns if _reported_at(self.delivered, c)]
        if not reported:
            return ""
        if len(reported) == len(self.speedup.columns):
            return " (on the lengths the servers reported)"
        return (" (on the lengths the servers reported at C="
                + ", ".join(f"{c:g}" for c in reported) + ")")

    def _bound_words(self, margin: pd.DataFrame) -> list[str]:
        """The real drafter's margin at the last rung below its recommended bound: how far
        its acceptance may fall before speculating there stops paying."""
        real = self.real
        c_star = real.crossover.c_star if real else None
        if real is None or c_star is None:
            return []
        below = margin[margin["concurrency"] < c_star]
        if below.empty:
            return []
        last = below.iloc[-1]
        return [f"  the recommendation's bound C* = {c_star:.1f}: at C = "
                f"{last.concurrency:g}, the last rung below it, {real.on.name} accepts "
                f"{last.accept_len:.2f} where {last.break_even:.2f} breaks even: an "
                f"acceptance margin of {last.margin:+.2f} ({last.margin / last.accept_len:+.0%})"]

    def as_dict(self) -> dict[str, object]:
        margin = self.margin()
        return {
            "spec_off": self.off,
            "lengths": [float(x) for x in self.speedup.index],
            "concurrency": [float(c) for c in self.speedup.columns],
            "speedup": self.speedup.to_numpy().tolist(),
            # what each arm's server reported per C (null where it reported none)
            "reported": [[None if math.isnan(x) else float(x) for x in row]
                         for row in self.delivered.to_numpy()],
            "break_even": [{"concurrency": b.concurrency, "length": b.length,
                            "bound": b.bound or None} for b in self.break_even],
            "c_star": {f"{a:g}": p.crossover.c_star for a, p in self.c_star.items()},
            "real": None if self.real is None else {
                "arm": self.real.on.name, "margin": margin.to_dict(orient="records")},
        }


def analyse_map(arms: Sequence[ArmSource], pairs: Sequence[PairResult],
                summary: pd.DataFrame) -> AcceptanceMap | None:
    """The run's acceptance map, or None when fewer than two spec-on arms against one
    spec-off arm were set to acceptance lengths."""
    set_to = {a.name: a.acceptance for a in arms if a.acceptance is not None}
    mapped = [p for p in pairs if p.on.name in set_to]
    offs = {p.off.name for p in mapped}
    if len(mapped) < 2 or len(offs) != 1:
        return None
    (off,) = offs
    by_length = dict(sorted((set_to[p.on.name], p) for p in mapped))
    speedup = pd.DataFrame({a: p.speedup.set_index("concurrency")["speedup"]
                            for a, p in by_length.items()}).T.sort_index(axis=1)
    delivered = _reported(summary, by_length, speedup)
    points = [break_even(_lengths_at(delivered, c), speedup[c].to_numpy(), float(c))
              for c in speedup.columns]
    real = next((p for p in pairs if p.off.name == off and p.on.name not in set_to), None)
    accept = None
    if real is not None and "accept_len" in summary:
        rows = summary[summary["arm"] == real.on.name]
        accept = rows.set_index("concurrency")["accept_len"].astype(float)
    return AcceptanceMap(off, speedup, points, delivered, by_length, real, accept)


def _reported(summary: pd.DataFrame, by_length: dict[float, PairResult],
              speedup: pd.DataFrame) -> pd.DataFrame:
    """Each mapped arm's reported acceptance length per C, shaped like `speedup`."""
    out = pd.DataFrame(np.nan, index=speedup.index, columns=speedup.columns)
    if "accept_len" not in summary:
        return out
    for length, pair in by_length.items():
        rows = summary[summary["arm"] == pair.on.name].set_index("concurrency")["accept_len"]
        out.loc[length] = rows.reindex(out.columns).astype(float).to_numpy()
    return out


def _reported_at(delivered: pd.DataFrame, c: object) -> bool:
    """Every mapped arm's server reported a length at C, rising with the setting."""
    got = delivered[c].to_numpy()
    return bool(np.isfinite(got).all() and (np.diff(got) > 0).all())


def _lengths_at(delivered: pd.DataFrame, c: object) -> list[float]:
    """The lengths the break-even at C interpolates over: the reported ones where
    `_reported_at`, else the set lengths."""
    got = delivered[c] if _reported_at(delivered, c) else delivered.index
    return [float(x) for x in got]
