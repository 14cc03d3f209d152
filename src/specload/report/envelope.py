"""The verification arm against the envelope: how much of max(spec-on, spec-off) it gets.

The verification arm (role `verify`, run by the sweep with the recommended schedule)
is measured through the same ladder. Its envelope at a rung is the most system tok/s
any arm of the comparison reached there (the spec-on and spec-off arms; in a multi-k
study every k), and its **envelope efficiency** is its tok/s divided by the envelope's.
1 means the schedule follows the better curve; below 1 shows what switching costs (a
k = 0 tier still runs the drafter, vLLM PR #53426) or where no batch-size schedule can
follow the envelope (a spec-on arm ahead only because its running cap queues requests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from specload.report.run_files import ArmSource

VERIFY_ROLE = "verify"
STUDY_ROLES = ("spec_on", "spec_off")
# An efficiency below this at a rung is named in the printed summary.
EFFICIENCY_GOAL = 0.95


@dataclass(slots=True)
class Envelope:
    """One verification arm's efficiency per rung."""

    arm: str
    schedule: list[list[int]] | None  # the vLLM-form ranges it ran, from the manifest
    # concurrency, output_tok_s, batch, envelope_tok_s, envelope_arm, envelope_batch,
    # efficiency (batch: the server's mean running requests, NaN without the gauge)
    table: pd.DataFrame

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
                "lowest_at": low[1] if low else None}

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


def envelopes(summary: pd.DataFrame, arms: Sequence[ArmSource],
              schedules: dict[str, list[list[int]] | None]) -> list[Envelope]:
    """Every verification arm's envelope efficiency (none without a verify arm)."""
    study = [a.name for a in arms if a.role in STUDY_ROLES]
    if not study:
        return []
    return [Envelope(a.name, schedules.get(a.name), envelope_table(summary, a.name, study))
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
