"""The trace-replay load plan as pure data: a speed ladder over one window of a trace.

Like `arrivals.ArrivalPlan` for rate ladders, the whole run is computed before it
starts. Each rung replays the trace's window at one speed (2: twice as fast as it was
logged): first a warmup of `warmup_s` seconds that replays the window's opening at that
speed, so the server holds the load it will hold, then the measure window, the whole
window again at that speed, `length_s / speed` seconds long. Every speed therefore
measures the same requests with the same lengths and shared prefixes, only closer
together, and its planned rate is exactly `len(requests) / measure_s`. `arrivals`
gives every arrival as (seconds from the plan's start, `Replay`: the trace request and
the pass, warmup or measure window, whose prompt text it gets);
`arrivals.share` splits them round-robin over load processes, so N processes together
send the trace's schedule. The plan travels to workers as a plain dict, the requests
with it, so a load machine needs no copy of the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from specload.traffic.arrivals import RateError, RateRung, RateWindow, validate_levels
from specload.traffic.traces import Trace, TraceRequest


class Replay(NamedTuple):
    """One arrival of a trace replay: the window's request, and the pass it belongs to
    (a rung's warmup or measure window). Each pass writes its own prompt text, so a
    request replayed again is not found whole in the server's prefix cache."""

    request: int
    replay: str


@dataclass(frozen=True, slots=True)
class TracePlan:
    """The window of the trace a run replays and the speeds it replays it at: a rung per
    speed, its rate the window's requests over its measure window (the window's length
    over the speed)."""

    trace: Trace
    rungs: tuple[RateRung, ...]
    speeds: tuple[float, ...]

    @property
    def duration(self) -> float:
        return sum(r.length for r in self.rungs)

    def windows(self, t0: float) -> list[RateWindow]:
        """Each rung's windows for a plan that starts at `t0` (epoch seconds)."""
        out, start = [], t0
        for r, speed in zip(self.rungs, self.speeds, strict=True):
            out.append(RateWindow(r.index, r.rate, start, start + r.warmup_s,
                                  start + r.length, speed))
            start += r.length
        return out

    def arrivals(self) -> list[tuple[float, Replay]]:
        """Every arrival, (seconds from the plan's start, what it replays), in order."""
        out: list[tuple[float, Replay]] = []
        start = 0.0
        requests = self.trace.requests
        for r, speed in zip(self.rungs, self.speeds, strict=True):
            warm, measure = f"{speed:g} warmup", f"{speed:g}"
            out += [(start + q.t_s / speed, Replay(i, warm)) for i, q in enumerate(requests)
                    if q.t_s / speed < r.warmup_s]
            start += r.warmup_s
            out += [(start + q.t_s / speed, Replay(i, measure))
                    for i, q in enumerate(requests)]
            start += r.measure_s
        return out

    def as_message(self) -> dict[str, Any]:
        t = self.trace
        return {"source": t.source, "format": t.format, "length_s": t.length_s,
                "requests": [q.as_row() for q in t.requests],
                "rungs": [[speed, r.warmup_s] for r, speed in zip(self.rungs, self.speeds,
                                                                   strict=True)]}

    @classmethod
    def from_message(cls, data: dict[str, Any]) -> TracePlan:
        trace = Trace(data["source"], data["format"],
                      tuple(TraceRequest.from_row(row) for row in data["requests"]),
                      float(data["length_s"]))
        return plan_speeds(trace, [s for s, _ in data["rungs"]],
                           float(data["rungs"][0][1]) if data["rungs"] else 0.0)


def validate_speeds(speeds: Sequence[float]) -> list[str]:
    """Every problem with a list of replay speeds, as human-readable messages."""
    return validate_levels(speeds, "speed", "one replay speed of the trace, e.g. [0.5, 1, 2, 4]")


def plan_speeds(trace: Trace, speeds: Sequence[float], warmup_s: float) -> TracePlan:
    """The plan for a speed ladder over `trace` (already cut to its window), validated;
    raises `RateError` with every problem."""
    problems = validate_speeds(speeds)
    if not (warmup_s >= 0 and math.isfinite(warmup_s)):
        problems.append(f"warmup window {warmup_s!r} s must be 0 or more")
    if problems:
        raise RateError("; ".join(problems))
    n = len(trace.requests)
    return TracePlan(trace, tuple(RateRung(i, n * s / trace.length_s, float(warmup_s),
                                           trace.length_s / s) for i, s in enumerate(speeds)),
                     tuple(float(s) for s in speeds))
