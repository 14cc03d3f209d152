"""The interval on C*: the window's tok/s spread over its requests, and the bootstrap's
interpolated spans, said plainly where they leave the ladder."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specload.report import c_star_interval as ci
from specload.report.client_metrics import tok_s_se


def test_the_closed_form_spread_is_the_request_bootstrap_s() -> None:
    rng = np.random.default_rng(1)
    seconds = rng.uniform(2.0, 30.0, 200)  # streaming seconds inside a 30 s window
    tokens = seconds * rng.gamma(20.0, 0.5, 200)  # each request's own pace, ~10 tok/s
    length = 30.0
    pace = []
    for _ in range(4000):
        pick = rng.integers(0, tokens.size, tokens.size)
        pace.append(tokens[pick].sum() / seconds[pick].sum())
    # the bootstrap varies the pace; the window's streaming seconds are as measured
    brute = np.std(pace) * seconds.sum() / length
    assert tok_s_se(tokens, seconds, length) == pytest.approx(brute, rel=0.06)


def test_requests_at_one_pace_give_no_spread_and_an_empty_window_none() -> None:
    seconds = np.array([10.0, 30.0, 5.0])
    assert tok_s_se(12.5 * seconds, seconds, 30.0) == pytest.approx(0.0, abs=1e-9)
    assert math.isnan(tok_s_se(np.zeros(0), np.zeros(0), 30.0))


def _span(c0: float, c1: float, s0: float, s1: float) -> tuple[float, float]:
    """Where C* may lie between two rungs: the interpolation, SHAPE of the bracket
    either way in log C, within it."""
    width = math.log(c1 / c0)
    at = math.log(c0) + (s0 - 1) / (s0 - s1) * width
    return (math.exp(max(at - ci.SHAPE * width, math.log(c0))),
            math.exp(min(at + ci.SHAPE * width, math.log(c1))))


def test_each_draw_spans_its_interpolation_within_its_bracket() -> None:
    c = np.array([1.0, 4.0, 16.0, 64.0])
    speedup = np.array([[1.5, 1.2, 0.9, 0.8],   # crosses between 4 and 16
                        [1.5, 0.9, 1.1, 0.8],   # dips, recovers: the last lead counts
                        [1.5, 1.2, 1.1, 1.05],  # leads everywhere
                        [0.9, 0.9, 0.8, 0.7],   # nowhere
                        [1.5, 1.01, 0.5, 0.4]])  # just past a rung: clipped to it
    low, high = ci.draw_spans(c, speedup)
    spans = [_span(4, 16, 1.2, 0.9), _span(16, 64, 1.1, 0.8), (64.0, math.inf), (0.0, 1.0),
             (4.0, _span(4, 16, 1.01, 0.5)[1])]
    assert list(zip(low, high, strict=True)) == [pytest.approx(x) for x in spans]


def _rows(tok_s: dict[int, list[float]], se: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame([(rep, c, v, se) for c, values in tok_s.items()
                         for rep, v in enumerate(values, 1)],
                        columns=["rep", "concurrency", "output_tok_s", "output_tok_s_se"])


def test_without_noise_the_interval_is_the_interpolation_s_span() -> None:
    on = _rows({1: [150.0], 4: [300.0], 16: [400.0], 64: [500.0]})
    off = _rows({1: [100.0], 4: [250.0], 16: [500.0], 64: [800.0]})
    got = ci.c_star_interval(np.array([1, 4, 16, 64]), on, off)
    assert (got.lo, got.hi) == pytest.approx(_span(4, 16, 1.2, 0.8))
    assert got.basis == ci.REQUESTS
    assert got.words() == f"95% interval {got.lo:.3g}-{got.hi:.3g} (bootstrap over requests)"


def test_noise_widens_the_interval_and_a_flipping_rung_moves_it_to_its_neighbour() -> None:
    off = _rows({1: [100.0], 4: [250.0], 16: [500.0], 64: [800.0]}, se=0.0)
    quiet = ci.c_star_interval(np.array([1, 4, 16, 64]),
                               _rows({1: [150.0], 4: [300.0], 16: [515.0], 64: [500.0]}), off)
    noisy = ci.c_star_interval(np.array([1, 4, 16, 64]),
                               _rows({1: [150.0], 4: [300.0], 16: [515.0], 64: [500.0]}, 10.0),
                               off)
    assert quiet.lo == pytest.approx(16) and noisy.lo < 15  # some draws fall behind at 16
    assert noisy.hi > quiet.hi


def test_repeats_are_resampled_and_their_disagreement_is_the_interval() -> None:
    on = _rows({1: [150.0, 150.0], 4: [300.0, 240.0], 16: [400.0, 400.0]})
    off = _rows({1: [100.0, 100.0], 4: [250.0, 250.0], 16: [500.0, 500.0]})
    got = ci.c_star_interval(np.array([1, 4, 16]), on, off)
    # repeat 2 alone crosses between 1 and 4; repeat 1 alone, between 4 and 16
    assert got.basis == ci.REPEATS
    assert got.lo == pytest.approx(_span(1, 4, 1.5, 0.96)[0])
    assert got.hi == pytest.approx(_span(4, 16, 1.2, 0.8)[1])


def test_an_interval_beyond_the_ladder_says_so_plainly() -> None:
    on = _rows({10: [300.0], 250: [500.0]}, se=1.0)
    off = _rows({10: [100.0], 250: [400.0]}, se=1.0)
    above = ci.c_star_interval(np.array([10, 250]), on, off)
    assert above.words() == "C* is above C=250 (95% of the bootstrap's draws)"
    assert above.as_dict()["above_ladder"] and above.as_dict()["hi"] is None
    near = ci.c_star_interval(np.array([10, 250]), _rows({10: [300.0], 250: [402.0]}, 4.0),
                              off)
    assert near.words().endswith(" to above C=250: C* may be above C=250 (bootstrap over "
                                 "requests)")
    below = ci.c_star_interval(np.array([10, 250]), off, on)
    assert below.words() == "C* is below C=10 (95% of the bootstrap's draws)"


def test_the_interval_is_the_same_every_time() -> None:
    on = _rows({1: [150.0], 4: [252.0], 16: [400.0]}, se=5.0)
    off = _rows({1: [100.0], 4: [250.0], 16: [500.0]}, se=5.0)
    levels = np.array([1, 4, 16])
    assert ci.c_star_interval(levels, on, off) == ci.c_star_interval(levels, on, off)
