"""The open-loop load plan as pure data: a rate ladder and the time of every arrival.

Like a k6 arrival-rate executor, and like `ladder/rungs.py` for closed loops, what the run
will do is computed before it starts. Each rung holds its rate through a warmup of
`warmup_s` and a measure window of `measure_s`, back to back: the windows are fixed in
time, because arrivals do not wait for the server. Every window gets exactly
`round(rate x length)` arrivals, placed as a Poisson process (or a gamma renewal
process with coefficient of variation `cv`) conditioned on that count: `n + 1` gaps are
drawn from the distribution and scaled to fill the window. For Poisson arrivals this
is exactly the uniform order statistics; gamma gaps keep their shape. So the plan
offers exactly the target rate in every measure window, and an achieved rate below it
measures the client or its cap, not sampling noise.

`ArrivalPlan.offsets` gives every arrival in seconds from the plan's start, and
`share` splits them round-robin over load processes, so N processes together send the
one planned sequence. The plan travels to workers as a plain dict (`as_message`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

T = TypeVar("T")
ArrivalKind = Literal["poisson", "gamma"]
ARRIVAL_KINDS: tuple[str, ...] = ("poisson", "gamma")
DEFAULT_MAX_IN_FLIGHT = 256


class RateError(ValueError):
    """A rate ladder that cannot be planned; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class RateRung:
    """One rung: its rate (arrivals per second) and its two windows, in seconds."""

    index: int
    rate: float
    warmup_s: float
    measure_s: float

    @property
    def length(self) -> float:
        return self.warmup_s + self.measure_s


@dataclass(frozen=True, slots=True)
class RateWindow:
    """A rung's windows in epoch seconds, for a plan started at a given time."""

    index: int
    rate: float
    warmup_start: float
    measure_start: float
    measure_end: float
    speed: float | None = None  # a trace replay's: the trace's speed (`trace_plan.py`)


@dataclass(frozen=True, slots=True)
class ArrivalPlan:
    """The rungs, the arrival process and its seed: everything the arrivals follow from."""

    rungs: tuple[RateRung, ...]
    kind: ArrivalKind = "poisson"
    cv: float = 1.0
    seed: int = 0

    @property
    def duration(self) -> float:
        return sum(r.length for r in self.rungs)

    def windows(self, t0: float) -> list[RateWindow]:
        """Each rung's windows for a plan that starts at `t0` (epoch seconds)."""
        out, start = [], t0
        for r in self.rungs:
            out.append(RateWindow(r.index, r.rate, start, start + r.warmup_s, start + r.length))
            start += r.length
        return out

    def offsets(self) -> list[float]:
        """Every arrival of the plan, in seconds from its start, in order."""
        rng = random.Random(self.seed)
        out: list[float] = []
        start = 0.0
        for r in self.rungs:
            for length in (r.warmup_s, r.measure_s):
                out += [start + t for t in window_arrivals(rng, r.rate, length, self.kind,
                                                            self.cv)]
                start += length
        return out

    def arrivals(self) -> list[tuple[float, None]]:
        """`offsets`, each with nothing more to say about it (a trace plan's say what
        they replay)."""
        return [(t, None) for t in self.offsets()]

    def as_message(self) -> dict[str, Any]:
        return {"rungs": [[r.rate, r.warmup_s, r.measure_s] for r in self.rungs],
                "kind": self.kind, "cv": self.cv, "seed": self.seed}

    @classmethod
    def from_message(cls, data: dict[str, Any]) -> ArrivalPlan:
        rungs = tuple(RateRung(i, float(rate), float(w), float(m))
                      for i, (rate, w, m) in enumerate(data["rungs"]))
        return cls(rungs, data["kind"], float(data["cv"]), int(data["seed"]))


def window_arrivals(rng: random.Random, rate: float, length: float, kind: ArrivalKind,
                    cv: float) -> list[float]:
    """`round(rate x length)` arrival times in [0, length), as the module docstring says."""
    n = round(rate * length)
    if n <= 0 or length <= 0:
        return []
    shape = 1.0 if kind == "poisson" else 1.0 / cv**2
    gaps = [rng.gammavariate(shape, 1.0) for _ in range(n + 1)]
    scale = length / math.fsum(gaps)
    out, t = [], 0.0
    for gap in gaps[:n]:
        t += gap * scale
        out.append(t)
    return out


def share(times: Sequence[T], index: int, count: int) -> list[T]:
    """Every `count`-th arrival from position `index`: one load process's part."""
    if not 0 <= index < count:
        raise ValueError(f"share index {index} outside 0..{count - 1}")
    return list(times[index::count])


def validate_levels(levels: Sequence[float], name: str, first: str, unit: str = ""
                    ) -> list[str]:
    """Every problem with a rung's levels (`name`: rate, speed), as human-readable
    messages; `first` says what one level is, for the error of an empty list."""
    if len(levels) == 0:
        return [f"no {name}s: give at least {first}"]
    problems = []
    for i, r in enumerate(levels):
        if isinstance(r, bool) or not isinstance(r, int | float) or not math.isfinite(r):
            problems.append(f"{name} {i}: {r!r} is not a number")
        elif r <= 0:
            problems.append(f"{name} {i}: {r:g}{unit} must be more than 0")
    if not problems:
        problems += [f"{name} {i}: the {name}s must increase, but {levels[i]:g} follows "
                     f"{levels[i - 1]:g}" for i in range(1, len(levels))
                     if levels[i] <= levels[i - 1]]
    return problems


def validate_rates(rates: Sequence[float]) -> list[str]:
    """Every problem with a list of arrival rates, as human-readable messages."""
    return validate_levels(rates, "rate", "one arrival rate per second, e.g. [1, 2, 5]",
                           " per second")


def validate_arrivals(kind: str, cv: float) -> list[str]:
    problems = []
    if kind not in ARRIVAL_KINDS:
        problems.append(f"arrivals {kind!r} must be one of {', '.join(ARRIVAL_KINDS)}")
    if not (cv > 0 and math.isfinite(cv)):
        problems.append(f"cv {cv!r} must be more than 0")
    elif kind == "poisson" and cv != 1.0:
        problems.append(f"cv {cv:g} needs arrivals: gamma (Poisson arrivals have cv 1)")
    return problems


def plan_rates(rates: Sequence[float], warmup_s: float, measure_s: float,
               kind: str = "poisson", cv: float = 1.0, seed: int = 0) -> ArrivalPlan:
    """The plan for a rate ladder, validated; raises `RateError` with every problem."""
    problems = validate_rates(rates) + validate_arrivals(kind, cv)
    if not warmup_s >= 0:
        problems.append(f"warmup window {warmup_s!r} s must be 0 or more")
    if not measure_s > 0:
        problems.append(f"measure window {measure_s!r} s must be more than 0")
    if problems:
        raise RateError("; ".join(problems))
    rungs = tuple(RateRung(i, float(r), float(warmup_s), float(measure_s))
                  for i, r in enumerate(rates))
    # `kind` is one of ARRIVAL_KINDS: `validate_arrivals` said so above
    return ArrivalPlan(rungs, kind, float(cv), seed)  # type: ignore[arg-type]


def parse_levels(text: str, name: str = "rates") -> list[float]:
    """Parse "0.5,1,2,5" (as given on a command line) into arrival rates (or speeds)."""
    try:
        return [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise RateError(f"{name} {text!r} must be comma-separated numbers") from exc
