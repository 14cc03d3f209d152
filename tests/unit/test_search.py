"""The crossover search's pure rules: the coarse pass, each refinement round, its stops."""

from __future__ import annotations

import math

import pytest

from specload.config.settings import Search
from specload.ladder import search
from specload.ladder.search import Found


def _spec(**kw: object) -> Search:
    return Search(**({"max_concurrency": 250} | kw))  # type: ignore[arg-type]


def _found(measured: tuple[int, ...], lo: float, hi: float, c_star: float | None = None,
           ties: tuple[int, ...] = (), elapsed_s: float = 0.0,
           round_s: float = 60.0) -> Found:
    return Found(measured, c_star, lo, hi, ties, elapsed_s, round_s)


@pytest.mark.parametrize(("lo", "hi", "levels"), [
    (1, 250, [1, 16, 250]), (1, 64, [1, 8, 64]), (1, 1000, [1, 10, 100, 1000]),
    (4, 8, [4, 6, 8]), (1, 2, [1, 2])])
def test_the_coarse_pass_is_geometric_and_at_most_16x_apart(lo: int, hi: int,
                                                            levels: list[int]) -> None:
    assert search.coarse(_spec(min_concurrency=lo, max_concurrency=hi)) == levels


def test_a_wide_interval_gets_two_rungs_a_third_of_it_apart_around_the_estimate() -> None:
    step = search.refine(_spec(), _found((1, 16, 250), 16, 250, c_star=60.0), rounds_done=0)
    width = (250 / 16) ** (1 / 3)
    assert step.stop is None
    assert step.levels == [math.ceil(60 / math.sqrt(width)), math.floor(60 * math.sqrt(width))]
    assert all("inside C*'s interval C=16-250" in p.why for p in step.rungs)
    assert "below the estimate C*≈60.0" in step.rungs[0].why


def test_the_last_round_places_its_rungs_within_the_precision() -> None:
    step = search.refine(_spec(), _found((1, 16, 250, 20, 39), 20, 39, c_star=23.3),
                         rounds_done=1)
    lo, hi = step.levels
    assert (lo, hi) == (22, 25)
    assert hi / lo <= search.known_ratio(0.10)


def test_a_side_past_the_interval_goes_halfway_to_its_end() -> None:
    step = search.refine(_spec(), _found((1, 16, 250), 16, 250, c_star=200.0), rounds_done=0)
    assert step.levels == [math.ceil(200 / math.sqrt((250 / 16) ** (1 / 3))),
                           math.floor(math.sqrt(200 * 250))]


def test_the_search_stops_once_c_star_is_known_to_the_precision() -> None:
    step = search.refine(_spec(), _found((1, 16, 250, 20, 39, 22, 25), 22, 25), 2)
    assert step.stop == "C* is known to ±10%: between C=22 and C=25" and not step.rungs


@pytest.mark.parametrize(("lo", "hi", "words"), [
    (250, math.inf, "C* is above C=250, the search's max_concurrency"),
    (0.0, 1, "C* is below C=1, the search's min_concurrency")])
def test_an_interval_past_the_range_stops_the_search(lo: float, hi: float,
                                                      words: str) -> None:
    step = search.refine(_spec(), _found((1, 16, 250), lo, hi), 0)
    assert step.stop is not None and step.stop.startswith(words)


def test_an_interval_reaching_past_the_top_is_searched_up_to_it() -> None:
    step = search.refine(_spec(), _found((1, 16, 250), 16, math.inf, c_star=None), 0)
    assert step.stop is None and all(16 < x < 250 for x in step.levels)


def test_ties_in_the_interval_are_measured_again_once() -> None:
    found = _found((1, 16, 250, 20, 39), 16, 39, c_star=23.0, ties=(20, 250))
    step = search.refine(_spec(), found, rounds_done=1)
    again = [p for p in step.rungs if p.why.startswith("measured again")]
    assert [p.level for p in again] == [20]  # 250 lies outside the interval
    twice = _found((1, 16, 250, 20, 39, 20), 16, 39, c_star=23.0, ties=(20,))
    assert 20 not in search.refine(_spec(), twice, rounds_done=1).levels


def test_rounds_rungs_and_minutes_are_a_budget() -> None:
    wide = _found((1, 16, 250), 16, 250, c_star=60.0)
    assert search.refine(_spec(rounds=1), wide, 1).stop == (
        "the refinement rounds are spent (search.rounds: 1); C* lies between C=16 and "
        "C=250")
    assert search.refine(_spec(max_rungs=4), wide, 0).levels == [94]  # the nearer one
    assert search.refine(_spec(max_rungs=3), wide, 0).stop.startswith(
        "the budget is spent (search.max_rungs: 3)")
    late = _found((1, 16, 250), 16, 250, c_star=60.0, elapsed_s=190.0, round_s=60.0)
    assert search.refine(_spec(max_minutes=4), late, 0).stop == (
        "the budget is spent (search.max_rungs: 8, max_minutes: 4); C* lies between C=16 "
        "and C=250")
    assert search.refine(_spec(max_minutes=5), late, 0).levels == [94]


def test_no_whole_concurrency_left_stops_the_search() -> None:
    step = search.refine(_spec(precision=0.01), _found((1, 2, 3), 2, 3, c_star=2.5), 0)
    assert step.stop == "no whole concurrency is left to try between C=2 and C=3"


def test_a_side_a_measured_rung_covers_gives_its_rung_to_the_other_side() -> None:
    # 19 stands within the precision below the estimate 20.3: both new rungs go above it,
    # the second a whole precision width further out (a run left 22 to 64 unmeasured)
    found = _found((1, 8, 64, 13, 19), 16.6, 31.9, c_star=20.3)
    step = search.refine(_spec(max_concurrency=64), found, rounds_done=1)
    q = search.known_ratio(0.10)
    assert step.levels == [math.floor(20.3 * math.sqrt(q)), math.floor(20.3 * q ** 1.5)]
    assert [p.why.split(",")[0] for p in step.rungs] == ["above the estimate C*≈20.3"] * 2


def test_pairs_searched_together_each_add_their_own_rungs_until_all_stop() -> None:
    measured = (1, 16, 250)
    short = _found(measured, 16, 250, c_star=60.0)  # uncertain
    long = _found(measured, 250, math.inf)  # above the range: done
    step = search.refine_each(_spec(), {"context 512": short, "context 32000": long}, 0)
    assert step.levels == search.refine(_spec(), short, 0).levels
    assert all(p.why.startswith("context 512: ") for p in step.rungs)
    both = search.refine_each(_spec(), {"a": short, "b": _found(measured, 1, 16, c_star=4.0)},
                              0)
    assert set(search.refine(_spec(), short, 0).levels) < set(both.levels)
    done = search.refine_each(_spec(), {"a": long, "b": long}, 0)
    assert done.stop is not None and done.stop.startswith("a: C* is above C=250")
    assert search.refine_each(_spec(), {"only": short}, 0) == search.refine(_spec(), short, 0)
