"""The concurrency ladder as pure data: a ladder spec becomes a list of timed rungs.

Like a k6 executor plan, the whole load plan is computed before the run starts. Each
rung holds a fixed number of users for a warmup window (not counted) followed by a
measure window (counted). Offsets are seconds from the start of the run; the Locust
shape and the report both read the same plan, so rung boundaries are never guessed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_LADDER: tuple[int, ...] = (1, 2, 5, 10, 30, 70, 100, 250)
DEFAULT_WARMUP_S = 10.0
DEFAULT_MEASURE_S = 30.0


class LadderError(ValueError):
    """A ladder spec that cannot be planned; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Rung:
    """One rung of the ladder; offsets are seconds from the start of the run."""

    index: int  # position in the ladder, from 0
    users: int
    warmup_start: float
    measure_start: float
    measure_end: float

    @property
    def warmup_s(self) -> float:
        return self.measure_start - self.warmup_start

    @property
    def measure_s(self) -> float:
        return self.measure_end - self.measure_start


def validate_ladder(users: Sequence[int]) -> list[str]:
    """Every problem with a list of user counts, as human-readable messages."""
    problems: list[str] = []
    if len(users) == 0:
        return ["the ladder is empty: give at least one user count, e.g. [1, 2, 5, 10]"]
    for i, u in enumerate(users):
        if isinstance(u, bool) or not isinstance(u, int):
            problems.append(f"rung {i}: user count {u!r} is not a whole number")
        elif u < 1:
            problems.append(f"rung {i}: user count {u} must be at least 1")
    if problems:
        return problems
    for i in range(1, len(users)):
        if users[i] <= users[i - 1]:
            problems.append(
                f"rung {i}: the ladder must increase, but {users[i]} follows {users[i - 1]}"
            )
    return problems


def plan(
    users: Sequence[int] = DEFAULT_LADDER,
    warmup_s: float = DEFAULT_WARMUP_S,
    measure_s: float = DEFAULT_MEASURE_S,
) -> list[Rung]:
    """The timed rungs of a ladder, validated; raises `LadderError` with every problem."""
    problems = validate_ladder(users)
    if not (warmup_s >= 0):
        problems.append(f"warmup window {warmup_s!r} s must be 0 or more")
    if not (measure_s > 0):
        problems.append(f"measure window {measure_s!r} s must be more than 0")
    if problems:
        raise LadderError("; ".join(problems))
    rungs: list[Rung] = []
    t = 0.0
    for index, u in enumerate(users):
        rungs.append(Rung(index, int(u), t, t + warmup_s, t + warmup_s + measure_s))
        t += warmup_s + measure_s
    return rungs


def total_duration(rungs: Sequence[Rung]) -> float:
    """Seconds from the first warmup start to the last measure end."""
    return rungs[-1].measure_end if rungs else 0.0


def rung_at(rungs: Sequence[Rung], elapsed: float) -> Rung | None:
    """The rung running `elapsed` seconds into the run, or None once the plan is over."""
    if elapsed < 0 or not rungs or elapsed >= rungs[-1].measure_end:
        return None
    ends = [s.measure_end for s in rungs]
    return rungs[bisect.bisect_right(ends, elapsed)]


def spawn_rate(rungs: Sequence[Rung]) -> float:
    """A spawn rate that reaches every rung's user count at once (the largest jump)."""
    prev = 0
    jump = 1
    for s in rungs:
        jump = max(jump, s.users - prev)
        prev = s.users
    return float(jump)


def parse_ladder(text: str) -> list[int]:
    """Parse "1,2,5,10" (as given on a command line) into user counts."""
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise LadderError(f"ladder {text!r} must be comma-separated whole numbers") from exc
