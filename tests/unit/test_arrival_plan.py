"""The open-loop plan: exact arrivals per window, the chosen distribution, shares."""

from __future__ import annotations

import itertools
import random

import pytest

from specload.traffic.arrivals import (
    ArrivalPlan,
    RateError,
    parse_levels,
    plan_rates,
    share,
    window_arrivals,
)
from tests.support.ks import erlang_cdf, exponential_cdf, ks_pvalue, lognormal_cdf


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def test_every_window_gets_exactly_rate_times_length_arrivals() -> None:
    plan = plan_rates([0.5, 3, 12.5], warmup_s=4, measure_s=8, seed=3)
    offsets = plan.offsets()
    for w in plan.windows(0.0):
        warm = [t for t in offsets if w.warmup_start <= t < w.measure_start]
        measured = [t for t in offsets if w.measure_start <= t < w.measure_end]
        assert (len(warm), len(measured)) == (round(w.rate * 4), round(w.rate * 8))
    assert offsets == sorted(offsets) and offsets[-1] < plan.duration == 36


@pytest.mark.parametrize("kind, cv, cdf", [
    ("poisson", 1.0, exponential_cdf(0.05)),
    ("gamma", 0.5, erlang_cdf(4, 0.05)),
])
def test_gaps_follow_the_chosen_distribution(kind: str, cv: float, cdf) -> None:
    gaps = _gaps(window_arrivals(random.Random(1), 20.0, 40.0, kind, cv))  # type: ignore[arg-type]
    assert ks_pvalue(gaps, cdf) > 0.01
    other = exponential_cdf(0.05) if kind == "gamma" else erlang_cdf(4, 0.05)
    assert ks_pvalue(gaps, other) < 1e-6  # the test can tell the two apart


def test_ks_rejects_a_wrong_mean() -> None:
    gaps = _gaps(window_arrivals(random.Random(2), 20.0, 40.0, "poisson", 1.0))
    assert ks_pvalue(gaps, exponential_cdf(0.06)) < 0.01
    lognormal = [random.Random(5).lognormvariate(0, 0.5) for _ in range(10)]
    assert 0 <= ks_pvalue(lognormal, lognormal_cdf(1.0, 0.5)) <= 1


def test_shares_together_are_the_whole_plan_in_order() -> None:
    times = plan_rates([5, 10], 1, 4, seed=9).offsets()
    parts = [share(times, i, 3) for i in range(3)]
    assert sorted(t for p in parts for t in p) == times
    assert all(p == sorted(p) for p in parts)
    with pytest.raises(ValueError):
        share(times, 3, 3)


def test_the_plan_travels_as_plain_data_and_is_seeded() -> None:
    plan = plan_rates([1, 2], 1, 2, "gamma", 2.0, seed=4)
    assert ArrivalPlan.from_message(plan.as_message()) == plan
    assert ArrivalPlan.from_message(plan.as_message()).offsets() == plan.offsets()
    assert plan_rates([1, 2], 1, 2, "gamma", 2.0, seed=5).offsets() != plan.offsets()


@pytest.mark.parametrize("args, fragment", [
    (([], 1, 1), "no rates"),
    (([2, 1], 1, 1), "rate 1: the rates must increase, but 1 follows 2"),
    (([0], 1, 1), "rate 0: 0 per second must be more than 0"),
    (([1], 1, 1, "uniform"), "arrivals 'uniform' must be one of poisson, gamma"),
    (([1], 1, 1, "poisson", 2.0), "cv 2 needs arrivals: gamma"),
    (([1], 1, 0), "measure window 0 s must be more than 0"),
])
def test_bad_plans_say_what_is_wrong(args: tuple, fragment: str) -> None:
    with pytest.raises(RateError, match=fragment):
        plan_rates(*args)
    with pytest.raises(RateError, match="comma-separated numbers"):
        parse_levels("1,x")
