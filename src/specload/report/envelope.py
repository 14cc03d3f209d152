"""The verification arm against the envelope: how much of max(spec-on, spec-off) it gets.

The verification arm (role `verify`, run by the sweep with the recommended schedule) is
measured through the same ladder. Its envelope at a rung is the most system tok/s any
arm of the comparison reached there (the spec-on and spec-off arms; in a multi-k study
every k), and its **envelope efficiency** is its tok/s divided by the envelope's. 1
means the schedule follows the better curve; below 1 shows what switching costs (a k = 0
tier still runs the drafter, vLLM PR #53426) or where no batch-size schedule can follow
the envelope (a spec-on arm ahead only because its running cap queues requests). Where
its schedule turns speculation off (its own batch at or above the k = 0 tier's start) it
is also measured against the spec-off arm at the same rungs: the k = 0 tax (`Tax`), with
the verdicts' noise band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from specload.report.crossover import noise_band, rep_tok_s
from specload.report.run_files import ArmSource

VERIFY_ROLE = "verify"
STUDY_ROLES = ("spec_on", "spec_off")
# An efficiency below this at a rung is named in the printed summary.
EFFICIENCY_GOAL = 0.95


@dataclass(slots=True)
class Tax:
    """What a schedule's k = 0 tier costs: at the rungs where the verification arm ran at
    or above the tier's first batch size, its tok/s over the spec-off arm's, with the
    verdicts' noise band (the per-repeat ratios' range, else ±NOISE_BAND)."""

    off: str  # the spec-off arm it is measured against
    from_batch: int  # where the schedule's k = 0 tier starts
    # concurrency, batch, ratio, band_lo, band_hi
    table: pd.DataFrame

    @property
    def beyond_noise(self) -> pd.DataFrame:
        """The rungs where the scheduled server is behind spec-off beyond the noise."""
        return self.table[self.table["band_hi"] < 1.0]

    def as_dict(self) -> dict[str, object]:
        return {"spec_off": self.off, "from_batch": self.from_batch,
                "rungs": self.table.to_dict(orient="records"),
                "beyond_noise_at": [float(c) for c in self.beyond_noise["concurrency"]]}

    def line(self, arm: str) -> str:
        ratios = ", ".join(f"{r:.3f} (C={c:g})" for c, r in
                           zip(self.table["concurrency"], self.table["ratio"], strict=True))
        text = (f"{arm}: with k = 0 (from batch {self.from_batch}) its tok/s over "
                f"{self.off}'s: {ratios}")
        behind = self.beyond_noise
        if behind.empty:
            return text + "; no cost beyond the noise"
        worst = float(behind["ratio"].min())
        return (text + f"; k = 0 costs up to {1 - worst:.0%} beyond the noise, so turning "
                "speculation off inside the speculating server is not free: a spec-on and a "
                "spec-off deployment with requests routed by load avoid it")


@dataclass(slots=True)
class Envelope:
    """One verification arm's efficiency per rung, and its k = 0 tier's cost."""

    arm: str
    schedule: list[list[int]] | None  # the vLLM-form ranges it ran, from the manifest
    # concurrency, output_tok_s, batch, envelope_tok_s, envelope_arm, envelope_batch,
    # efficiency (batch: the server's mean running requests, NaN without the gauge)
    table: pd.DataFrame
    tax: Tax | None = None  # no k = 0 tier, no spec-off arm, or no rung above the bound

    @property
    def lowest(self) -> tuple[float, float] | None:
        """(efficiency, C) of the worst rung."""
        if self.table.empty:
            return None
        row = self.table.loc[self.table["efficiency"].idxmin()]
        return float(row["efficiency"]), float(row["concurrency"])

    def as_dict(self) -> dict[str, object]:
        low = self.lowest
        return {"arm": self.arm, "schedule": self.schedule,
                "rungs": self.table.to_dict(orient="records"),
                "lowest_efficiency": low[0] if low else None,
                "lowest_at": low[1] if low else None,
                "k0_tax": self.tax.as_dict() if self.tax else None}

    def line(self) -> str:
        parts = ", ".join(f"{e:.3f} (C={c:g})" for c, e in
                          zip(self.table["concurrency"], self.table["efficiency"], strict=True))
        text = f"{self.arm}: envelope efficiency (tok/s / max of the compared arms) {parts}"
        below = self.table[self.table["efficiency"] < EFFICIENCY_GOAL]
        if len(below):
            text += f"; below {EFFICIENCY_GOAL} at C = " + ", ".join(
                _shortfall(row) for _, row in below.iterrows())
        return text


def _shortfall(row: pd.Series) -> str:
    """A rung below the goal, with both servers' batch sizes when they differ: a
    schedule keys on the batch its own server runs, not on the envelope arm's."""
    text = f"{row['concurrency']:g} (envelope: {row['envelope_arm']}"
    mine, theirs = row["batch"], row["envelope_batch"]
    if pd.notna(mine) and pd.notna(theirs):
        text += f" at batch {theirs:.1f}, this arm at batch {mine:.1f}"
    return text + ")"


