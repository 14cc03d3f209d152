"""Speedup pairing, the noise band, every crossing and the crossover concurrency C*."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specload.report import crossover as cx
from specload.report.run_files import ArmSource
from specload.report.slo import SloTarget


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
    assert [c.direction for c in got.crossings] == ["down", "up", "down"]
    assert not got.monotone and got.rises == ((2, 5, True),)
    assert got.speculate_to == got.c_star and got.off_above


def test_the_issue_curve_is_not_paying_off_everywhere() -> None:
    # speedups 1.6, 1.2, 0.97, 0.99, 1.01: the last rung above 1 used to read "always"
    got = cx.find_crossover([1, 5, 10, 30, 100], [1.6, 1.2, 0.97, 0.99, 1.01])
    assert got.verdict == cx.CROSSES and (got.below, got.above) == (5, 10)
    assert got.ties == (30, 100) and got.behind == (10,)
    down, up = got.crossings
    assert (down.direction, down.below, down.above, down.within_noise) == ("down", 5, 10, False)
    assert (up.direction, up.below, up.above, up.within_noise) == ("up", 30, 100, True)
    assert up.c == pytest.approx(math.exp(math.log(30) + 0.5 * math.log(100 / 30)))
    assert got.rises == ((10, 30, False), (30, 100, False))  # rises within the noise


def test_twice_crossing_curve_reports_every_crossing() -> None:
    got = cx.find_crossover([1, 4, 16, 64], [1.5, 0.8, 1.3, 0.7])
    assert got.verdict == cx.CROSSES and (got.below, got.above) == (16, 64)
    assert [(c.direction, c.below) for c in got.crossings] == [("down", 1), ("up", 4),
                                                                 ("down", 16)]
    assert all(not c.within_noise for c in got.crossings)
    assert got.rises == ((4, 16, True),) and got.behind == (4, 64)


@pytest.mark.parametrize(("speedup", "decision"), [
    (1.02, cx.TIE), (1.0201, cx.ON), (0.98, cx.TIE), (0.9799, cx.OFF), (1.0, cx.TIE)])
def test_band_edges_without_repeats(speedup: float, decision: str) -> None:
    lo, hi = speedup - cx.NOISE_BAND, speedup + cx.NOISE_BAND
    assert cx.rung_decisions([lo], [hi]) == [decision]


def test_exactly_one_is_a_tie() -> None:
    got = cx.find_crossover([2, 4], [1.0, 0.5])
    assert got.verdict == cx.INCONCLUSIVE and got.c_star is None and got.speculate_to is None
    (crossing,) = got.crossings
    assert crossing.c == pytest.approx(2.0) and crossing.within_noise


def test_ties_after_the_last_gain_leave_the_answer_open() -> None:
    # repeats' spread: 1.01 and 0.99 hold 1, so neither is measurably better there
    got = cx.find_crossover([1, 10, 100], [1.3, 1.01, 0.99], [1.25, 0.95, 0.9],
                            [1.35, 1.07, 1.05], band=cx.BAND_REPEATS)
    assert got.verdict == cx.INCONCLUSIVE and got.ties == (10, 100)
    assert (got.speculate_to, got.off_above, got.c_star) == (1.0, True, None)
    assert got.as_dict()["band"] == cx.BAND_REPEATS


def test_gain_at_the_top_after_a_dip_keeps_speculation_on() -> None:
    got = cx.find_crossover([1, 10, 100], [1.5, 0.9, 1.3])
    assert got.verdict == cx.INCONCLUSIVE and got.behind == (10,)
    assert (got.speculate_to, got.off_above) == (100.0, False)


def test_always_never_and_unknown() -> None:
    assert cx.find_crossover([1, 10, 100], [1.8, 1.3, 1.05]).verdict == cx.ALWAYS
    assert cx.find_crossover([1, 10, 100], [1.8, 1.3, 1.01]).verdict == cx.INCONCLUSIVE
    never = cx.find_crossover([1, 10], [0.9, 0.5])
    assert never.verdict == cx.NEVER and never.c_star is None and never.above == 1
    assert cx.find_crossover([1, 10], [1.01, 0.5]).verdict == cx.INCONCLUSIVE
    assert cx.find_crossover([], []).verdict == cx.UNKNOWN


def test_slo_decisions_drive_the_verdict() -> None:
    c, s = [1, 10, 100], [1.5, 1.3, 1.2]
    # spec-on misses the SLO at C=100 while spec-off meets it: off there, C* at the rung
    got = cx.find_crossover(c, s, decisions=[cx.ON, cx.ON, cx.OFF],
                            from_speedup=[True, True, False])
    assert got.verdict == cx.CROSSES and got.c_star == 10.0 and got.crossings == ()
    unmet = cx.find_crossover(c, s, decisions=[cx.ON, cx.ON, cx.NEITHER])
    assert unmet.verdict == cx.ALWAYS and unmet.below == 10 and unmet.unmet == (100,)
    none = cx.find_crossover(c, s, decisions=[cx.NEITHER] * 3)
    assert none.verdict == cx.SLO_UNMET and none.speculate_to is None


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
    assert res.crossover.verdict == cx.CROSSES and res.crossover.band == cx.BAND_REPEATS
    assert res.speedup["band_lo"].tolist() == pytest.approx([2.0, 0.8])
    assert res.speedup["decision"].tolist() == [cx.ON, cx.OFF]
    lo, hi = res.c_star_range()
    rep1 = math.exp(math.log(10) * (1.0 / 1.2))  # 2.0 -> 0.8 crosses 1 at t = 1/1.2
    rep2 = math.exp(math.log(10) * (1.2 / 1.3))  # 2.2 -> 0.9
    assert (lo, hi) == pytest.approx((rep1, rep2))
    assert res.interval.lo < rep1 < rep2 < res.interval.hi and res.interval.basis == "repeats"


def _summary(rows: list[tuple[str, int, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["arm", "concurrency", "output_tok_s",
                                       "server_running_mean", "ttft_p99_ms"])


def test_analyse_pair_carries_batch_sizes_and_decides_on_slo_goodput() -> None:
    summary = _summary([("on", 1, 200.0, 1.0, 100.0), ("on", 10, 900.0, 9.5, 300.0),
                        ("on", 30, 1000.0, 16.0, 900.0),
                        ("off", 1, 100.0, 1.0, 80.0), ("off", 10, 600.0, 9.8, 200.0),
                        ("off", 30, 900.0, 28.0, 400.0)])
    per_rep = summary[["arm", "concurrency", "output_tok_s"]].assign(rep=1)
    res = cx.analyse_pair(_arm("on", "spec_on"), _arm("off", "spec_off"), summary, per_rep,
                          SloTarget(ttft_p99_ms=500))
    assert res.speedup["batch_on"].tolist() == [1.0, 9.5, 16.0]
    assert res.speedup["batch_off"].tolist() == [1.0, 9.8, 28.0]
    assert res.crossover.verdict == cx.ALWAYS  # on raw tok/s spec-on leads everywhere
    assert res.speedup["slo_decision"].tolist() == [cx.ON, cx.ON, cx.OFF]
    assert res.goodput is not None and res.decision is res.goodput
    assert (res.goodput.verdict, res.goodput.c_star) == (cx.CROSSES, 10.0)


def _rep(below: int, above: int) -> cx.Crossover:
    return cx.Crossover(cx.CROSSES, math.sqrt(below * above), below, above)


def test_repeats_agree_on_one_bracket_held_more_often_than_any_other() -> None:
    never = cx.Crossover(cx.NEVER, above=1)
    two = cx.agreement([_rep(2, 4), _rep(2, 4)])
    assert two.settled and two.as_dict() == {"verdict": "crosses", "below": 2, "above": 4,
                                             "repeats": 2, "of": 2, "settled": True}
    split = cx.agreement([_rep(2, 4), _rep(4, 8)])
    assert not split.settled
    assert split.words() == ("the repeats disagree: repeat 1 crosses between C=2 and C=4; "
                             "repeat 2 crosses between C=4 and C=8")
    third = cx.agreement([_rep(2, 4), _rep(4, 8), _rep(4, 8)])
    assert third.settled and third.repeats == 2 and (third.verdict.below, third.verdict.above) == (
        4, 8)
    assert third.words() == "2 of 3 repeats: crosses between C=4 and C=8"
    # C* itself may move within the bracket: the rungs around it decide
    assert cx.agreement([_rep(2, 4), cx.Crossover(cx.CROSSES, 3.9, 2, 4)]).settled
    assert not cx.agreement([_rep(1, 2), _rep(2, 4), _rep(4, 8)]).settled
    assert not cx.agreement([_rep(2, 4), _rep(2, 4), never, never]).settled
    assert cx.agreement([never, cx.Crossover(cx.NEVER, above=1), _rep(1, 2)]).settled
    assert cx.agreement([never, never]).words() == "2 of 2 repeats: says never"


def test_a_rung_measured_twice_in_a_repeat_counts_once_at_its_mean() -> None:
    # a search measured C=10 again in each repeat (its noise band held 1)
    per_rep = pd.DataFrame([
        ("on", 1, 1, 200.0), ("on", 1, 10, 400.0), ("on", 1, 10, 380.0),
        ("on", 2, 1, 220.0), ("on", 2, 10, 360.0), ("on", 2, 10, 380.0),
        ("off", 1, 1, 100.0), ("off", 1, 10, 500.0), ("off", 1, 10, 500.0),
        ("off", 2, 1, 100.0), ("off", 2, 10, 400.0), ("off", 2, 10, 400.0),
    ], columns=["arm", "rep", "concurrency", "output_tok_s"])
    summary = per_rep.groupby(["arm", "concurrency"], as_index=False)["output_tok_s"].mean()
    res = cx.analyse_pair(_arm("on", "spec_on"), _arm("off", "spec_off"), summary, per_rep)
    assert res.speedup["speedup_min"].tolist() == pytest.approx([2.0, 0.78])
    assert res.speedup["speedup_max"].tolist() == pytest.approx([2.2, 0.925])
    assert [c.below for c in res.rep_c_stars] == [1, 1]
