"""The ladder plan and the pure rule that moves a run through its rungs."""

import pytest

from specload.ladder.rungs import (
    DEFAULT_LADDER,
    MAX_SPAWN_RATE_PER_PROCESS,
    STRETCH_GRACE,
    STRETCH_LIMIT,
    LadderError,
    PhaseSpan,
    Position,
    Rung,
    RungPlan,
    advance,
    nominal_duration,
    parse_ladder,
    phase_spans,
    plan,
    spawn_rate,
    start,
    validate_ladder,
    window_cap,
)


def test_default_plan() -> None:
    rungs = plan()
    assert [r.users for r in rungs] == list(DEFAULT_LADDER)
    assert rungs[0] == RungPlan(0, 1, 10.0, 30.0, 120.0, 10)
    assert nominal_duration(rungs) == pytest.approx(len(DEFAULT_LADDER) * 40.0)


def test_windows_are_respected() -> None:
    assert plan([1, 4], warmup_s=2.5, measure_s=7.0, min_requests=3, max_measure_s=9.0) == [
        RungPlan(0, 1, 2.5, 7.0, 9.0, 3), RungPlan(1, 4, 2.5, 7.0, 9.0, 3)]


RUNGS = plan([2, 5], warmup_s=10.0, measure_s=5.0, min_requests=4, max_measure_s=20.0)


def step(pos: Position, now: float, in_rung: int = 0, in_window: int = 0,
         drained: bool = False) -> tuple[Position, object]:
    # requests completed since the rung began / since the window began
    def completed(t: float) -> int:
        return in_window if t > pos.rung_start else in_rung

    return advance(RUNGS, pos, now, completed, 30.0, drained)


def test_warmup_ends_when_the_loop_turned_over_or_at_its_cap() -> None:
    pos = start(100.0)
    assert step(pos, 103.0, in_rung=1)[0] == pos  # one of two users came back
    turned, _ = step(pos, 103.0, in_rung=2)
    assert (turned.phase, turned.phase_start) == ("measure", 103.0)
    capped, _ = step(pos, 112.0)
    assert (capped.phase, capped.phase_start) == ("measure", 110.0)  # at the cap


def test_measure_lasts_its_minimum_and_until_enough_requests_completed() -> None:
    pos = Position(0, "measure", 100.0, 103.0)
    assert step(pos, 107.0, in_window=9)[0] == pos  # 4 s < 5 s
    assert step(pos, 110.0, in_window=3)[0] == pos  # too few completed
    nxt, done = step(pos, 110.0, in_window=4)
    assert nxt == Position(1, "warmup", 110.0, 110.0)
    assert done == Rung(0, 2, 100.0, 103.0, 110.0)
    capped, done = step(pos, 123.0, in_window=0)  # 20 s cap: latencies may be missing
    assert capped.rung == 1 and done.measure_end == 123.0


def test_after_the_last_rung_the_run_drains_then_stops() -> None:
    pos = Position(1, "measure", 200.0, 201.0)
    drain, done = step(pos, 206.0, in_window=4)
    assert drain == Position(2, "drain", 206.0, 206.0) and done.index == 1
    assert step(drain, 210.0)[0] == drain
    assert step(drain, 210.0, drained=True)[0].phase == "done"
    assert step(drain, 236.0)[0].phase == "done"  # the drain bound


def test_spawn_rate_is_the_largest_jump_within_locusts_limit() -> None:
    assert spawn_rate(plan([1, 2, 5, 10, 30, 70, 100])) == 40.0
    assert spawn_rate(plan([40])) == 40.0
    # above 100 users/s per process Locust warns: a bigger jump takes part of its warmup
    assert spawn_rate(plan([1, 2, 5, 10, 30, 70, 100, 250])) == MAX_SPAWN_RATE_PER_PROCESS
    assert spawn_rate(plan([100, 250]), processes=2) == 150.0
    assert spawn_rate(plan([1, 500]), processes=3) == 300.0


