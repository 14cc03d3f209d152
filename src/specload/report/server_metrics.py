"""Per-rung numbers from the server's sampled /metrics.

Counters (token and speculation counters) are made monotonic across resets, then their
increase over a window is taken between values interpolated at the window edges, or
between the first and last samples inside the window when the samples do not cover both
edges. Gauges are averaged over the samples inside the window. Missing metrics give
NaN, never zero. The prefix cache hit rate is hits / queries of vLLM's token counters
over the window, else the mean of SGLang's `cache_hit_rate` gauge (each sample the rate
of its latest prefill batch).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from specload.engines.metrics import names
from specload.report.windows import Window

SERVER_COLUMNS = ("server_output_tok_s", "accept_rate", "accept_len_mean",
                  "server_running_mean", "server_waiting_mean", "prefix_hit_rate")


def monotonic(values: np.ndarray) -> np.ndarray:
    """A counter with resets (drops) turned into its running total of increases."""
    if values.size == 0:
        return values
    steps = np.diff(values)
    steps = np.where(steps < 0, values[1:], steps)  # after a reset the counter restarts at 0
    return np.concatenate(([values[0]], values[0] + np.cumsum(steps)))


def counter_increase(ts: np.ndarray, total: np.ndarray, w: Window) -> tuple[float, float]:
    """(increase, seconds it spans) of a monotonic counter over a window; (nan, nan) if unknown."""
    if ts.size >= 2 and ts[0] <= w.start and ts[-1] >= w.end:
        a, b = np.interp([w.start, w.end], ts, total)
        return float(b - a), w.length
    inside = (ts >= w.start) & (ts <= w.end)
    if np.count_nonzero(inside) < 2:
        return float("nan"), float("nan")
    t, v = ts[inside], total[inside]
    return float(v[-1] - v[0]), float(t[-1] - t[0])


Metrics = dict[str, tuple[np.ndarray, np.ndarray]]


def index_metrics(server: pd.DataFrame | None) -> Metrics:
    """Long-format samples split into time-sorted (ts, value) arrays per metric name."""
    if server is None or not {"ts", "metric", "value"} <= set(server.columns):
        return {}
    ordered = server.sort_values("ts", kind="stable")
    return {
        str(name): (part["ts"].to_numpy(dtype=float), part["value"].to_numpy(dtype=float))
        for name, part in ordered.groupby("metric", sort=False)
    }


def _series(metrics: Metrics, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    for name in names:
        for candidate in (name, name.removesuffix("_total")):
            if candidate in metrics:
                return metrics[candidate]
    return np.zeros(0), np.zeros(0)


def _delta(metrics: Metrics, names: Sequence[str], w: Window) -> tuple[float, float]:
    ts, values = _series(metrics, names)
    return counter_increase(ts, monotonic(values), w)


def _gauge_mean(metrics: Metrics, names: Sequence[str], w: Window) -> float:
    ts, values = _series(metrics, names)
    inside = (ts >= w.start) & (ts <= w.end)
    return float(values[inside].mean()) if inside.any() else float("nan")


def _ratio(num: float, den: float) -> float:
    return num / den if np.isfinite(num) and np.isfinite(den) and den > 0 else float("nan")


def server_row(server: Metrics, w: Window) -> dict[str, float]:
    """Server-side columns for one window (NaN where the server exposes nothing); each
    figure's names are every registered engine's, in the registry's order of preference."""
    generated, span = _delta(server, names("generated"), w)
    accepted, _ = _delta(server, names("accepted"), w)
    draft_tokens, _ = _delta(server, names("draft_tokens"), w)
    drafts, _ = _delta(server, names("drafts"), w)
    accept_rate = _ratio(accepted, draft_tokens)
    accept_len = 1.0 + _ratio(accepted, drafts)
    if not np.isfinite(accept_len):  # tokens per verification step, both of finished requests
        accept_len = _ratio(generated, _delta(server, names("verify_steps"), w)[0])
    if not np.isfinite(accept_rate):
        accept_rate = _gauge_mean(server, names("accept_rate"), w)
    if not np.isfinite(accept_len):
        accept_len = _gauge_mean(server, names("accept_length"), w)
    hits, _ = _delta(server, names("prefix_hits"), w)
    queries, _ = _delta(server, names("prefix_queries"), w)
    hit_rate = _ratio(hits, queries)
    if not np.isfinite(hit_rate):
        hit_rate = _gauge_mean(server, names("cache_hit_rate"), w)
    return {
        "server_output_tok_s": _ratio(generated, span),
        "accept_rate": accept_rate,
        "accept_len_mean": accept_len,
        "server_running_mean": _gauge_mean(server, names("running"), w),
        "server_waiting_mean": _gauge_mean(server, names("waiting"), w),
        "prefix_hit_rate": hit_rate,
    }
