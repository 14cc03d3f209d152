"""The per-rung table's columns, headings and number format, shared by every view of it.

The report prints it and puts it in report.html (`render`), and the web UI's Tokens tab
fills it in during a run (`live_figures`). This module imports nothing heavy, so the
Locust process that serves the tab can read the headings without loading pandas.
"""

from __future__ import annotations

import math

# Columns of the per-rung tables, with their headings (a view shows those it has).
TABLE_COLUMNS = {
    "arm": "arm", "concurrency": "C", "server_running_mean": "batch",
    "output_tok_s": "tok/s", "speedup": "speedup",
    "decode_tok_s_per_user": "decode tok/s/user", "ttft_p50_ms": "TTFT p50 ms",
    "ttft_p99_ms": "TTFT p99 ms", "tpot_p50_ms": "TPOT p50 ms",
    "tokens_per_chunk": "tok/chunk", "accept_len": "accept len",
    "achieved_concurrency": "achieved C", "prefix_hit_rate": "cache hits",
    "requests": "requests", "failures": "failures", "interrupted": "unfinished",
    "trace_ratio": "vs trace",
    "envelope_efficiency": "env. eff.",
}

# Chat sessions: C counts sessions; the batch offered is the requests in flight.
SESSION_COLUMNS = {
    "arm": "arm", "concurrency": "sessions", "achieved_concurrency": "in flight",
    "server_running_mean": "batch", "output_tok_s": "tok/s", "speedup": "speedup",
    "prompt_tokens_p50": "context p50", "prompt_tokens_p90": "context p90",
    "prefix_hit_rate": "cache hits", "ttft_p50_ms": "TTFT p50 ms",
    "ttft_p99_ms": "TTFT p99 ms", "tpot_p50_ms": "TPOT p50 ms",
    "requests": "requests", "failures": "failures", "trace_ratio": "vs trace",
}
# Open loop: rungs are arrival rates; latencies from the send and from the schedule.
OPEN_COLUMNS = {
    "arm": "arm", "rate": "rate/s", "achieved_rate": "achieved/s", "late_share": "late",
    "late_cap_share": "late (cap)", "achieved_concurrency": "in flight",
    "server_running_mean": "batch", "output_tok_s": "tok/s", "speedup": "speedup",
    "prefix_hit_rate": "cache hits", "ttft_p50_ms": "TTFT p50 ms",
    "ttft_sched_p99_ms": "TTFT p99 sched ms",
    "e2e_sched_mean_ms": "E2E mean sched ms", "tpot_p50_ms": "TPOT p50 ms",
    "requests": "requests", "failures": "failures", "trace_ratio": "vs trace",
}


# The live per-rung table of the web UI's Tokens tab: one arm's columns during a run,
# each request's own rate, and the load processes' health.
LIVE_COLUMNS = {
    **{k: TABLE_COLUMNS[k] for k in ("concurrency", "output_tok_s", "decode_tok_s_per_user")},
    "request_tok_s_p50": "tokens/E2E p50",
    **{k: TABLE_COLUMNS[k] for k in ("tokens_per_chunk", "ttft_p50_ms", "ttft_p99_ms",
                                     "tpot_p50_ms", "achieved_concurrency", "requests",
                                     "failures", "interrupted")},
    "reconnects": "reconnects",
    "client_cpu_max": "load CPU %", "client_lag_p99_max_ms": "load lag p99 ms",
}


def cell(value: float) -> str:
    """A table number: 4 significant digits; a percentile censored by timeouts as such."""
    return "> timeout" if value == float("inf") else f"{value:.4g}"


def text(value: object, missing: str = "–") -> str:
    """Any cell as text: numbers through `cell`, NaN and None as `missing`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return cell(value)
    return str(value)
