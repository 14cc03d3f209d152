"""Per-rung health of the load processes, from `<prefix>_client_stats.csv`.

Each load process samples its CPU and event-loop lag once a second
(`loadgen/health_probe.py`); per rung the report keeps the worst CPU, the worst
per-second lag p99 and the share of lag-probe wake-ups later than
`records.CLIENT_LAG_LIMIT_MS`, from which `quality` judges whether the client, not the
server, set the pace.
"""

from __future__ import annotations

import pandas as pd

from specload.report.windows import Window

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


