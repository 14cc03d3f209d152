"""The concurrency ladder as pure data, and the pure rule that moves a run through it.

Like a k6 executor plan, what the run will do is computed before it starts: `plan`
turns a ladder spec into `RungPlan`s (user count and the bounds of each window). When
each window really ends depends on what the server does, so the run moves through
the plan with `advance`, a pure function of the current `Position`, the time and what
the caller observes: how many requests that started at or after a given time have
completed.

- Warmup ends once every user has completed a request sent in this rung (the closed
  loop has turned over once, so the batch no longer shows the step up), but after
  `warmup_s` at most.
- The measure window lasts at least `measure_s` and until `min_requests` requests that
  started in it have completed, but `max_measure_s` at most, so even the slowest rung
  gets latencies where the server allows it. But a window ends at its cap only once a
  request has ended inside it (and `STRETCH_GRACE` of the cap after that): a user
  starts its next request when one ends, so before that none started in the window
  and the rung would have no TTFT at all. Closed-loop users of equal requests move in
  step, every one mid-request when the window opens, so a long request at a high C can
  outlast the cap. The window then stretches, up to `STRETCH_LIMIT` times
  `max_measure_s` (`window_cap`).
- After the last rung the run drains: users finish the request they are in and start
  no new one, so the last rung keeps its tokens and latencies (`drain_s` at most).
`nominal_duration` gives the shortest time the plan can take (for ETAs), `spawn_rate`
how fast to add users, and `phase_spans` where a run has been so far (for live views).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

DEFAULT_LADDER: tuple[int, ...] = (1, 2, 5, 10, 30, 70, 100, 250)
DEFAULT_WARMUP_S = 10.0
DEFAULT_MEASURE_S = 30.0
DEFAULT_MIN_REQUESTS = 10
DEFAULT_DRAIN_S = 120.0
# Locust 2.47 warns "Your selected spawn rate is very high (>100)" above this many users
# per second per load process (runners.py: LocalRunner.start, and MasterRunner.start per
# worker), because faster spawning can starve a process's event loop.
MAX_SPAWN_RATE_PER_PROCESS = 100.0
# A window stretched until a request ended inside it lasts this share of its cap more
# (the next request of that user has started: time for its first token), ...
STRETCH_GRACE = 0.1
# ... and no further than this many times `max_measure_s`.
STRETCH_LIMIT = 4.0
CAP_TIMES_MEASURE = 4.0  # a measure window's cap when none is given: this many windows


def window_cap_s(measure_s: float, max_measure_s: float | None) -> float:
    """A measure window's cap: `max_measure_s`, else `CAP_TIMES_MEASURE` × `measure_s`."""
    return CAP_TIMES_MEASURE * measure_s if max_measure_s is None else max_measure_s


class LadderError(ValueError):
    """A ladder spec that cannot be planned; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class RungPlan:
    """One rung: its user count and the bounds of its windows (seconds)."""

    index: int  # position in the ladder, from 0
    users: int
    warmup_s: float  # at most
    measure_s: float  # at least
    max_measure_s: float  # at most
    min_requests: int  # completed requests that started in the window


Phase = Literal["warmup", "measure", "drain", "done"]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a run is: rung, phase, and when the rung and the phase began (epoch s)."""

    rung: int
    phase: Phase
    rung_start: float
    phase_start: float


@dataclass(frozen=True, slots=True)
class Where:
    """The rung a run is in, as live figures label it: its level on the workload's axis
    (users, arrivals per second, a trace's speed; None in the drain) and its phase."""

    level: float | None
    phase: Phase

    @property
    def label(self) -> str:
        return level_label(self.level)


def level_label(level: float | None) -> str:
    """A rung as live figures label it: its level as the axis writes it, or `drain`."""
    return "drain" if level is None else f"{level:g}"


@dataclass(frozen=True, slots=True)
class Rung:
    """A finished rung as it really ran (epoch seconds), as the rungs file records it."""

    index: int
    users: int
    warmup_start: float
    measure_start: float
    measure_end: float


def _user_counts(users: Sequence[int], what: str) -> list[str]:
    return [f"{what} {i}: user count {u!r} is not a whole number"
            if isinstance(u, bool) or not isinstance(u, int) else
            f"{what} {i}: user count {u} must be at least 1"
            for i, u in enumerate(users)
            if isinstance(u, bool) or not isinstance(u, int) or u < 1]


def validate_steps(users: Sequence[int]) -> list[str]:
    """Every problem with a load step's user counts: whole, at least 1, at least two
    of them, each different from the one before."""
    if len(users) < 2:
        return ["a load step needs at least two user counts to jump between, e.g. [4, 128, 4]"]
    problems = _user_counts(users, "step")
    if problems:
        return problems
    return [f"step {i}: {users[i]} users again: a step must change the count"
            for i in range(1, len(users)) if users[i] == users[i - 1]]


def validate_ladder(users: Sequence[int]) -> list[str]:
    """Every problem with a list of user counts, as human-readable messages."""
    if len(users) == 0:
        return ["the ladder is empty: give at least one user count, e.g. [1, 2, 5, 10]"]
    problems = _user_counts(users, "rung")
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
    min_requests: int = DEFAULT_MIN_REQUESTS,
    max_measure_s: float | None = None,
) -> list[RungPlan]:
    """The rungs of a ladder, validated; raises `LadderError` with every problem.

    `max_measure_s` defaults to four times `measure_s`.
    """
    problems = validate_ladder(users)
    if not (warmup_s >= 0):
        problems.append(f"warmup window {warmup_s!r} s must be 0 or more")
    if not (measure_s > 0):
        problems.append(f"measure window {measure_s!r} s must be more than 0")
    if min_requests < 0:
        problems.append(f"min_requests {min_requests} must be 0 or more")
    top = window_cap_s(measure_s, max_measure_s)
    if not (top >= measure_s):
        problems.append(f"max_measure_s {top!r} must be at least measure_s {measure_s!r}")
    if problems:
        raise LadderError("; ".join(problems))
    return [RungPlan(i, int(u), float(warmup_s), float(measure_s), float(top), min_requests)
            for i, u in enumerate(users)]


