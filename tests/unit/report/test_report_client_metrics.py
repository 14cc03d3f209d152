"""Client-side rung metrics on a hand-made run with known answers.

Windows: rung 0 = [100, 110) at 1 user, rung 1 = [120, 130) at 2 users.
A: start 101, chunks 102/104/106 carrying 1/2/3 tokens (all in rung 0).
B: start 108, chunks 109/111/121 with 2/3/4 tokens: spans the gap into rung 1.
C: start 105, HTTP error at 105.5.
D: start 125, chunks 126 (1 token) and 130 (5 tokens, on the window end), interrupted.
E: start 99 (before the window), chunks at 100 and 101 with 1 token each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specload.report import chunk_arrays, client_metrics, run_files
from specload.report.windows import rung_windows
from tests.support import run_files as make


@pytest.fixture
def table(tmp_path: Path) -> Any:
    reqs = [
        make.request(101.0, [102.0, 104.0, 106.0], [1, 2, 3], rid="A"),
        make.request(108.0, [109.0, 111.0, 121.0], [2, 3, 4], rid="B"),
        make.request(105.0, [], None, error_kind="http_error", end=105.5, rid="C"),
        make.request(125.0, [126.0, 130.0], [1, 5], error_kind="interrupted",
                     interrupted=True, end=130.5, rid="D"),
        make.request(99.0, [100.0, 101.0], [1, 1], rid="E"),
    ]
    steps = [(0, 1, 95.0, 100.0, 110.0), (1, 2, 110.0, 120.0, 130.0)]
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=steps)
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    return client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests), windows)


def test_tokens_count_by_arrival_time_inside_each_window(table: Any) -> None:
    assert table["output_tok_s"].tolist() == pytest.approx([1.0, 0.5])
    assert table["tokens_per_chunk"].tolist() == pytest.approx([10 / 6, 5 / 2])


def test_request_counts_rates_and_failures(table: Any) -> None:
    assert table["requests_per_s"].tolist() == pytest.approx([0.2, 0.1])
    assert table["requests"].tolist() == [2, 0]
    assert table["requests_started"].tolist() == [3, 1]
    assert table["failures"].tolist() == [1, 0]
    assert table["failures_by_kind"][0] == {"http_error": 1}
    assert table["interrupted"].tolist() == [0, 1]


def test_latency_percentiles_use_successful_requests_started_in_window(table: Any) -> None:
    row = table.iloc[0]
    assert row["ttft_p50_ms"] == pytest.approx(1000.0)
    assert row["e2e_p50_ms"] == pytest.approx(9000.0)
    assert row["tpot_p50_ms"] == pytest.approx(1150.0)
    assert row["itl_chunk_p50_ms"] == pytest.approx(2000.0)
    assert row["itl_token_p50_ms"] == pytest.approx((1000.0 + 2000.0 / 3) / 2)
    assert row["decode_tok_s_per_user"] == pytest.approx(1000.0 / 1150.0)
    assert table.iloc[1][["ttft_p50_ms", "tpot_p50_ms"]].isna().all()


def test_achieved_concurrency_is_time_average_of_in_flight(table: Any) -> None:
    assert table["achieved_concurrency"].tolist() == pytest.approx([0.85, 0.6])
    assert table["concurrency"].tolist() == [1, 2]


def test_even_split_when_server_sent_no_per_chunk_tokens(tmp_path: Path) -> None:
    reqs = [make.request(0.0, [1.0, 2.0, 3.0, 4.0], None, output_tokens=8)]
    prefix = make.write_prefix(tmp_path / "even", reqs, rungs=[(0, 1, 0.0, 0.0, 2.5)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    got = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests), windows)
    assert got["output_tok_s"][0] == pytest.approx(4 / 2.5)  # chunks at 1 and 2 s, 2 each
    assert got["tokens_per_chunk"][0] == pytest.approx(2.0)


@pytest.mark.parametrize(("tokens", "p50", "p99"), [([1, 1, 1], 4.0, 7.92), ([1, 2, 4], 2.0, 2.98)])
def test_itl_per_token_divides_each_gap_by_its_chunk_tokens(tokens: list[int], p50: float,
                                                            p99: float) -> None:
    got = client_metrics._itl_pcts(np.array([3000, 4000, 8000], dtype=np.int32),
                                   np.array(tokens, dtype=np.uint8))
    assert got["itl_chunk_p50_ms"] == 4.0
    assert got["itl_chunk_p99_ms"] == pytest.approx(7.92)
    assert got["itl_token_p50_ms"] == p50
    assert got["itl_token_p99_ms"] == pytest.approx(p99)


def test_a_rung_whose_requests_all_queue_still_gets_bounds_and_a_decode_pace(
        tmp_path: Path) -> None:
    """Window [100, 110): the two requests sent in it were still queued when their users
    stopped (censored TTFT, waits 8 s and 6 s); two earlier requests stream through it."""
    reqs = [
        make.request(101.0, [], None, interrupted=True, end=109.0, rid="Q1"),
        make.request(103.0, [], None, interrupted=True, end=109.0, rid="Q2"),
        make.request(90.0, [100.5, 102.5, 104.5, 112.0], [2, 3, 3, 1], rid="S"),
        make.request(95.0, [101.0, 109.0], [1, 4], rid="T"),
    ]
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=[(0, 3, 95.0, 100.0, 110.0)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    row = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests),
                                      windows).iloc[0]
    assert row["ttft_p50_ms"] == float("inf") and row["ttft_p99_ms"] == float("inf")
    assert row["ttft_p50_lb_ms"] == pytest.approx(7000.0)  # a lower bound, not a guess
    assert row["timeouts"] == 0 and row["requests"] == 0
    assert np.isnan(row["tpot_p50_ms"])
    # S: 6 tokens after its first chunk in 4 s; T: 4 tokens in 8 s
    assert row["stream_tpot_p50_ms"] == pytest.approx((4000 / 6 + 8000 / 4) / 2)


def test_finished_requests_leave_no_stream_pace_and_no_bound(table: Any) -> None:
    row = table.iloc[0]
    assert np.isnan(row["stream_tpot_p50_ms"]) and np.isnan(row["ttft_p50_lb_ms"])


def test_requests_cut_after_their_first_token_keep_their_ttft(tmp_path: Path) -> None:
    """Window [100, 110): two requests started in it got their first token (after 0.5 s
    and 1.5 s) and were still streaming when their users stopped; none finished."""
    reqs = [make.request(101.0, [101.5, 104.0], [2, 3], interrupted=True, end=109.0, rid="A"),
            make.request(102.0, [103.5, 106.0], [2, 3], interrupted=True, end=109.0, rid="B")]
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=[(0, 2, 95.0, 100.0, 110.0)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    row = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests),
                                      windows).iloc[0]
    assert row["requests"] == 0 and row["interrupted"] == 2
    assert row["ttft_p50_ms"] == pytest.approx(1000.0)
    assert np.isnan(row["ttft_p50_lb_ms"])


def test_a_rung_whose_requests_arrive_in_one_chunk_has_no_decode_pace(tmp_path: Path) -> None:
    """A server whose API process falls behind merges a request's tokens (vLLM's output
    collector does): all of them in the first chunk make TPOT 0, and a decode pace per
    user is then unknown, not a division by zero (a real vLLM run crashed the runner's
    progress line on it)."""
    reqs = [make.request(float(t), [t + 0.5], [32], rid=f"R{t}") for t in range(1, 9)]
    prefix = make.write_prefix(tmp_path / "merged", reqs, rungs=[(0, 1, 0.0, 0.0, 10.0)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    got = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests), windows)
    assert got["tpot_p50_ms"][0] == 0
    assert np.isnan(got["decode_tok_s_per_user"][0])
    assert got["output_tok_s"][0] == pytest.approx(8 * 32 / 10)


def test_each_requests_acceptance_length_is_spread_over_the_rung(tmp_path: Path) -> None:
    """Five requests of 12 tokens each ending in the window, whose engine told 0, 3, 6, 8
    and 9 accepted draft tokens: 12, 9, 6, 4 and 3 target steps, so 1, 1.33, 2, 3 and 4
    tokens per step; a request that drafted nothing (no fields) is left out."""
    told = [make.request(101.0 + i, [102.0 + i], [12], rid=f"T{i}", draft_tokens=12,
                         accepted_tokens=a) for i, a in enumerate((0, 3, 6, 8, 9))]
    silent = make.request(101.5, [102.5], [12], rid="S")
    prefix = make.write_prefix(tmp_path / "run", [*told, silent],
                               rungs=[(0, 5, 95.0, 100.0, 110.0)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    row = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests),
                                      windows).iloc[0]
    lengths = [1.0, 12 / 9, 2.0, 3.0, 4.0]
    assert row["req_spec_requests"] == 5
    assert row["req_accept_len"] == pytest.approx(60 / 34)  # all tokens over all steps
    assert [row[f"req_accept_len_p{p}"] for p in (10, 50, 90)] == pytest.approx(
        list(np.percentile(lengths, [10, 50, 90])))


def test_each_category_keeps_its_tokens_time_in_flight_and_acceptance(tmp_path: Path) -> None:
    """Per prompt category: its tokens in the window over its requests' seconds in flight
    there (a code request streaming 6 tokens over 5 s and one still queued: 6 tokens in
    8 s), the requests that started and ended, and their own acceptance length."""
    reqs = [make.request(101.0, [102.0, 103.0, 104.0, 105.0, 106.0], [2, 1, 1, 1, 1],
                         rid="C1", category="code", draft_tokens=6, accepted_tokens=3),
            make.request(107.0, [], None, rid="C2", category="code", end=110.0,
                         error_kind="interrupted", interrupted=True),
            make.request(101.0, [104.0, 106.0], [1, 1], rid="T1", category="chat"),
            make.request(101.0, [103.0], [4], rid="U1", category="")]  # none: left out
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=[(0, 3, 95.0, 100.0, 110.0)])
    data = run_files.read_rep(prefix)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    row = client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests),
                                      windows).iloc[0]
    assert set(row["by_category"]) == {"code", "chat"}
    code, chat = row["by_category"]["code"], row["by_category"]["chat"]
    assert code["tokens"] == 6 and code["in_flight_s"] == pytest.approx(8.0)
    assert code["tok_s_per_request"] == pytest.approx(6 / 8)
    assert code["req_accept_len"] == pytest.approx(6 / 3)  # 6 tokens in 3 target steps
    assert code["requests"] == 1 and chat["requests"] == 1
    assert chat["tok_s_per_request"] == pytest.approx(2 / 5)
    assert np.isnan(chat["req_accept_len"])  # its engine told nothing
    one = make.write_prefix(tmp_path / "one", reqs[2:], rungs=[(0, 1, 95.0, 100.0, 110.0)])
    data = run_files.read_rep(one)
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    assert client_metrics.rung_metrics(data.requests, chunk_arrays.build(data.requests),
                                       windows).iloc[0]["by_category"] == {}
