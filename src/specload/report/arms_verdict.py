"""Every compared arm side by side: the envelope, a winner per rung, the best per band.

A run that compares more than two arms (besides verification arms: spec-off, fixed
draft lengths, an engine's adaptive mode, a router, and then the recommended schedule
too) gets, at every rung all of them measured, each arm's system tok/s as a share of the
best arm's there (the envelope) with its noise band, the same band as a pair's verdict
(`crossover`): the range of the per-repeat ratios to the best arm with repeats, else the
ratio ± `NOISE_BAND`. An arm whose band reaches 1 ties with the best; the rung's winner
is the best arm when nothing ties with it, else the rung is a tie between them.
Consecutive rungs with the same outcome form a band, and the bands are the best choice
per load. Each arm is also costed as the one setting for every load: its lowest share
and the rungs where it is behind beyond the noise; the arm behind at the fewest rungs,
then losing least, is the simplest choice. An acceptance map's arms (set to acceptance
lengths) are not choices: it has its own analysis (`acceptance_map.py`). Two arms are a
pair, and only a pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.crossover import noise_band, rep_tok_s
from specload.report.run_files import ArmSource

VERIFY_ROLE = "verify"
TIE_WORD = "tie"
# the columns of `ArmsVerdict.table`, one row per arm and rung
TABLE_COLUMNS = ("concurrency", "arm", "output_tok_s", "share", "band_lo", "band_hi",
                 "winner")


@dataclass(frozen=True, slots=True)
class Band:
    """Consecutive rungs with the same outcome: one winner, or the arms tied."""

    first: float
    last: float
    arms: tuple[str, ...]  # the winner alone, or the arms that tie

    def words(self) -> str:
        who = _outcome(self.arms)
        where = f"C={self.first:g}" if self.first == self.last else \
            f"C={self.first:g}-{self.last:g}"
        return f"{who} at {where}"


@dataclass(frozen=True, slots=True)
class Cost:
    """One arm as the single setting for every load: its lowest share of the envelope
    and the rungs where it is behind the best beyond the noise."""

    arm: str
    lowest: float
    at: float
    behind: tuple[float, ...]

    def words(self) -> str:
        if not self.behind:
            return f"{self.arm}: never behind beyond the noise (lowest share {self.lowest:.2f})"
        where = ", ".join(f"{c:g}" for c in self.behind)
        return (f"{self.arm}: loses up to {1 - self.lowest:.0%} (at C={self.at:g}); behind "
                f"at C = {where}")


@dataclass(slots=True)
class ArmsVerdict:
    """The compared arms' envelope shares and winners per rung, bands and costs."""

    arms: list[str]
    table: pd.DataFrame  # TABLE_COLUMNS
    bands: list[Band]
    costs: list[Cost]  # the simplest choice first: behind at the fewest rungs, then least

    def winners(self) -> pd.Series:
        """The outcome per rung: the winner's name, or "tie (a, b)"."""
        return self.table.drop_duplicates("concurrency").set_index("concurrency")["winner"]

    def shares(self) -> pd.DataFrame:
        """One row per rung: each arm's share of the best, and the outcome."""
        wide = self.table.pivot(index="concurrency", columns="arm", values="share")
        wide = wide.reindex(columns=self.arms).rename_axis(columns=None)
        return wide.assign(winner=self.winners()).reset_index()

    def lines(self, rungs: bool = True) -> list[str]:
        """The verdict in words: a line per rung (`rungs`), the bands, the costs."""
        rows = [f"  C={r['concurrency']:g}: " + ", ".join(f"{a} {r[a]:.2f}" for a in self.arms)
                + f" -> {r['winner']}" for r in self.shares().to_dict("records")]
        best = self.costs[0]
        one = (f"one setting for every load: {best.arm}, never behind beyond the noise"
               if not best.behind else
               f"one setting for every load: {best.arm}, which loses up to "
               f"{1 - best.lowest:.0%} (at C={best.at:g})")
        head = (f"{len(self.arms)} arms side by side (share of the best arm's tok/s per rung; "
                "-> the winner, or the arms within the noise of each other):") if rungs else \
            f"{len(self.arms)} arms side by side"
        return [head, *(rows if rungs else []),
                "best per load: " + "; ".join(b.words() for b in self.bands),
                one, *(f"  {c.words()}" for c in self.costs[1:])]

    def as_dict(self) -> dict[str, object]:
        return {"arms": self.arms, "rungs": self.table.to_dict(orient="records"),
                "bands": [{"from": b.first, "to": b.last, "arms": list(b.arms)}
                          for b in self.bands],
                "costs": [{"arm": c.arm, "lowest_share": c.lowest, "at": c.at,
                           "behind": list(c.behind)} for c in self.costs]}


