"""Multi-k study: the best draft length per batch-size band, as a multi-tier schedule.

A run whose spec-on arms differ only in their draft length k (a scenario arm with
`k: [1, 2, 3, 5]`, expanded by the runner) and that has a spec-off arm (k = 0) is a
study. At every rung the best k is the one with the most system tok/s, except that a
smaller k whose tok/s ties with it goes first: a tie is a ratio to the best whose noise
band holds 1, the band being the repeats' spread of the per-repeat ratios, or the
ratio ± 2% without repeats (`crossover.NOISE_BAND`, the same band as the verdicts).
Consecutive rungs with the same best k form a band; a band ends where the two curves
cross (interpolated in log C, as C*), mapped to batch size through the lower band's
arm's running-requests gauge (`recommend.batch_at`), or in C without the gauge. The
schedule is a `recommend.study_decision`, written in every load switch's syntax by
`recommend_text.study_recommendation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.engines import schedule as es
from specload.report.crossover import NOISE_BAND, log_crossing
from specload.report.recommend import RECOMMENDED_DIR, arm_setup, batch_at, study_decision
from specload.report.recommend_text import Recommendation, study_recommendation
from specload.report.run_files import ArmSource

MULTI_K_FOLDER = f"{RECOMMENDED_DIR}/multi-k"


def pick_k(tok_s: Mapping[int, Sequence[float]]) -> int:
    """The best k at one rung from each k's tok/s per repeat (k = 0: spec-off).

    The smallest k that ties with the best mean: the largest of its per-repeat ratios to
    the best arm reaches 1 (with repeats), or its mean ratio + NOISE_BAND does (without).
    """
    means = {k: float(np.mean(v)) for k, v in tok_s.items() if len(v)}
    best = max(means, key=lambda k: (means[k], -k))
    for k in sorted(means):
        ratios = [a / b for a, b in zip(tok_s[k], tok_s[best], strict=False) if b > 0]
        if len(ratios) > 1:
            high = max(ratios)
        else:
            high = means[k] / means[best] + NOISE_BAND if means[best] > 0 else 1.0
        if high >= 1.0:
            return k
    return best


def _crossing(c0: float, c1: float, r0: float, r1: float) -> float:
    """Where a ratio going from r0 (at c0) to r1 (at c1) reaches 1, in log C."""
    if (r0 - 1.0) * (r1 - 1.0) > 0 or r0 == r1:
        return math.sqrt(c0 * c1)  # the tie rule moved the band: split the gap
    return log_crossing(c0, c1, r0, r1)


def tiers_from_picks(table: pd.DataFrame) -> tuple[tuple[es.Tier, ...], str]:
    """Bands of equal best k -> tiers; the axis ("batch size" or "concurrency").

    `table` has per rung: concurrency, best_k, `tok_s_k<k>` and `batch_k<k>` columns.
    """
    rows = table.sort_values("concurrency").reset_index(drop=True)
    axis = "batch size"
    tiers: list[es.Tier] = []
    for i in range(len(rows) - 1):
        a, b = int(rows.at[i, "best_k"]), int(rows.at[i + 1, "best_k"])
        if a == b:
            continue
        c0, c1 = float(rows.at[i, "concurrency"]), float(rows.at[i + 1, "concurrency"])
        ratio = rows[f"tok_s_k{b}"] / rows[f"tok_s_k{a}"]
        c = _crossing(c0, c1, float(ratio.iat[i]), float(ratio.iat[i + 1]))
        gauge = rows[["concurrency", f"batch_k{a}"]].rename(columns={f"batch_k{a}": "batch_on"})
        batch = batch_at(gauge, c)
        if batch is None:
            axis, batch = "concurrency", c
        floor = tiers[-1].last + 1 if tiers and tiers[-1].last is not None else 1
        tiers.append(es.Tier(max(floor, math.floor(batch)), a))
    last_k = int(rows["best_k"].iat[-1]) if len(rows) else 0
    tiers.append(es.Tier(None, last_k))
    return tuple(tiers), axis


@dataclass(slots=True)
class KStudy:
    """The study's arms, its per-rung table and the schedule it recommends."""

    off: ArmSource
    arms: dict[int, ArmSource]  # k -> its spec-on arm
    table: pd.DataFrame  # concurrency, tok_s_k<k>, batch_k<k>, best_k
    tiers: tuple[es.Tier, ...]
    axis: str
    recommendation: Recommendation

    def as_dict(self) -> dict[str, object]:
        return {"spec_off": self.off.name, "arms": {k: a.name for k, a in self.arms.items()},
                "rungs": self.table.to_dict(orient="records"), "axis": self.axis,
                "schedule": es.ranges(self.tiers),
                "recommendation": self.recommendation.as_dict(MULTI_K_FOLDER)}

    def lines(self) -> list[str]:
        picks = ", ".join(f"C={c:g}: k={k}" for c, k in
                          zip(self.table["concurrency"], self.table["best_k"], strict=True))
        return [f"multi-k study ({', '.join(f'k={k}' for k in self.arms)} vs "
                f"{self.off.name} as k=0): best k per rung {picks}",
                f"  schedule by {self.axis}: {es.describe(self.tiers)}"]


