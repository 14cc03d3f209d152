"""Acceptance per rung: the server's where it counts, never 1.00 from per-token streams."""

from __future__ import annotations

import math

import pandas as pd

from specload.report.acceptance import per_token_arms, per_token_note, with_acceptance
from specload.report.run_files import ArmSource


def _summary(rows: list[tuple[str, int, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["arm", "concurrency", "tokens_per_chunk",
                                       "accept_len_mean"])


def test_a_per_token_stream_takes_the_servers_acceptance_without_an_engine_name() -> None:
    # llama.cpp as a `url:` arm with no engine given: tok/chunk 1.00, counters say 4.3
    summary = _summary([("spec-on", 1, 1.0, 4.3), ("spec-on", 4, 1.0, 4.2),
                        ("spec-off", 1, 1.0, math.nan)])
    arms = [ArmSource("spec-on", "spec_on"), ArmSource("spec-off", "spec_off")]
    assert per_token_arms(summary, arms) == ["spec-on"]
    out = with_acceptance(summary, per_token_arms(summary, arms))
    assert list(out["accept_len"][:2]) == [4.3, 4.2]
    assert list(out["accept_len_source"]) == ["server", "server", "chunks"]
    assert "spec-on" in per_token_note(["spec-on"]) and per_token_note([]) is None


def test_a_registered_per_token_engine_never_reads_chunks_as_acceptance() -> None:
    # no /metrics: the client's 1.00 is no acceptance length for llama.cpp
    summary = _summary([("on", 1, 1.0, math.nan)])
    arms = [ArmSource("on", "spec_on", engine="llamacpp")]
    out = with_acceptance(summary, per_token_arms(summary, arms))
    assert math.isnan(out["accept_len"][0]) and out["accept_len_source"][0] == ""


def test_multi_token_chunks_estimate_acceptance_where_the_server_says_nothing() -> None:
    summary = _summary([("on", 1, 2.7, math.nan), ("on", 8, 2.5, 2.6)])
    out = with_acceptance(summary, per_token_arms(summary, [ArmSource("on", "spec_on",
                                                                       engine="vllm")]))
    assert list(out["accept_len"]) == [2.7, 2.6]
    assert list(out["accept_len_source"]) == ["chunks", "server"]
    assert per_token_arms(summary, [ArmSource("on", "spec_on", engine="vllm")]) == []


def test_a_schedule_that_stops_speculating_is_no_per_token_stream() -> None:
    # the verify arm of the quickstart: several tokens per chunk up to its bound, one at
    # C = 40 where the schedule stops drafting, while the counters still hold the few
    # drafts its window saw
    summary = _summary([("verify", 1, 2.60, 2.70), ("verify", 20, 2.57, 2.69),
                        ("verify", 40, 1.007, 2.60)])
    assert per_token_arms(summary, [ArmSource("verify", "verify")]) == []
