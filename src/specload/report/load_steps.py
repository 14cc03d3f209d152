"""Load steps: how fast each arm's tok/s settles after the load jumps, and what it costs.

A load-step run (`workload: {kind: steps}`) holds each user count for a step; the second
half of a step is its steady window, measured like any rung. Here each step is also
followed from the jump into it: the tokens of every chunk that arrived, in bins of
`BIN_S`, smoothed over a window holding about `SMOOTH_TOKENS` tokens at the steady rate
(at least `SMOOTH_MIN_S`). A step **settles** at the first bin from which the smoothed
tok/s stays within `BAND` of its steady level for `HOLD_S` (or to the end of the step:
a later wobble of the noise does not undo it); the **tokens lost** are what it fell
short of the steady rate from the jump until then (negative: it ran ahead, as a server
still draining a higher load does). A stateless setting (a fixed k, a batch-size
schedule) settles as fast as the batch does; a controller that learns from what it sees
(SGLang's EMA tiers) settles later where it must learn anew.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report import chunk_arrays
from specload.report.windows import Window

BIN_S = 0.25
BAND = 0.05
SMOOTH_TOKENS = 2000.0
SMOOTH_MIN_S = 1.0
HOLD_S = 2.0


def smoothed(rates: np.ndarray, bins: int) -> np.ndarray:
    """A centred moving average over `bins` bins (fewer at the edges)."""
    if bins <= 1 or rates.size == 0:
        return rates.astype(float)
    kernel = np.ones(bins)
    sums = np.convolve(rates, kernel, mode="same")
    counts = np.convolve(np.ones(rates.size), kernel, mode="same")
    return sums / counts


def smoothing_bins(steady: float, step_bins: int) -> int:
    """Bins a window of about `SMOOTH_TOKENS` tokens spans at the steady rate (at least
    `SMOOTH_MIN_S`, at most a quarter of the step)."""
    seconds = max(SMOOTH_MIN_S, SMOOTH_TOKENS / steady) if steady > 0 else SMOOTH_MIN_S
    return max(1, min(math.ceil(seconds / BIN_S), step_bins // 4))


def settle(rates: np.ndarray, steady: float, bins: int) -> tuple[float, float]:
    """Seconds from the jump until the smoothed rate is within `BAND` of `steady` and
    stays there for `HOLD_S` (or to the step's end), and the tokens short of `steady`
    until then; NaN without a steady level, infinite if it never does."""
    if not steady > 0 or rates.size == 0:
        return float("nan"), float("nan")
    smooth = smoothed(rates, bins)
    judged = smooth[: max(1, rates.size - bins // 2)]  # whole windows only at the end
    inside = np.abs(judged - steady) <= BAND * steady
    hold = max(1, round(HOLD_S / BIN_S))
    # run[i]: how many bins from i on are inside without a break
    run = np.zeros(inside.size + 1, dtype=int)
    for i in range(inside.size - 1, -1, -1):
        run[i] = run[i + 1] + 1 if inside[i] else 0
    left = inside.size - np.arange(inside.size)
    found = np.flatnonzero(run[:-1] >= np.minimum(hold, left))
    if not found.size:
        return math.inf, float(np.sum(steady - rates) * BIN_S)
    first = int(found[0])
    return first * BIN_S, float(np.sum(steady - rates[:first]) * BIN_S)


def with_transitions(table: pd.DataFrame, requests: pd.DataFrame,
                     windows: Sequence[Window]) -> pd.DataFrame:
    """One repeat's rung table with each load step's settling time, tokens lost and
    smoothed tok/s by time (space-separated, one value per `BIN_S` from the jump);
    unchanged for a run without steps. Rows follow `windows`."""
    steps = [(i, w) for i, w in enumerate(windows) if w.since is not None]
    if not steps or requests.empty:
        return table
    ch = chunk_arrays.build(requests)
    start = requests["start"].to_numpy(dtype=float)
    first = min(w.since for _, w in steps if w.since is not None)
    last = max(w.end for _, w in steps)
    rows = np.flatnonzero((ch.last_arrival >= first) & (ch.first_arrival <= last))
    times, tokens = chunk_arrays.arrivals(ch, start, rows)
    tokens = tokens.astype(float)  # per-chunk counts may be uint8: sums would wrap
    out = table.copy()
    out["settle_s"], out["lost_tokens"], out["timeline_tok_s"] = float("nan"), float("nan"), ""
    for i, w in steps:
        assert w.since is not None
        edges = w.since + BIN_S * np.arange(round((w.end - w.since) / BIN_S) + 1)
        rates = np.histogram(times, edges, weights=tokens)[0] / BIN_S
        steady = float(out.at[i, "output_tok_s"])
        bins = smoothing_bins(steady, rates.size)
        out.at[i, "settle_s"], out.at[i, "lost_tokens"] = settle(rates, steady, bins)
        out.at[i, "timeline_tok_s"] = " ".join(f"{x:.0f}" for x in smoothed(rates, bins))
    return out


@dataclass(frozen=True, slots=True)
class StepFigures:
    """One arm's step: the jump, its steady level and how it got there."""

    arm: str
    step: int
    from_users: int
    users: int
    steady_tok_s: float
    settle_s: float
    lost_tokens: float

    def words(self) -> str:
        if math.isnan(self.settle_s):
            return f"{self.from_users}->{self.users} users: no steady level"
        if math.isinf(self.settle_s):
            return (f"{self.from_users}->{self.users} users: never within {BAND:.0%} of "
                    f"{self.steady_tok_s:.0f} tok/s for {HOLD_S:g} s")
        return (f"{self.from_users}->{self.users} users: {self.settle_s:.2f} s to "
                f"{self.steady_tok_s:.0f} tok/s, {self.cost()}")

    def cost(self) -> str:
        """The tokens the jump cost, or won (a server still draining a higher load)."""
        if self.lost_tokens >= 0:
            return f"{self.lost_tokens:.0f} tokens short"
        return f"{-self.lost_tokens:.0f} tokens ahead"


def analyse(summary: pd.DataFrame) -> list[StepFigures]:
    """Every arm's steps from the summary (none unless the run stepped its load)."""
    if "step" not in summary or summary["step"].isna().all():
        return []
    rows = summary.dropna(subset=["step"]).sort_values(["step"], kind="stable")
    return [StepFigures(str(r.arm), int(r.step), int(r.from_users), int(r.concurrency),
                        float(r.output_tok_s), float(r.settle_s), float(r.lost_tokens))
            for r in rows.itertuples(index=False)]


def lines(found: Sequence[StepFigures]) -> list[str]:
    """The console's and the report's words: each arm's steps, then the fastest arm per
    jump (where arms were compared)."""
    if not found:
        return []
    arms = list(dict.fromkeys(f.arm for f in found))
    out = [f"load steps (time until tok/s is within {BAND:.0%} of its new steady level for "
           f"{HOLD_S:g} s, and the tokens short of it until then):"]
    out += [f"  {arm}: " + "; ".join(f.words() for f in found if f.arm == arm) for arm in arms]
    if len(arms) > 1:
        for step in sorted({f.step for f in found}):
            here = [f for f in found if f.step == step and math.isfinite(f.settle_s)]
            if len(here) > 1:
                soonest = min(f.settle_s for f in here)
                first = [f.arm for f in here if f.settle_s == soonest]
                verdict = (f"first: {first[0]}" if len(first) == 1 else
                           f"tie: {', '.join(first)}")
                out.append(f"  step {step} ({here[0].from_users}->{here[0].users} users): "
                           + ", ".join(f"{f.arm} {f.settle_s:.2f} s ({f.cost()})"
                                       for f in here) + f"; {verdict}")
    return out