def start(now: float) -> Position:
    return Position(0, "warmup", now, now)


def window_cap(rung: RungPlan, first_end_s: float | None) -> float:
    """The longest a rung's measure window may last, given when (seconds into it) the
    first request ended inside it, None while none has (see the module docstring)."""
    limit = STRETCH_LIMIT * rung.max_measure_s
    if first_end_s is None:
        return limit
    return max(rung.max_measure_s,
               min(first_end_s + STRETCH_GRACE * rung.max_measure_s, limit))


def advance(rungs: Sequence[RungPlan], pos: Position, now: float,
            completed_since: Callable[[float], int], drain_s: float, drained: bool,
            first_end_since: Callable[[float], float | None] = lambda t: t,
            ) -> tuple[Position, Rung | None]:
    """The position at `now`, and the rung that finished its measure window, if any.

    `completed_since(t)`: requests that started at or after `t` and have completed (the
    caller's observation); `first_end_since(t)`: when the first request to end at or
    after `t` ended, failed or not (None while none has); `drained`: nothing is in flight
    any more (during the drain).
    A warmup cut by its cap ends at its cap, not at the tick that notices, and the
    measure window that follows is judged in the same call; a window ends at `now`,
    when the user count really changes.
    """
    finished = None
    for _ in range(3):  # warmup -> measure -> next rung, at most, in one tick
        nxt, done = _step(rungs, pos, now, completed_since, drain_s, drained,
                          first_end_since)
        finished = finished or done
        if nxt == pos or done is not None:
            return nxt, finished
        pos = nxt
    return pos, finished


def _step(rungs: Sequence[RungPlan], pos: Position, now: float,
          completed_since: Callable[[float], int], drain_s: float, drained: bool,
          first_end_since: Callable[[float], float | None]
          ) -> tuple[Position, Rung | None]:
    rung = rungs[pos.rung] if pos.rung < len(rungs) else None
    elapsed = now - pos.phase_start
    if pos.phase == "warmup" and rung is not None:
        if elapsed >= rung.warmup_s:
            return replace(pos, phase="measure", phase_start=pos.phase_start + rung.warmup_s), None
        if completed_since(pos.rung_start) >= rung.users:
            return replace(pos, phase="measure", phase_start=now), None
        return pos, None
    if pos.phase == "measure" and rung is not None:
        long_enough = (elapsed >= rung.measure_s
                       and completed_since(pos.phase_start) >= rung.min_requests)
        first_end = first_end_since(pos.phase_start)
        cap = window_cap(rung, None if first_end is None else first_end - pos.phase_start)
        if not (long_enough or elapsed >= cap):
            return pos, None
        done = Rung(rung.index, rung.users, pos.rung_start, pos.phase_start, now)
        if rung.index + 1 < len(rungs):
            return Position(rung.index + 1, "warmup", now, now), done
        return Position(rung.index + 1, "drain", now, now), done
    if pos.phase == "drain" and (drained or elapsed >= drain_s):
        return replace(pos, phase="done", phase_start=now), None
    return pos, None


def nominal_duration(rungs: Sequence[RungPlan]) -> float:
    """The shortest the plan can take: every warmup in full, every window at its minimum."""
    return sum(r.warmup_s + r.measure_s for r in rungs)


def spawn_rate(rungs: Sequence[RungPlan], processes: int = 1) -> float:
    """Users per second: every rung's user count at once (the largest jump), but at most
    `MAX_SPAWN_RATE_PER_PROCESS` per load process; a bigger jump then takes part of its
    rung's warmup (a jump of 150 users takes 1.5 s on one process)."""
    prev = 0
    jump = 1
    for r in rungs:
        jump = max(jump, r.users - prev)
        prev = r.users
    return float(min(jump, MAX_SPAWN_RATE_PER_PROCESS * max(1, processes)))


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    """One phase of one rung as it ran (epoch s); `end` is None while it lasts."""

    rung: int
    users: int
    phase: Phase
    start: float
    end: float | None


def phase_spans(rungs: Sequence[RungPlan], finished: Sequence[Rung],
                pos: Position | None) -> list[PhaseSpan]:
    """Every warmup and measure window so far, then the phase in progress (a drain has
    no rung: its `rung` is the ladder's length and its `users` 0)."""
    spans: list[PhaseSpan] = []
    for r in finished:
        spans += [PhaseSpan(r.index, r.users, "warmup", r.warmup_start, r.measure_start),
                  PhaseSpan(r.index, r.users, "measure", r.measure_start, r.measure_end)]
    if pos is None or pos.phase == "done":
        return spans
    if pos.phase == "drain":
        return [*spans, PhaseSpan(pos.rung, 0, "drain", pos.phase_start, None)]
    users = rungs[pos.rung].users
    if pos.phase == "measure":
        spans.append(PhaseSpan(pos.rung, users, "warmup", pos.rung_start, pos.phase_start))
    return [*spans, PhaseSpan(pos.rung, users, pos.phase, pos.phase_start, None)]


def parse_ladder(text: str) -> list[int]:
    """Parse "1,2,5,10" (as given on a command line) into user counts."""
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise LadderError(f"ladder {text!r} must be comma-separated whole numbers") from exc
