"""SLO goodput: which rungs meet the p99 bounds, per arm the highest C and its tok/s."""

from __future__ import annotations

import math

import pandas as pd

from specload.report.slo import SloTarget, arm_goodput, slo_from_scenario

NAN = math.nan


def test_every_given_bound_must_hold_and_a_missing_p99_never_meets_one() -> None:
    both = SloTarget(ttft_p99_ms=500, tpot_p99_ms=50)
    got = both.meets([100, 500, 600, 100, NAN], [50, 10, 10, 51, 10])
    assert got.tolist() == [True, True, False, False, False]
    assert SloTarget(tpot_p99_ms=50).meets([NAN, 9999], [40, 60]).tolist() == [True, False]
    assert both.describe() == "TTFT p99 ≤ 500 ms and TPOT p99 ≤ 50 ms"


def test_slo_from_the_recorded_scenario() -> None:
    assert slo_from_scenario(None) is None and slo_from_scenario({"name": "x"}) is None
    assert slo_from_scenario({"slo": {"ttft_p99_ms": None, "tpot_p99_ms": 40}}) == SloTarget(
        None, 40.0)
    assert slo_from_scenario({"slo": {}}) is None


def test_arm_goodput_gives_the_highest_c_and_the_best_rung() -> None:
    summary = pd.DataFrame({
        "arm": ["on"] * 4 + ["off"], "concurrency": [1, 10, 30, 100, 1],
        "output_tok_s": [50.0, 400.0, 300.0, 900.0, 40.0],
        "ttft_p99_ms": [100, 200, 300, 5000, 900], "tpot_p99_ms": [10, 20, 30, 40, 10]})
    slo = SloTarget(ttft_p99_ms=500)
    assert arm_goodput(summary, "on", slo) == {
        "arm": "on", "rungs_met": [1, 10, 30], "highest_c": 30, "tok_s": 300.0,
        "best_c": 10, "best_tok_s": 400.0}
    assert arm_goodput(summary, "off", slo)["highest_c"] is None
    no_p99 = summary.drop(columns=["ttft_p99_ms"])
    assert arm_goodput(no_p99, "on", slo)["rungs_met"] == []