def envelope_table(summary: pd.DataFrame, verify: str, study: Sequence[str]) -> pd.DataFrame:
    """Per rung both measured: the verify arm's tok/s, the envelope's, which arm, the ratio."""
    summary = summary.assign(batch=summary.get("server_running_mean", float("nan")))
    rows = summary[summary["arm"].isin(study)].dropna(subset=["output_tok_s"])
    rows = rows.reset_index(drop=True)  # idxmax returns labels
    best = rows.loc[rows.groupby("concurrency")["output_tok_s"].idxmax(),
                    ["concurrency", "output_tok_s", "arm", "batch"]]
    best = best.rename(columns={"output_tok_s": "envelope_tok_s", "arm": "envelope_arm",
                                "batch": "envelope_batch"})
    mine = summary.loc[summary["arm"] == verify, ["concurrency", "output_tok_s", "batch"]]
    table = mine.merge(best, on="concurrency").sort_values("concurrency")
    table["efficiency"] = table["output_tok_s"] / table["envelope_tok_s"]
    return table.reset_index(drop=True)


def k0_start(schedule: list[list[int]] | None) -> int | None:
    """Where a vLLM-form schedule's k = 0 tier starts (None: it has none)."""
    return min((lo for lo, _, k in schedule or [] if k == 0), default=None)


def own_batch(rows: pd.DataFrame) -> pd.Series:
    """Each rung's batch as the arm's server ran it: its running-requests gauge, else C."""
    return rows.get("server_running_mean", rows["concurrency"]).fillna(rows["concurrency"])


def k0_tax(summary: pd.DataFrame, per_rep: pd.DataFrame, verify: str, off: str,
           schedule: list[list[int]] | None) -> Tax | None:
    """The verification arm against spec-off where its schedule has k = 0 (its own batch
    at or above the k = 0 tier's start)."""
    start = k0_start(schedule)
    if start is None:
        return None
    mine = summary[summary["arm"] == verify]
    above = mine[own_batch(mine) >= start].assign(batch=own_batch(mine))
    theirs = summary.loc[summary["arm"] == off, ["concurrency", "output_tok_s"]]
    table = above[["concurrency", "batch", "output_tok_s"]].merge(
        theirs, on="concurrency", suffixes=("", "_off"))
    if table.empty:
        return None
    reps = rep_tok_s(per_rep, [verify, off]).pivot_table(
        index=["rep", "concurrency"], columns="arm", values="output_tok_s")
    reps = reps.reindex(columns=[verify, off]).dropna()
    ratios = (reps[verify] / reps[off]).groupby(level="concurrency").apply(list)
    table["ratio"] = table["output_tok_s"] / table["output_tok_s_off"]
    bands = [noise_band(r, ratios.get(c, [])) for c, r in zip(table["concurrency"],
                                                                table["ratio"], strict=True)]
    table["band_lo"], table["band_hi"] = [lo for lo, _ in bands], [hi for _, hi in bands]
    table = table[["concurrency", "batch", "ratio", "band_lo", "band_hi"]]
    return Tax(off, start, table.sort_values("concurrency").reset_index(drop=True))


def envelopes(summary: pd.DataFrame, arms: Sequence[ArmSource],
              schedules: dict[str, list[list[int]] | None],
              per_rep: pd.DataFrame | None = None) -> list[Envelope]:
    """Every verification arm's envelope efficiency (none without a verify arm), and its
    k = 0 tier's cost against the first spec-off arm."""
    study = [a.name for a in arms if a.role in STUDY_ROLES]
    if not study:
        return []
    off = next((a.name for a in arms if a.role == "spec_off"), None)
    reps = per_rep if per_rep is not None else summary.assign(rep=1)
    return [Envelope(a.name, schedules.get(a.name), envelope_table(summary, a.name, study),
                     k0_tax(summary, reps, a.name, off, schedules.get(a.name))
                     if off else None)
            for a in arms if a.role == VERIFY_ROLE]


def with_efficiency(summary: pd.DataFrame, found: Sequence[Envelope]) -> pd.DataFrame:
    """The summary with an `envelope_efficiency` column on the verification arms' rows."""
    if not found:
        return summary
    out = summary.copy()
    out["envelope_efficiency"] = float("nan")
    for env in found:
        by_c = env.table.set_index("concurrency")["efficiency"]
        rows = out["arm"] == env.arm
        out.loc[rows, "envelope_efficiency"] = out.loc[rows, "concurrency"].map(by_c)
    return out
