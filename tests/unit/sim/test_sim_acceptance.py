"""Seeded acceptance sampling against the closed-form expectation."""

from __future__ import annotations

import pytest

from specload.sim.acceptance import (
    AcceptanceSampler,
    expected_tokens_per_step,
    k_for_batch,
    survival,
)

RATES = [0.8, 0.7, 0.6, 0.5]


def test_expected_tokens_closed_form_for_constant_rate() -> None:
    a, k = 0.7, 4
    assert expected_tokens_per_step([a] * k, k) == pytest.approx((1 - a ** (k + 1)) / (1 - a))


def test_survival_is_products_of_rates() -> None:
    assert survival(RATES, 3) == pytest.approx([0.8, 0.56, 0.336])


@pytest.mark.parametrize("k", [1, 2, 4])
def test_sample_mean_matches_expectation(k: int) -> None:
    sampler = AcceptanceSampler(RATES, seed=1)
    n = 40_000
    draws = [sampler.sample(k) for _ in range(n)]
    assert all(0 <= d <= k for d in draws)
    mean = 1 + sum(draws) / n
    assert mean == pytest.approx(expected_tokens_per_step(RATES, k), rel=0.02)
    # the distribution, not only the mean: P(accepted >= j)
    for j, p in enumerate(survival(RATES, k), start=1):
        assert sum(d >= j for d in draws) / n == pytest.approx(p, abs=0.015)


def test_k_zero_accepts_nothing_and_seed_repeats() -> None:
    assert AcceptanceSampler(RATES, seed=7).sample(0) == 0
    a, b, c = (AcceptanceSampler(RATES, seed) for seed in (7, 7, 8))
    seq_a = [a.sample(3) for _ in range(200)]
    assert seq_a == [b.sample(3) for _ in range(200)]
    assert seq_a != [c.sample(3) for _ in range(200)]


def test_k_for_batch_follows_ranges_and_is_off_outside() -> None:
    schedule = [(1, 8, 4), (9, 32, 2), (33, 64, 0)]
    assert [k_for_batch(schedule, b) for b in (1, 8, 9, 32, 33, 64, 65)] == [4, 4, 2, 2, 0, 0, 0]


def test_a_step_draws_the_rates_of_the_largest_batch_not_above_its_own() -> None:
    high, low = [0.9, 0.9, 0.9, 0.9], [0.3, 0.3, 0.3, 0.3]
    sampler = AcceptanceSampler(RATES, seed=3, by_batch={2: high, 8: low})
    assert sampler.batch_table(1)[4] == pytest.approx(survival(RATES, 4))
    for batch in (2, 3, 7):
        assert sampler.batch_table(batch)[4] == pytest.approx(survival(high, 4))
    for batch in (8, 64):
        assert sampler.batch_table(batch)[4] == pytest.approx(survival(low, 4))
    n = 20_000
    mean = sum(sampler.sample(4, batch=3) for _ in range(n)) / n + 1
    assert mean == pytest.approx(expected_tokens_per_step(high, 4), rel=0.02)


def test_a_categorys_own_rates_come_before_the_batchs() -> None:
    own = [0.1, 0.1, 0.1, 0.1]
    sampler = AcceptanceSampler(RATES, seed=4, by_category={"code": own},
                                by_batch={1: [0.95] * 4})
    n = 20_000
    mean = sum(sampler.sample(4, "code", batch=2) for _ in range(n)) / n + 1
    assert mean == pytest.approx(expected_tokens_per_step(own, 4), rel=0.02)
