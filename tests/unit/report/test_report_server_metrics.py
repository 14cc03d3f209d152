"""Server counter deltas, gauges, client saturation columns and Locust's cross-check."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specload import records
from specload.report import server_metrics as sm
from specload.report.windows import Window

W = Window(0, 4, 10.0, 20.0)


def _long(rows: list[tuple[float, str, float]]) -> sm.Metrics:
    return sm.index_metrics(pd.DataFrame(rows, columns=["ts", "metric", "value"]))


def test_monotonic_survives_a_counter_reset() -> None:
    assert sm.monotonic(np.array([5.0, 10.0, 2.0, 6.0])).tolist() == [5, 10, 12, 16]


def test_counter_increase_interpolates_at_window_edges() -> None:
    ts = np.array([5.0, 15.0, 25.0])
    total = np.array([0.0, 100.0, 300.0])
    inc, span = sm.counter_increase(ts, total, W)
    assert inc == pytest.approx(200.0 - 50.0) and span == 10.0  # 50 at t=10, 200 at t=20


def test_counter_increase_uses_inside_samples_when_edges_not_covered() -> None:
    inc, span = sm.counter_increase(np.array([12.0, 14.0, 18.0]), np.array([0.0, 5.0, 30.0]), W)
    assert (inc, span) == (30.0, 6.0)
    inc, _ = sm.counter_increase(np.array([12.0]), np.array([3.0]), W)
    assert math.isnan(inc)


def test_vllm_speculation_counters() -> None:
    rows = []
    for t in (0.0, 10.0, 20.0, 30.0):
        rows += [(t, "vllm:generation_tokens_total", 50.0 * t),
                 (t, "vllm:spec_decode_num_drafts_total", 2.0 * t),
                 (t, "vllm:spec_decode_num_draft_tokens_total", 6.0 * t),
                 (t, "vllm:spec_decode_num_accepted_tokens_total", 3.0 * t),
                 (t, "vllm:num_requests_running", 4.0), (t, "vllm:num_requests_waiting", t)]
    got = sm.server_row(_long(rows), W)
    assert got["server_output_tok_s"] == pytest.approx(50.0)
    assert got["accept_rate"] == pytest.approx(0.5)
    assert got["accept_len_mean"] == pytest.approx(2.5)
    assert got["server_running_mean"] == pytest.approx(4.0)
    assert got["server_waiting_mean"] == pytest.approx(15.0)  # samples at 10 and 20


def test_sglang_gauges_and_names_without_total_suffix() -> None:
    rows = [(t, "sglang:generation_tokens", 10.0 * t) for t in (0.0, 30.0)]
    rows += [(12.0, "sglang:spec_accept_length", 2.0), (18.0, "sglang:spec_accept_length", 3.0),
             (15.0, "sglang:spec_accept_rate", 0.4)]
    got = sm.server_row(_long(rows), W)
    assert got["server_output_tok_s"] == pytest.approx(10.0)
    assert got["accept_len_mean"] == pytest.approx(2.5)
    assert got["accept_rate"] == pytest.approx(0.4)


def test_missing_server_metrics_give_nan_not_zero() -> None:
    got = sm.server_row(sm.index_metrics(None), W)
    assert set(got) == set(sm.SERVER_COLUMNS)
    assert all(math.isnan(v) for v in got.values())


def test_client_row_takes_the_worst_sample_and_the_late_share_in_the_window() -> None:
    client = pd.DataFrame([(9.0, "a", 99.0, 1.0, 50.0, 4, 90, 30),
                           (12.0, "a", 40.0, 1.0, 3.0, 4, 95, 0),
                           (15.0, "b", 70.0, 1.0, 12.0, 4, 105, 2)],
                          columns=list(records.CLIENT_STATS_COLUMNS))
    assert sm.client_row(client, W) == {"client_cpu_max": 70.0, "client_lag_p99_max_ms": 12.0,
                                        "client_lag_late_share": 0.01}


def test_client_row_of_files_without_wake_up_counts() -> None:
    client = pd.DataFrame([(12.0, "a", 40.0, 1.0, 3.0, 4)],
                          columns=["ts", "client_id", "cpu_percent", "lag_p50_ms",
                                   "lag_p99_ms", "users"])
    got = sm.client_row(client, W)
    assert got["client_lag_p99_max_ms"] == 3.0 and math.isnan(got["client_lag_late_share"])


def _history(sizes: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"Timestamp": [9, 11, 15, 18, 21], "Name": ["Aggregated"] * 5,
                         "Total Request Count": [1, 2, 4, 8, 9],
                         "Total Average Content Size": sizes})


def test_crosscheck_agrees_within_timestamp_granularity() -> None:
    # Locust: 8 x 150 - 2 x 100 = 1000 tokens completed between its samples at 11 and 18.
    hist = _history([100.0, 100.0, 150.0, 150.0, 150.0])
    end = np.array([11.5, 13.0, 16.0, 18.5, 25.0])
    tokens = np.array([400.0, 300.0, 200.0, 100.0, 999.0])
    rate, diff = sm.crosscheck(hist, end, tokens, W)
    assert rate == pytest.approx(1000.0 / 7)
    assert diff == 0.0  # records: 500 strictly inside, 1000 with both edge seconds


def test_crosscheck_reports_missing_records() -> None:
    hist = _history([100.0, 100.0, 150.0, 150.0, 150.0])
    end = np.array([13.0, 16.0])
    tokens = np.array([300.0, 200.0])
    _, diff = sm.crosscheck(hist, end, tokens, W)
    assert diff == pytest.approx(-0.5)
    _, diff = sm.crosscheck(None, end, tokens, W)
    assert math.isnan(diff)
