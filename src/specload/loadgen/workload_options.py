"""Locust arguments of the chat-session and open-loop workloads (`docs/workloads.md`).

Registered on import, like `options.py` (the session and open-loop modules import this
one, so their locustfiles list the arguments and the web UI shows them); read through
`WorkloadOptions.from_env` at test start or task time, validated with one-line errors.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from locust import events
from locust.env import Environment

from specload.arrival_plan import (
    ARRIVAL_KINDS,
    DEFAULT_MAX_IN_FLIGHT,
    RateError,
    parse_rates,
    validate_arrivals,
    validate_rates,
)
from specload.loadgen.options import read_options
from specload.workload import LengthError, LengthSpec, ThinkTime

DEFAULT_THINK_TIME = "lognormal:5:0.8"
ARRIVAL_UNITS = ("requests", "sessions")


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conversations", default="builtin", include_in_web_ui=True,
                        help="sessions: multi-turn conversations, a ShareGPT .json or .jsonl "
                        "file (default: the built-in set)")
    parser.add_argument("--turns", default="", include_in_web_ui=True,
                        help="sessions: at most this many turns per session, N or drawn like "
                        "uniform:LO:HI (default: every human turn of the conversation)")
    parser.add_argument("--think-time", default=DEFAULT_THINK_TIME, include_in_web_ui=True,
                        help="sessions: seconds a user waits after each reply: N, "
                        "uniform:LO:HI, normal:MEAN:SD, lognormal:MEAN:SIGMA or "
                        "exponential:MEAN")
    parser.add_argument("--rates", default="", include_in_web_ui=True,
                        help="open loop: comma-separated increasing arrival rates per second, "
                        "one rung each (each runs --warmup then --measure seconds exactly)")
    parser.add_argument("--arrivals", default="poisson", choices=ARRIVAL_KINDS,
                        include_in_web_ui=True,
                        help="open loop: the arrival process, poisson or gamma")
    parser.add_argument("--arrival-cv", type=float, default=1.0, include_in_web_ui=True,
                        help="open loop, gamma arrivals: coefficient of variation of the gaps "
                        "between arrivals (1: as bursty as Poisson; above 1: burstier)")
    parser.add_argument("--max-in-flight", type=int, default=DEFAULT_MAX_IN_FLIGHT,
                        include_in_web_ui=True,
                        help="open loop: at most this many requests (or sessions) in flight; "
                        "an arrival due while all are busy starts late")
    parser.add_argument("--arrival-unit", default="requests", choices=ARRIVAL_UNITS,
                        include_in_web_ui=True,
                        help="open loop: each arrival is one request, or a whole chat session")


@dataclass(frozen=True, slots=True)
class WorkloadOptions:
    """The values of the session and open-loop arguments for one run."""

    conversations: str = "builtin"
    turns: str = ""
    think_time: str = DEFAULT_THINK_TIME
    rates: str = ""
    arrivals: str = "poisson"
    arrival_cv: float = 1.0
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    arrival_unit: str = "requests"

    @classmethod
    def from_env(cls, environment: Environment, check: bool = True) -> WorkloadOptions:
        opts = read_options(cls, environment)
        if check:
            opts.validate()
        return opts

    def validate(self) -> None:
        """Raise ValueError with a one-line message for values that cannot work."""
        problems = []
        for flag, parse in (("--think-time", self.think), ("--turns", self.turn_limit)):
            try:
                parse()
            except LengthError as exc:
                problems.append(f"{flag} {exc}")
        if self.rates:
            try:
                problems += [f"--rates: {p}" for p in validate_rates(self.rate_list())]
            except RateError as exc:
                problems.append(f"--{exc}")
        problems += [f"--arrivals: {p}" for p in validate_arrivals(self.arrivals,
                                                                   self.arrival_cv)]
        if self.max_in_flight < 1:
            problems.append(f"--max-in-flight must be >= 1, got {self.max_in_flight}")
        if problems:
            raise ValueError("; ".join(problems))

    def think(self) -> ThinkTime:
        return ThinkTime.parse(self.think_time)

    def turn_limit(self) -> LengthSpec | None:
        return LengthSpec.parse(self.turns) if self.turns else None

    def rate_list(self) -> list[float]:
        return parse_rates(self.rates)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(_add_arguments)
