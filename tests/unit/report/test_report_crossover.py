"""Speedup pairing and the crossover concurrency C* in log C."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specload.report import crossover as cx
from specload.report.run_files import ArmSource


def test_crossing_interpolates_in_log_c() -> None:
    got = cx.find_crossover([1, 10, 30, 100], [1.5, 1.2, 0.8, 0.6])
    # between 10 (1.2) and 30 (0.8): halfway in log C
    assert got.verdict == cx.CROSSES
    assert got.c_star == pytest.approx(math.sqrt(10 * 30))
    assert (got.below, got.above) == (10, 30)


def test_last_crossing_counts_when_speedup_dips_and_recovers() -> None:
    got = cx.find_crossover([1, 2, 5, 10, 30], [1.4, 0.9, 1.1, 0.95, 0.7])
    assert got.verdict == cx.CROSSES and (got.below, got.above) == (5, 10)
    assert got.c_star == pytest.approx(math.exp(math.log(5) + (0.1 / 0.15) * math.log(2)))


def test_exactly_one_counts_as_still_paying_off() -> None:
    got = cx.find_crossover([2, 4], [1.0, 0.5])
    assert got.c_star == pytest.approx(2.0)


def test_always_never_and_unknown() -> None:
    assert cx.find_crossover([1, 10, 100], [1.8, 1.3, 1.01]).verdict == cx.ALWAYS
    never = cx.find_crossover([1, 10], [0.9, 0.5])
    assert never.verdict == cx.NEVER and never.c_star is None and never.above == 1
    assert cx.find_crossover([], []).verdict == cx.UNKNOWN


def test_nan_points_are_ignored_and_order_does_not_matter() -> None:
    got = cx.find_crossover([100, 1, 10, 30], [0.5, 1.5, float("nan"), 1.1])
    assert (got.below, got.above) == (30, 100)


def _arm(name: str, role: str) -> ArmSource:
    return ArmSource(name, role)


def test_pair_arms() -> None:
    on1, on2, off1, off2 = (_arm("a", "spec_on"), _arm("b", "spec_on"),
                            _arm("x", "spec_off"), _arm("y", "spec_off"))
    assert cx.pair_arms([on1, on2, off1]) == [(on1, off1), (on2, off1)]
    assert cx.pair_arms([on1, on2, off1, off2]) == [(on1, off1), (on2, off2)]
    assert cx.pair_arms([on1, _arm("z", "other")]) == []


def test_analyse_pair_with_repeats_gives_speedup_spread_and_c_star_range() -> None:
    per_rep = pd.DataFrame([
        ("on", 1, 1, 200.0), ("on", 1, 10, 400.0), ("on", 2, 1, 220.0), ("on", 2, 10, 360.0),
        ("off", 1, 1, 100.0), ("off", 1, 10, 500.0), ("off", 2, 1, 100.0), ("off", 2, 10, 400.0),
    ], columns=["arm", "rep", "concurrency", "output_tok_s"])
    summary = per_rep.groupby(["arm", "concurrency"], as_index=False)["output_tok_s"].mean()
    res = cx.analyse_pair(_arm("on", "spec_on"), _arm("off", "spec_off"), summary, per_rep)
    assert res.speedup["speedup"].tolist() == pytest.approx([2.1, 380 / 450])
    assert res.speedup["speedup_min"].tolist() == pytest.approx([2.0, 0.8])
    assert res.speedup["speedup_max"].tolist() == pytest.approx([2.2, 0.9])
    assert res.crossover.verdict == cx.CROSSES
    lo, hi = res.c_star_range()
    rep1 = math.exp(math.log(10) * (1.0 / 1.2))  # 2.0 -> 0.8 crosses 1 at t = 1/1.2
    rep2 = math.exp(math.log(10) * (1.2 / 1.3))  # 2.2 -> 0.9
    assert (lo, hi) == pytest.approx((rep1, rep2))
