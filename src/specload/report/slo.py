"""Goodput under latency objectives: which rungs of which arm meet the scenario's SLO.

A scenario may set `slo: {ttft_p99_ms, tpot_p99_ms}` (either or both). A rung meets it
when each given p99 (the repeats' mean, as in the summary) is at or under its bound; a
missing p99 never meets it. Per arm the report gives the highest concurrency that
meets the SLO with its tok/s, and the best tok/s among the rungs that do (the arm's
SLO goodput). `crossover` uses `SloTarget.meets` to decide each rung on goodput.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True, slots=True)
class SloTarget:
    """p99 bounds in milliseconds; None where the scenario sets none."""

    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def meets(self, ttft_p99: Any, tpot_p99: Any) -> np.ndarray:
        """Element-wise: every given bound met (NaN never meets a bound)."""
        ttft = np.asarray(ttft_p99, dtype=float)
        ok = np.ones(ttft.shape, dtype=bool)
        for bound, values in ((self.ttft_p99_ms, ttft), (self.tpot_p99_ms, tpot_p99)):
            if bound is not None:
                v = np.asarray(values, dtype=float)
                ok &= np.isfinite(v) & (v <= bound)
        return ok

    def describe(self) -> str:
        parts = [f"{name} p99 ≤ {bound:g} ms" for name, bound in
                 (("TTFT", self.ttft_p99_ms), ("TPOT", self.tpot_p99_ms)) if bound is not None]
        return " and ".join(parts)

    def as_dict(self) -> dict[str, float | None]:
        return {"ttft_p99_ms": self.ttft_p99_ms, "tpot_p99_ms": self.tpot_p99_ms}


def slo_from_scenario(scenario: Mapping[str, Any] | None) -> SloTarget | None:
    """The SLO of a scenario as recorded in the manifest (None without one)."""
    raw = (scenario or {}).get("slo")
    if not isinstance(raw, Mapping):
        return None
    target = SloTarget(*(float(raw[k]) if raw.get(k) is not None else None
                         for k in ("ttft_p99_ms", "tpot_p99_ms")))
    return target if target.describe() else None


def arm_goodput(summary: pd.DataFrame, arm: str, slo: SloTarget) -> dict[str, Any]:
    """The rungs of one arm meeting the SLO, its highest such C and its best tok/s."""
    rows = summary[summary["arm"] == arm].sort_values("concurrency")
    missing = pd.Series(np.nan, index=rows.index)
    ok = slo.meets(rows.get("ttft_p99_ms", missing), rows.get("tpot_p99_ms", missing))
    met = rows[ok]
    out: dict[str, Any] = {"arm": arm, "rungs_met": [int(c) for c in met["concurrency"]],
                           "highest_c": None, "tok_s": None, "best_c": None,
                           "best_tok_s": None}
    if len(met):
        top = met.iloc[-1]
        best = met.loc[met["output_tok_s"].idxmax()]
        out |= {"highest_c": int(top["concurrency"]), "tok_s": float(top["output_tok_s"]),
                "best_c": int(best["concurrency"]), "best_tok_s": float(best["output_tok_s"])}
    return out
