"""The ladder plan: user counts and windows -> timed steps."""

import itertools

import pytest

from specload.ladder import (
    DEFAULT_LADDER,
    LadderError,
    Rung,
    parse_ladder,
    plan,
    rung_at,
    spawn_rate,
    total_duration,
    validate_ladder,
)


def test_default_plan_has_contiguous_rungs() -> None:
    steps = plan()
    assert [s.users for s in steps] == list(DEFAULT_LADDER)
    assert steps[0].warmup_start == 0.0
    for a, b in itertools.pairwise(steps):
        assert b.warmup_start == a.measure_end
    assert total_duration(steps) == pytest.approx(len(DEFAULT_LADDER) * 40.0)


def test_windows_are_respected() -> None:
    steps = plan([1, 4], warmup_s=2.5, measure_s=7.0)
    assert steps == [Rung(0, 1, 0.0, 2.5, 9.5), Rung(1, 4, 9.5, 12.0, 19.0)]
    assert steps[1].warmup_s == 2.5
    assert steps[1].measure_s == 7.0


def test_zero_warmup_is_allowed() -> None:
    steps = plan([3], warmup_s=0, measure_s=5)
    assert steps[0].measure_start == steps[0].warmup_start == 0.0


@pytest.mark.parametrize(
    ("elapsed", "rung"),
    [(0.0, 0), (9.49, 0), (9.5, 1), (18.99, 1), (19.0, None), (-1.0, None)],
)
def test_rung_at(elapsed: float, rung: int | None) -> None:
    steps = plan([1, 4], warmup_s=2.5, measure_s=7.0)
    got = rung_at(steps, elapsed)
    assert (got.index if got else None) == rung


def test_spawn_rate_is_the_largest_jump() -> None:
    assert spawn_rate(plan([1, 2, 5, 10, 30, 70, 100, 250])) == 150.0
    assert spawn_rate(plan([40])) == 40.0


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


def test_parse_ladder() -> None:
    assert parse_ladder("1, 2,5,10") == [1, 2, 5, 10]
    with pytest.raises(LadderError, match="comma-separated"):
        parse_ladder("1,two")
