"""Load steps: when a step's tok/s settles, what the jump cost, and the words for it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specload.report import load_steps as ls
from specload.report.windows import Window
from specload.runfiles.records import encode_chunks


def test_an_instant_step_settles_at_once_and_loses_nothing() -> None:
    rates = np.full(40, 1000.0)
    assert ls.settle(rates, 1000.0, 4) == (0.0, 0.0)


def test_a_slow_rise_settles_where_it_stays_in_the_band_and_counts_the_shortfall() -> None:
    rates = np.concatenate([np.full(8, 500.0), np.full(32, 1000.0)])  # 2 s at half speed
    settle_s, lost = ls.settle(rates, 1000.0, 1)
    assert settle_s == pytest.approx(8 * ls.BIN_S)
    assert lost == pytest.approx(8 * ls.BIN_S * 500.0)  # 1,000 tokens short
    smoothed, _ = ls.settle(rates, 1000.0, 4)  # a window of 4 bins spreads the edge
    assert 8 * ls.BIN_S <= smoothed <= 10 * ls.BIN_S


def test_noise_inside_the_band_does_not_delay_settling_and_no_steady_level_is_nan() -> None:
    rng = np.random.default_rng(0)
    rates = 1000.0 * (1 + rng.uniform(-0.04, 0.04, 60))
    assert ls.settle(rates, 1000.0, 1)[0] == 0.0
    assert all(math.isnan(x) for x in ls.settle(rates, 0.0, 1))


def test_a_late_wobble_does_not_undo_settling_but_a_step_that_never_holds_is_infinite() -> None:
    rates = np.full(60, 1000.0)
    rates[:4] = 600.0
    rates[40] = 1200.0  # one bin out of the band long after it settled
    assert ls.settle(rates, 1000.0, 1)[0] == 4 * ls.BIN_S
    swinging = np.tile([900.0, 1100.0], 30)  # never two seconds in a row within 5%
    settle_s, lost = ls.settle(swinging, 1000.0, 1)
    assert math.isinf(settle_s) and lost == pytest.approx(0.0)
    found = ls.StepFigures("a", 2, 4, 16, 1000.0, settle_s, lost)
    assert "never within 5% of 1000 tok/s for 2 s" in found.words()


def test_the_smoothing_window_holds_enough_tokens_and_fits_the_step() -> None:
    assert ls.smoothing_bins(4000.0, 120) == 4  # 2,000 tokens take 0.5 s: at least 1 s
    assert ls.smoothing_bins(500.0, 120) == 16  # 4 s
    assert ls.smoothing_bins(100.0, 40) == 10  # at most a quarter of the step


def _request(start: float, gaps_s: list[float], tokens: list[int]) -> dict[str, object]:
    times = list(np.cumsum([start, *gaps_s])[1:])
    gaps, toks = encode_chunks(start, times, tokens)
    return {"start": start, "chunk_gaps_us": gaps, "chunk_tokens": toks,
            "output_tokens": sum(tokens)}


def test_each_step_gets_its_settling_from_the_chunks_that_arrived_after_its_jump() -> None:
    # one stream of 8 tokens every 0.01 s (800 tok/s) from t = 0, a second one joining
    # at t = 6 (the jump) but only from t = 7: the step's steady rate is 1,600 tok/s.
    # Single-digit chunk counts are read as bytes; a bin's sum (400) is not one
    a = _request(0.0, [0.01] * 1200, [8] * 1200)
    b = _request(6.0, [1.0] + [0.01] * 499, [8] * 500)
    requests = pd.DataFrame([a, b])
    windows = [Window(0, 1, 3.0, 6.0, from_users=0, since=0.0),
               Window(1, 2, 9.0, 11.0, from_users=1, since=6.0)]
    table = pd.DataFrame({"output_tok_s": [800.0, 1600.0]})
    got = ls.with_transitions(table, requests, windows)
    assert got.loc[0, "settle_s"] == pytest.approx(0.0, abs=ls.BIN_S)
    assert got.loc[1, "settle_s"] == pytest.approx(1.0, abs=2 * ls.BIN_S)
    assert got.loc[1, "lost_tokens"] == pytest.approx(800.0, rel=0.3)  # 1 s at half speed
    assert len(got.loc[1, "timeline_tok_s"].split()) == 20  # 5 s of 0.25 s bins
    plain = [Window(0, 1, 3.0, 6.0)]
    assert ls.with_transitions(table.iloc[:1], requests, plain).equals(table.iloc[:1])


def test_the_words_name_every_step_and_who_settled_first() -> None:
    summary = pd.DataFrame({
        "arm": ["a", "a", "b", "b"], "step": [1, 2, 1, 2], "from_users": [0, 4, 0, 4],
        "concurrency": [4, 16, 4, 16], "output_tok_s": [800.0, 2000.0, 790.0, 1990.0],
        "settle_s": [0.5, 0.25, 0.5, 1.75], "lost_tokens": [100.0, 50.0, 110.0, 900.0]})
    found = ls.analyse(summary)
    assert [(f.arm, f.step, f.from_users, f.users) for f in found] == [
        ("a", 1, 0, 4), ("b", 1, 0, 4), ("a", 2, 4, 16), ("b", 2, 4, 16)]
    words = ls.lines(found)
    assert "a: 0->4 users: 0.50 s to 800 tok/s, 100 tokens short" in words[1]
    assert words[-2] == ("  step 1 (0->4 users): a 0.50 s (100 tokens short), b 0.50 s "
                         "(110 tokens short); tie: a, b")
    assert words[-1] == ("  step 2 (4->16 users): a 0.25 s (50 tokens short), b 1.75 s "
                         "(900 tokens short); first: a")
    assert ls.analyse(summary.drop(columns="step")) == []
