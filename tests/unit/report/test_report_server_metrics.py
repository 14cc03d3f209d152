"""Server counter deltas and gauges per rung window."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

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


def test_sglang_acceptance_length_is_tokens_per_verification_step_where_counted() -> None:
    """SGLang's counters of finished requests, tokens and verification steps, give the
    length its own `spec_accept_length` reports per request; the gauges only without."""
    rows = [(t, "sglang:generation_tokens_total", 10.0 * t) for t in (0.0, 10.0, 20.0, 30.0)]
    rows += [(t, "sglang:spec_verify_calls_total", 4.0 * t) for t in (0.0, 10.0, 20.0, 30.0)]
    rows += [(15.0, "sglang:spec_accept_length", 9.0), (15.0, "sglang:spec_accept_rate", 0.4)]
    got = sm.server_row(_long(rows), W)
    assert got["accept_len_mean"] == pytest.approx(2.5)
    assert got["accept_rate"] == pytest.approx(0.4)


def test_missing_server_metrics_give_nan_not_zero() -> None:
    got = sm.server_row(sm.index_metrics(None), W)
    assert set(got) == set(sm.SERVER_COLUMNS)
    assert all(math.isnan(v) for v in got.values())


def test_prefix_cache_hit_rate_from_vllm_token_counters() -> None:
    rows = []
    for t in (0.0, 10.0, 20.0, 30.0):
        rows += [(t, "vllm:prefix_cache_queries_total", 1000.0 * t),
                 (t, "vllm:prefix_cache_hits_total", 600.0 * t + (500.0 if t >= 20 else 0.0))]
    got = sm.server_row(_long(rows), W)
    assert got["prefix_hit_rate"] == pytest.approx((6000.0 + 500.0) / 10000.0)


def test_prefix_cache_hit_rate_from_sglang_gauge_and_nan_without_either() -> None:
    rows = [(12.0, "sglang:cache_hit_rate", 0.5), (18.0, "sglang:cache_hit_rate", 0.7),
            (12.0, "sglang:num_running_reqs", 1.0), (18.0, "sglang:num_running_reqs", 1.0)]
    assert sm.server_row(_long(rows), W)["prefix_hit_rate"] == pytest.approx(0.6)
    assert math.isnan(sm.server_row(_long([(12.0, "vllm:num_requests_running", 1.0)]),
                                    W)["prefix_hit_rate"])