def compared_arms(arms: Sequence[ArmSource]) -> list[str]:
    """The arms the verdict compares: every arm but an acceptance map's or a context
    map's (arms at different prompt lengths do different work), when more than two of
    them are not verification arms; else none (a pair is only a pair)."""
    choices = [a for a in arms if a.acceptance is None and a.context is None]
    if len([a for a in choices if a.role != VERIFY_ROLE]) <= 2:
        return []
    return [a.name for a in choices]


def _outcome(arms: Sequence[str]) -> str:
    return arms[0] if len(arms) == 1 else f"{TIE_WORD} ({', '.join(arms)})"


def _rung(level: float, tok_s: pd.Series, reps: pd.DataFrame
          ) -> tuple[list[dict[str, object]], tuple[str, ...]]:
    """One rung's rows (each arm's share of the best with its band, and the outcome)
    and the outcome: the best arm alone, or the best and the arms that tie with it."""
    best = str(tok_s.idxmax())
    rows = []
    for arm, value in tok_s.items():
        share = float(value / tok_s[best]) if tok_s[best] > 0 else float("nan")
        mine = reps[reps["arm"] == arm].set_index("rep")["output_tok_s"]
        theirs = reps[reps["arm"] == best].set_index("rep")["output_tok_s"]
        lo, hi = noise_band(share, list((mine / theirs).dropna()))
        rows.append({"concurrency": level, "arm": arm, "output_tok_s": float(value),
                     "share": share, "band_lo": lo, "band_hi": hi})
    outcome = (best, *(str(r["arm"]) for r in rows
                        if r["arm"] != best and float(r["band_hi"]) >= 1.0))
    return [{**r, "winner": _outcome(outcome)} for r in rows], outcome


def _bands(outcomes: Sequence[tuple[float, tuple[str, ...]]]) -> list[Band]:
    """Consecutive rungs with the same outcome (the same arms, in any order) as bands."""
    bands: list[Band] = []
    for level, arms in outcomes:
        if bands and set(bands[-1].arms) == set(arms):
            bands[-1] = Band(bands[-1].first, level, bands[-1].arms)
        else:
            bands.append(Band(level, level, arms))
    return bands


def _costs(table: pd.DataFrame, names: Sequence[str]) -> list[Cost]:
    costs = []
    for arm in names:
        rows = table[table["arm"] == arm]
        worst = rows.loc[rows["share"].idxmin()]
        behind = tuple(float(c) for c in rows.loc[rows["band_hi"] < 1.0, "concurrency"])
        costs.append(Cost(arm, float(worst["share"]), float(worst["concurrency"]), behind))
    return sorted(costs, key=lambda c: (len(c.behind), -c.lowest))


def analyse_arms(summary: pd.DataFrame, per_rep: pd.DataFrame,
                 arms: Sequence[ArmSource]) -> ArmsVerdict | None:
    """The verdict on the compared arms at every rung they all measured; None for a run
    that compares two arms or fewer."""
    names = compared_arms(arms)
    if not names:
        return None
    means = summary[summary["arm"].isin(names)].pivot_table(
        index="concurrency", columns="arm", values="output_tok_s")
    means = means.reindex(columns=names).dropna()
    if means.empty:
        return None
    reps = rep_tok_s(per_rep, names)
    rows, outcomes = [], []
    for level, tok_s in means.iterrows():
        got, outcome = _rung(float(level), tok_s, reps[reps["concurrency"] == level])
        rows += got
        outcomes.append((float(level), outcome))
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    if not np.isfinite(table["share"]).all():
        return None
    return ArmsVerdict(names, table, _bands(outcomes), _costs(table, names))


def with_shares(summary: pd.DataFrame, verdict: ArmsVerdict | None) -> pd.DataFrame:
    """The summary with an `envelope_share` column on the compared arms' rows."""
    if verdict is None:
        return summary
    shares = verdict.table.set_index(["arm", "concurrency"])["share"]
    keys = pd.MultiIndex.from_frame(summary[["arm", "concurrency"]].astype({"concurrency": float}))
    return summary.assign(envelope_share=shares.reindex(keys).to_numpy())
