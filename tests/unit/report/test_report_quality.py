"""Every data-quality warning fires on the condition it names and stays quiet otherwise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specload.report import client_metrics, quality
from specload.report.crossover import Crossover, PairResult
from specload.report.run_files import ArmSource
from specload.runfiles.manifest import Manifest

GOOD = {"arm": "on", "rep": 1, "concurrency": 10, "achieved_concurrency": 9.5,
        "client_cpu_max": 50.0, "client_lag_p99_max_ms": 2.0, "requests": 100, "failures": 0,
        "failures_by_kind": {}, "requests_started": 100, "interrupted": 0,
        "chunk_counted_share": 0.0, "tokens_per_chunk": 2.5, "estimated_token_share": 0.0,
        "output_tok_s": 100.0, "trace_tok_s": 100.5, "trace_ratio": 100.0 / 100.5,
        "backoff_share": 0.0, "top_failure": ""}


def _kinds(**changes: object) -> list[str]:
    return [w["kind"] for w in quality.rung_warnings(pd.DataFrame([{**GOOD, **changes}]))]


def test_a_good_rung_has_no_warning() -> None:
    assert _kinds() == []


def test_each_rung_warning() -> None:
    assert _kinds(achieved_concurrency=8.9) == ["concurrency_shortfall"]
    assert _kinds(client_cpu_max=95.0) == ["client_saturated"]
    assert _kinds(client_lag_p99_max_ms=25.0) == ["client_starved"]  # no wake-up counts
    # with wake-up counts, one stalled second (a VM hiccup) is not a starved rung
    assert _kinds(client_lag_p99_max_ms=25.0, client_lag_late_share=0.004) == []
    assert _kinds(client_lag_p99_max_ms=25.0, client_lag_late_share=0.02) == ["client_starved"]
    assert _kinds(client_cpu_max=95.0, client_lag_p99_max_ms=25.0) == ["client_saturated"]
    assert _kinds(failures=2, failures_by_kind={"stream_cut": 2}) == ["failures"]
    assert _kinds(failures=1, failures_by_kind={"stream_cut": 1}) == []  # 1 of 101 < 1%
    assert _kinds(requests=9) == ["too_few_requests"]
    assert _kinds(requests=0, requests_started=0) == ["none_started"]
    assert _kinds(trace_ratio=0.97, trace_tok_s=103.1) == ["trace_mismatch"]
    assert _kinds(chunk_counted_share=0.5) == ["tokens_from_chunks"]
    # counting chunks is exact where every chunk carries one token
    assert _kinds(chunk_counted_share=0.5, tokens_per_chunk=1.0) == []
    assert _kinds(estimated_token_share=0.04) == ["tokens_estimated"]
    assert _kinds(client_cpu_max=float("nan"), trace_ratio=float("nan")) == []
    assert _kinds(workers_lost=1, lost_detail="w-1 last heard 2.0 s into the window") == [
        "worker_lost"]
    assert _kinds(clock_problems=2, clock_detail="w-1: clock offset jumped") == ["clock"]
    assert _kinds(req_accept_rate=0.79, accept_rate=0.76) == ["acceptance_mismatch"]
    assert _kinds(req_accept_rate=0.79, accept_rate=0.76, req_draft_tokens=900) == [
        "acceptance_mismatch"]
    assert _kinds(req_accept_rate=0.78, accept_rate=0.77, req_draft_tokens=900) == []


def test_acceptance_is_compared_only_over_enough_drafts() -> None:
    """A real vLLM rung whose schedule let 10 of its 41 requests' steps draft (30 drafted
    tokens): one accepted token is 3.3% of the rate, and the two counts read 79.2% and
    76.6%."""
    assert _kinds(req_accept_rate=0.792, accept_rate=0.766, req_draft_tokens=30) == []


def _messages(**changes: object) -> list[str]:
    return [w["message"] for w in quality.rung_warnings(pd.DataFrame([{**GOOD, **changes}]))]


def test_failures_say_their_top_reason_and_silence_other_rung_warnings() -> None:
    (msg,) = _messages(failures=300, requests=0, requests_started=300, client_cpu_max=95.0,
                       achieved_concurrency=2.0, top_failure="HTTP 400: (empty body)",
                       failures_by_kind={"http_error": 300})
    assert msg == ("on at C=10: 300 of 300 requests failed (100.0%: http_error 300); "
                   "most often: HTTP 400: (empty body)")


def test_backoff_is_named_when_it_held_concurrency_down() -> None:
    (msg,) = _messages(achieved_concurrency=6.0, backoff_share=0.3)
    assert "30% of the window waiting after failed requests (backoff)" in msg


def test_missing_latencies_say_why() -> None:
    (msg,) = _messages(requests=0, requests_started=40, interrupted=3)
    assert "its E2E is not measured; TTFT shows how long they had waited" in msg
    assert "3 still running" in msg


def test_few_long_requests_that_all_completed_ask_for_more_requests() -> None:
    (msg,) = _messages(requests=6, requests_started=6, interrupted=0)
    assert "only 6 of 6 requests" in msg and "raise min_requests to 10" in msg
    (msg,) = _messages(requests=6, requests_started=9, interrupted=3)
    assert "raise max_measure_s" in msg


def _summary(tokens_on: float, tokens_off: float, length_share: float,
             se: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame([
        {"arm": "on", "concurrency": 1, "output_tokens_mean": tokens_on,
         "output_tokens_se": se, "finish_length_share": length_share},
        {"arm": "off", "concurrency": 1, "output_tokens_mean": tokens_off,
         "output_tokens_se": se, "finish_length_share": length_share}])


def test_token_mismatch_only_when_ignoring_eos() -> None:
    pair = PairResult(ArmSource("on", "spec_on"), ArmSource("off", "spec_off"),
                      pd.DataFrame(), Crossover("always"))
    assert quality.token_mismatch_warnings([pair], _summary(250, 256, 0.0), True)
    assert not quality.token_mismatch_warnings([pair], _summary(250, 256, 0.0), False)
    assert quality.token_mismatch_warnings([pair], _summary(250, 256, 1.0), False)
    assert not quality.token_mismatch_warnings([pair], _summary(256, 256, 1.0), True)


def test_drawn_lengths_that_differ_by_chance_are_no_mismatch() -> None:
    # uniform:16:48 replies, 272 and 150 requests: means 32.1 and 32.8 (a CI run), with
    # standard errors of about 0.6 and 0.75
    pair = PairResult(ArmSource("on", "spec_on"), ArmSource("off", "spec_off"),
                      pd.DataFrame(), Crossover("always"))
    assert not quality.token_mismatch_warnings([pair], _summary(32.1, 32.8, 1.0, 0.66), True)
    # a server that stops early is far beyond chance
    assert quality.token_mismatch_warnings([pair], _summary(28.0, 32.8, 1.0, 0.66), True)


def test_ignore_eos_found_anywhere_in_the_scenario() -> None:
    def manifest(scenario: dict) -> Manifest:
        return Manifest(scenario=scenario, arms=[])

    assert quality.ignore_eos_in(manifest({"request": {"ignore_eos": True}}))
    assert quality.ignore_eos_in(manifest({"arms": [{"extra_body": {"ignore_eos": True}}]}))
    assert not quality.ignore_eos_in(manifest({"ignore_eos": False}))
    assert not quality.ignore_eos_in(None)


def test_digest_groups_rung_warnings_by_kind() -> None:
    rows = pd.DataFrame([{**GOOD, "arm": "on", "concurrency": 1, "requests": 3},
                         {**GOOD, "arm": "on", "concurrency": 5, "requests": 3},
                         {**GOOD, "arm": "off", "concurrency": 5, "requests": 3,
                          "client_cpu_max": 99.0}])
    warnings = [*quality.rung_warnings(rows), quality.warning("missing_data", "no steps")]
    assert quality.digest(warnings) == [
        "no steps",
        "too few completed requests to trust latencies (lengthen those rungs): on C=1, 5; "
        "off C=5",
        "load generator saturated (add --processes or workers): off C=5",
    ]


def test_acceptance_that_differs_within_its_requests_spread_is_chance() -> None:
    """A real vLLM draft model at C = 16: 68 requests' own rate 31.5% with a standard
    error of 2.6 points (prompt to prompt the draft guesses very differently), the
    counters 33.5% over the same window: chance, not a miscount. The same gap over
    requests that draft alike (an error of 0.3 points) is one."""
    gap = {"req_accept_rate": 0.315, "accept_rate": 0.335, "req_draft_tokens": 2900}
    assert _kinds(**gap, req_accept_rate_se=0.026) == []
    assert _kinds(**gap, req_accept_rate_se=0.003) == ["acceptance_mismatch"]


def test_the_requests_rate_carries_its_standard_error() -> None:
    accepted, drafted = np.array([1.0, 3.0, 2.0, 6.0]), np.array([4.0, 4.0, 4.0, 8.0])
    rate = accepted.sum() / drafted.sum()
    residual = accepted - rate * drafted
    expected = np.sqrt((residual ** 2).sum() / (4 * 3)) / drafted.mean()
    assert client_metrics._ratio_se(accepted, drafted, rate) == pytest.approx(expected)
    assert np.isnan(client_metrics._ratio_se(accepted[:1], drafted[:1], rate))


def _w(kind: str, arm: str, c: int, rep: int = 1) -> dict:
    return {"kind": kind, "arm": arm, "concurrency": c, "rep": rep, "message": "m"}


def test_the_crossover_names_the_rungs_short_of_c_and_what_to_do() -> None:
    warnings = [_w("concurrency_shortfall", "on", 4), _w("client_starved", "on", 4),
                _w("concurrency_shortfall", "off", 8, rep=2), _w("failures", "on", 1),
                _w("concurrency_shortfall", "other", 4)]
    said = quality.shortfall_words(warnings, ("on", "off"))
    assert said is not None
    assert said.startswith("short of C at on C=4, off C=8 rep 2: the load held fewer than "
                           "C requests in flight there (more than 10% under)")
    assert said.endswith("; the load generator was short of CPU at on C=4: give it CPUs of "
                         "its own (`placement: apart`, docs/real-engines.md) or run it on "
                         "another machine, then run those rungs again")
    waited = quality.shortfall_words(warnings[2:], ("on", "off"))
    assert waited is not None and waited.endswith("(failures and backoff, the load "
                                                  "processes' CPU)")
    assert quality.shortfall_words(warnings[1:2], ("on", "off")) is None
