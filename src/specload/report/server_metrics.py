"""Per-rung numbers from sampled time series: server /metrics, client self-monitoring, Locust.

Counters (server token and speculation counters, Locust's cumulative content size) are
made monotonic across resets, then their increase over a window is taken between
values interpolated at the window edges, or between the first and last samples inside
the window when the samples do not cover both edges. Gauges are averaged over the
samples inside the window. Missing metrics give NaN, never zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from specload.report.windows import Window, aggregated_history

# Names as exposed, in order of preference (vLLM V1 first, then SGLang).
GENERATED = ("vllm:generation_tokens_total", "sglang:generation_tokens_total")
DRAFTS = ("vllm:spec_decode_num_drafts_total",)
DRAFT_TOKENS = ("vllm:spec_decode_num_draft_tokens_total",)
ACCEPTED = ("vllm:spec_decode_num_accepted_tokens_total",)
ACCEPT_LENGTH_GAUGE = ("sglang:spec_accept_length",)
ACCEPT_RATE_GAUGE = ("sglang:spec_accept_rate",)
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs")
WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs")
MIN_CROSSCHECK_SPAN_S = 5.0

SERVER_COLUMNS = ("server_output_tok_s", "accept_rate", "accept_len_mean",
                  "server_running_mean", "server_waiting_mean")


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
    """Server-side columns for one window (NaN where the server exposes nothing)."""
    generated, span = _delta(server, GENERATED, w)
    accepted, _ = _delta(server, ACCEPTED, w)
    draft_tokens, _ = _delta(server, DRAFT_TOKENS, w)
    drafts, _ = _delta(server, DRAFTS, w)
    accept_rate = _ratio(accepted, draft_tokens)
    accept_len = 1.0 + _ratio(accepted, drafts)
    if not np.isfinite(accept_rate):
        accept_rate = _gauge_mean(server, ACCEPT_RATE_GAUGE, w)
    if not np.isfinite(accept_len):
        accept_len = _gauge_mean(server, ACCEPT_LENGTH_GAUGE, w)
    return {
        "server_output_tok_s": _ratio(generated, span),
        "accept_rate": accept_rate,
        "accept_len_mean": accept_len,
        "server_running_mean": _gauge_mean(server, RUNNING, w),
        "server_waiting_mean": _gauge_mean(server, WAITING, w),
    }


CLIENT_COLUMNS = ("client_cpu_max", "client_lag_p99_max_ms", "client_lag_late_share")


def client_row(client: pd.DataFrame | None, w: Window) -> dict[str, float]:
    """Load processes in a window: worst CPU (% of one core), worst per-second lag p99,
    and the share of all lag-probe wake-ups later than `records.CLIENT_LAG_LIMIT_MS`
    (NaN for files written before that was counted)."""
    if client is None:
        return dict.fromkeys(CLIENT_COLUMNS, float("nan"))
    ts = client["ts"].to_numpy(dtype=float)
    inside = (ts >= w.start) & (ts <= w.end)
    part = client[inside]

    def worst(col: str) -> float:
        return float(part[col].max()) if col in part and len(part) else float("nan")

    late_share = float("nan")
    if {"lag_samples", "lag_late"} <= set(part.columns):
        samples = float(part["lag_samples"].sum())
        late_share = float(part["lag_late"].sum()) / samples if samples else float("nan")
    return {"client_cpu_max": worst("cpu_percent"), "client_lag_p99_max_ms": worst("lag_p99_ms"),
            "client_lag_late_share": late_share}


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
