"""The load processes' health per rung: worst CPU, worst lag p99, share of late wake-ups."""

from __future__ import annotations

import math

import pandas as pd

from specload.report.load_health import client_row
from specload.report.windows import Window
from specload.runfiles import records

W = Window(0, 4, 10.0, 20.0)


def test_client_row_takes_the_worst_sample_and_the_late_share_in_the_window() -> None:
    client = pd.DataFrame([(9.0, "a", 99.0, 1.0, 50.0, 4, 90, 30, 7, 4, 14),
                           (12.0, "a", 40.0, 1.0, 3.0, 4, 95, 0, 9, 4, 18),
                           (15.0, "b", 70.0, 1.0, 12.0, 4, 105, 2, 8, 4, 16)],
                          columns=list(records.CLIENT_STATS_COLUMNS))
    assert client_row(client, W) == {"client_cpu_max": 70.0, "client_lag_p99_max_ms": 12.0,
                                        "client_lag_late_share": 0.01}


def test_client_row_of_files_without_wake_up_counts() -> None:
    client = pd.DataFrame([(12.0, "a", 40.0, 1.0, 3.0, 4)],
                          columns=["ts", "client_id", "cpu_percent", "lag_p50_ms",
                                   "lag_p99_ms", "users"])
    got = client_row(client, W)
    assert got["client_lag_p99_max_ms"] == 3.0 and math.isnan(got["client_lag_late_share"])
