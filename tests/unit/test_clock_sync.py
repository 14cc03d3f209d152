"""The NTP-style offset estimate under jittered round trips, and what counts as doubtful."""

from __future__ import annotations

import random

import pytest

from specload.runfiles.clock_sync import (
    DOUBTFUL_IN_A_ROW,
    EXCHANGES_PER_ROUND,
    UNCERTAINTY_LIMIT_S,
    Exchange,
    Measurement,
    measure,
    problem,
    usable,
)

MASTER_T0 = 1_700_000_000.0


def exchange(t1: float, offset: float, there: float, busy: float, back: float) -> Exchange:
    """One ping at master time t1 to a worker whose clock is `offset` ahead: `there` and
    `back` on the wire, `busy` between the worker's two stamps."""
    t2 = t1 + there + offset
    t3 = t2 + busy
    return Exchange(t1, t2, t3, t3 - offset + back)


def jittered_round(rng: random.Random, t1: float, offset: float) -> list[Exchange]:
    """A LAN round trip (0.1-0.3 ms each way) with the delays a busy event loop adds:
    now and then several ms on one leg only, the worst case for the estimate."""
    out = []
    for i in range(EXCHANGES_PER_ROUND):
        there, back = rng.uniform(1e-4, 3e-4), rng.uniform(1e-4, 3e-4)
        if rng.random() < 0.5:
            there += rng.expovariate(1 / 0.004)  # the worker's loop wakes up late
        if rng.random() < 0.3:
            back += rng.expovariate(1 / 0.004)  # the master's loop is writing rows
        out.append(exchange(t1 + 0.02 * i, offset, there, rng.uniform(0, 5e-5), back))
    return out


def test_symmetric_paths_give_the_exact_offset_and_round_trip() -> None:
    m = measure([exchange(MASTER_T0, 3.0, 0.001, 0.0002, 0.001)])
    assert m is not None
    # (epoch seconds in a double resolve to about 0.2 µs)
    assert m.offset_s == pytest.approx(3.0, abs=1e-6)
    assert m.rtt_s == pytest.approx(0.002, abs=1e-6)
    assert m.ts == pytest.approx(MASTER_T0 + 0.0011, abs=1e-6)  # mid-way, master's clock


def test_an_asymmetric_path_is_off_by_half_its_difference_within_the_bound() -> None:
    e = exchange(MASTER_T0, -0.25, 0.009, 0.0, 0.001)
    assert e.offset - (-0.25) == pytest.approx((0.009 - 0.001) / 2, abs=1e-6)
    assert abs(e.offset + 0.25) <= e.rtt / 2


@pytest.mark.parametrize("true_offset", [0.0, 3.0, -1.5])
def test_jittered_rounds_stay_within_their_bound_and_near_the_truth(
        true_offset: float) -> None:
    rng = random.Random(int(true_offset * 10))
    errors, bounds = [], []
    for r in range(2000):
        found = measure(jittered_round(rng, MASTER_T0 + 10 * r, true_offset))
        assert found is not None and found.exchanges == EXCHANGES_PER_ROUND
        errors.append(abs(found.offset_s - true_offset))
        bounds.append(found.uncertainty_s)
    # the method's guarantee: the truth is within rtt / 2 of every estimate
    assert all(e <= b + 1e-6 for e, b in zip(errors, bounds, strict=True))
    errors.sort()
    assert errors[len(errors) // 2] < 1e-4 and errors[int(0.99 * len(errors))] < 0.002
    # such jitter (several ms on a leg, often) never makes a round doubtful
    assert max(bounds) < UNCERTAINTY_LIMIT_S


def test_the_shortest_round_trip_beats_the_average_of_the_round() -> None:
    rng = random.Random(7)
    best_err = mean_err = 0.0
    for r in range(200):
        done = jittered_round(rng, MASTER_T0 + 10 * r, 3.0)
        found = measure(done)
        assert found is not None
        best_err += abs(found.offset_s - 3.0)
        mean_err += abs(sum(e.offset for e in done) / len(done) - 3.0)
    assert best_err < mean_err / 5


def test_no_answer_no_measurement() -> None:
    assert measure([]) is None


def test_a_sure_round_that_moved_is_a_jump() -> None:
    good = Measurement(MASTER_T0, 3.0, 0.0008, 5)
    assert problem([good]) is None
    # drift of a few ppm, and noise inside the uncertainties: no jump
    assert problem([good, Measurement(MASTER_T0 + 10, 3.00005, 0.0008, 5)]) is None
    stepped = Measurement(MASTER_T0 + 20, 3.020, 0.0008, 5)
    doubt = problem([good, Measurement(MASTER_T0 + 10, 3.00005, 0.0008, 5), stepped])
    assert doubt is not None and doubt.kind == "clock_jump"
    assert doubt.since == MASTER_T0 + 10 and "+20.0 ms" in doubt.sentence
    # an uncertain round in between is not the reference
    vague = Measurement(MASTER_T0 + 10, 3.012, 0.016, 5)
    assert problem([good, vague]) is None
    assert problem([good, vague, stepped]).kind == "clock_jump"  # type: ignore[union-attr]


def test_uncertain_rounds_count_only_several_in_a_row() -> None:
    good = Measurement(MASTER_T0, 3.0, 0.0008, 5)
    busy = [Measurement(MASTER_T0 + 10 + i, 3.01, 2 * UNCERTAINTY_LIMIT_S + 0.004, 5)
            for i in range(DOUBTFUL_IN_A_ROW + 1)]
    history = [good]
    found = []
    for m in busy:
        history.append(m)
        found.append(problem(history))
    *quiet, doubt, after = found
    assert quiet == [None] * (DOUBTFUL_IN_A_ROW - 1) and after is None  # told once
    assert doubt is not None and doubt.kind == "clock_uncertain"
    assert doubt.since == MASTER_T0 + 10 and "3 rounds in a row" in doubt.sentence
    assert problem(busy[:DOUBTFUL_IN_A_ROW]).kind == "clock_uncertain"  # type: ignore[union-attr]
    assert usable(history) == [good] and usable(busy) == busy