def study_arms(arms: Sequence[ArmSource]) -> tuple[ArmSource, dict[int, ArmSource]] | None:
    """(spec-off arm, k -> spec-on arm) when the run is a study: one spec-off arm and at
    least two spec-on arms with distinct known k."""
    off = [a for a in arms if a.role == "spec_off"]
    on = [a for a in arms if a.role == "spec_on" and a.k is not None]
    ks = {a.k: a for a in on if a.k is not None}
    if len(off) != 1 or len(ks) < 2 or len(ks) != len(on):
        return None
    return off[0], {k: ks[k] for k in sorted(ks)}


def _rep_values(per_rep: pd.DataFrame, arm: str, c: float) -> list[float]:
    rows = per_rep[(per_rep["arm"] == arm) & (per_rep["concurrency"] == c)]
    return rows.sort_values("rep")["output_tok_s"].astype(float).tolist()


def study_table(arms: dict[int, ArmSource], per_rep: pd.DataFrame,
                summary: pd.DataFrame) -> pd.DataFrame:
    """Per rung measured by every arm: each k's tok/s and batch, and the best k."""
    rows = []
    levels = [set(summary.loc[summary["arm"] == a.name, "concurrency"]) for a in arms.values()]
    for c in sorted(set.intersection(*levels)):
        values = {k: _rep_values(per_rep, a.name, c) for k, a in arms.items()}
        row: dict[str, float] = {"concurrency": c}
        for k, a in arms.items():
            part = summary[(summary["arm"] == a.name) & (summary["concurrency"] == c)]
            row[f"tok_s_k{k}"] = float(part["output_tok_s"].iat[0])
            row[f"batch_k{k}"] = float(part["server_running_mean"].iat[0]) \
                if "server_running_mean" in part else float("nan")
        row["best_k"] = pick_k(values)
        rows.append(row)
    return pd.DataFrame(rows)


def analyse_study(arms: Sequence[ArmSource], per_rep: pd.DataFrame,
                  summary: pd.DataFrame) -> KStudy | None:
    """The multi-k study of a run, or None when the run is not one."""
    found = study_arms(arms)
    if found is None:
        return None
    off, by_k = found
    table = study_table({0: off, **by_k}, per_rep, summary)
    if table.empty:
        return None
    tiers, axis = tiers_from_picks(table)
    first = next(iter(by_k.values()))
    rec = study_recommendation(study_decision(tiers, arm_setup(first)),
                               f"Best draft length per {axis} band: {es.describe(tiers)}.",
                               f"multi-k study ({first.name.rsplit('-k', 1)[0]} "
                               f"k = {', '.join(map(str, by_k))} vs {off.name})",
                               MULTI_K_FOLDER)
    return KStudy(off, by_k, table, tiers, axis, rec)