def test_phase_spans_mark_every_window_and_the_phase_in_progress() -> None:
    rungs = plan([1, 4], warmup_s=2.0, measure_s=5.0)
    done = [Rung(0, 1, 100.0, 102.0, 107.0)]
    assert phase_spans(rungs, [], None) == []
    assert phase_spans(rungs, done, Position(1, "warmup", 107.0, 107.0)) == [
        PhaseSpan(0, 1, "warmup", 100.0, 102.0), PhaseSpan(0, 1, "measure", 102.0, 107.0),
        PhaseSpan(1, 4, "warmup", 107.0, None)]
    assert phase_spans(rungs, done, Position(1, "measure", 107.0, 108.5))[2:] == [
        PhaseSpan(1, 4, "warmup", 107.0, 108.5), PhaseSpan(1, 4, "measure", 108.5, None)]
    both = [*done, Rung(1, 4, 107.0, 108.5, 114.0)]
    assert phase_spans(rungs, both, Position(2, "drain", 114.0, 114.0))[-1] == PhaseSpan(
        2, 0, "drain", 114.0, None)
    assert len(phase_spans(rungs, both, Position(2, "done", 114.0, 116.0))) == 4


@pytest.mark.parametrize(
    ("users", "message"),
    [
        ([], "the ladder is empty"),
        ([1, 0], "rung 1: user count 0 must be at least 1"),
        ([1, 2.5], "rung 1: user count 2.5 is not a whole number"),
        ([1, True], "rung 1: user count True is not a whole number"),
        ([5, 5], "rung 1: the ladder must increase, but 5 follows 5"),
        ([10, 2], "rung 1: the ladder must increase, but 2 follows 10"),
    ],
)
def test_invalid_ladders(users: list, message: str) -> None:
    problems = validate_ladder(users)
    assert any(message in p for p in problems), problems
    with pytest.raises(LadderError, match=message.split(":")[0]):
        plan(users)


@pytest.mark.parametrize(("warmup", "measure"), [(-1, 10), (0, 0), (1, float("nan"))])
def test_invalid_windows(warmup: float, measure: float) -> None:
    with pytest.raises(LadderError, match="window"):
        plan([1], warmup_s=warmup, measure_s=measure)
    with pytest.raises(LadderError, match="max_measure_s"):
        plan([1], measure_s=10, max_measure_s=5)


def test_parse_ladder() -> None:
    assert parse_ladder("1, 2,5,10") == [1, 2, 5, 10]
    with pytest.raises(LadderError, match="comma-separated"):
        parse_ladder("1,two")


def test_a_window_ends_at_its_cap_only_once_a_request_ended_in_it() -> None:
    """A user starts its next request when one ends: a window in which none has ended
    has seen none start. Equal requests of closed-loop users move in step, so a long one
    can outlast the cap; the window then stretches until one ends (and a tenth of the
    cap more, for the next one's first token), at most STRETCH_LIMIT times the cap."""
    rung = RUNGS[0]  # max_measure_s 20
    assert window_cap(rung, 3.0) == 20.0  # ended early: the cap holds
    assert window_cap(rung, 25.0) == pytest.approx(25.0 + STRETCH_GRACE * 20.0)
    assert window_cap(rung, None) == window_cap(rung, 1000.0) == STRETCH_LIMIT * 20.0
    pos = Position(0, "measure", 100.0, 103.0)

    def at(now: float, first_end: float | None) -> Position:
        return advance(RUNGS, pos, now, lambda t: 0, 30.0, False, lambda t: first_end)[0]

    assert at(123.0, 110.0).rung == 1  # one ended at 7 s: the 20 s cap holds
    assert at(123.0, None) == pos  # none has ended: no user started one
    assert at(129.0, 128.0) == pos  # one ended at 25 s: until 27 s
    assert at(130.0, 128.0).rung == 1
    assert at(183.0, None).rung == 1  # up to STRETCH_LIMIT x 20 s
