"""The simulator's benchmarking mode: acceptance rates scaled to a mean acceptance length,
as the engines' synthetic acceptance modes fix it."""

from __future__ import annotations

import argparse

import pytest

from specload.sim import SimConfigError
from specload.sim.acceptance import AcceptanceSampler, expected_tokens_per_step, rates_for_length
from specload.sim.profile import engine_profile, load_profile, with_acceptance_length
from specload.sim.virtual import run_closed_loop

RATES = [0.78, 0.70, 0.69, 0.60, 0.55]


@pytest.mark.parametrize(("k", "length"), [(3, 1.0), (3, 2.0), (3, 2.7), (3, 3.5), (3, 4.0),
                                           (5, 4.2)])
def test_the_scaled_rates_give_the_mean_length_and_keep_their_shape(k: int,
                                                                     length: float) -> None:
    rates = rates_for_length(RATES, k, length)
    assert expected_tokens_per_step(rates, k) == pytest.approx(length, abs=1e-9)
    unclipped = [r / base for r, base in zip(rates, RATES, strict=False) if r < 1.0]
    assert max(unclipped, default=1.0) == pytest.approx(min(unclipped, default=1.0))


def test_sampling_the_scaled_rates_draws_that_mean() -> None:
    sampler = AcceptanceSampler(rates_for_length(RATES, 3, 3.2), seed=7)
    draws = [sampler.sample(3) + 1 for _ in range(40_000)]
    assert sum(draws) / len(draws) == pytest.approx(3.2, rel=0.01)


def test_a_length_past_k_plus_one_is_refused_in_the_options_words() -> None:
    with pytest.raises(SimConfigError, match=r"--acceptance-length: an acceptance length of "
                       r"4.5 needs 1 <= length <= k \+ 1 = 4"):
        with_acceptance_length(load_profile("seed-glm"), 4.5)


def test_sim_and_sim_curve_take_it_at_the_arms_k() -> None:
    args = argparse.Namespace(profile="seed-glm", acceptance_length=2.5, k=2, spec="on")
    profile = engine_profile(args)
    assert expected_tokens_per_step(profile.speculative.acceptance, 2) == pytest.approx(2.5)
    point = run_closed_loop(profile, "on", 2, 4, output_tokens=4000)
    assert point.tokens_per_chunk == pytest.approx(2.5, rel=0.02)
