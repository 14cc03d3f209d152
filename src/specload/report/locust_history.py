"""Locust's own view of a rung, from `_stats_history.csv`: the records' cross-check.

Locust counts completed responses and their "content size" (tokens, for specload's
users) once a second; the request records should agree with it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specload.report.server_metrics import monotonic
from specload.report.windows import Window, aggregated_history

MIN_CROSSCHECK_SPAN_S = 5.0


def crosscheck(history: pd.DataFrame | None, end: np.ndarray, tokens: np.ndarray,
               w: Window) -> tuple[float, float]:
    """Locust's completed-response tok/s in a window, and how far the records are from it.

    Locust's cumulative response length (average size x request count, in tokens) grows
    by the tokens of requests that completed between two history samples. Its timestamps
    are whole seconds, so the records' tokens for the same span are only known between
    `low` (requests that ended strictly between the two seconds) and `high` (including
    both seconds). The returned difference is 0 inside [low, high], else the relative
    distance (records - Locust) / Locust to the nearer bound; (nan, nan) when unknown.
    """
    nan2 = (float("nan"), float("nan"))
    need = {"Timestamp", "Total Request Count", "Total Average Content Size"}
    if history is None or not need <= set(history.columns):
        return nan2
    agg = aggregated_history(history)
    ts = agg["Timestamp"].to_numpy(dtype=float)
    total = monotonic(agg["Total Request Count"].to_numpy(dtype=float)
                      * agg["Total Average Content Size"].to_numpy(dtype=float))
    inside = np.flatnonzero((ts >= w.start) & (ts + 1 <= w.end))
    if inside.size < 2 or ts[inside[-1]] - ts[inside[0]] < MIN_CROSSCHECK_SPAN_S:
        return nan2
    a, b = inside[0], inside[-1]
    locust = float(total[b] - total[a])
    low = float(tokens[(end >= ts[a] + 1) & (end < ts[b])].sum())
    high = float(tokens[(end >= ts[a]) & (end < ts[b] + 1)].sum())
    rate = locust / (ts[b] - ts[a])
    if locust <= 0:
        return rate, (float("nan") if high == 0 else float("inf"))
    nearest = min(max(locust, low), high)
    return rate, (nearest - locust) / locust
