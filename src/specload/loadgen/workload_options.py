"""Locust arguments of the chat-session, open-loop, load-step and trace-replay workloads
(`docs/workloads.md`).

Derived from `settings.Workload` like `options.py` and registered by `install` (the
session and open-loop locustfiles install it, so they list the arguments and the web UI
shows them); read through `WorkloadOptions.from_env` at test start or task time,
validated with one-line errors.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from locust import events

from specload.config.settings import Workload
from specload.ladder.rungs import LadderError, parse_ladder, validate_steps
from specload.loadgen.options import FromLocust, add_arguments
from specload.traffic.arrivals import RateError, parse_levels, validate_rates
from specload.traffic.shapes import LengthSpec, ThinkTime
from specload.traffic.trace_plan import validate_speeds


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the settings of `settings.Workload`, the open loop's --rates, the trace
    replay's --speeds and the load steps' --steps."""
    add_arguments(parser, Workload)
    # the open loop's rungs: its load plan, like the ladder's --ladder (loadgen/shape.py)
    parser.add_argument("--rates", default="", include_in_web_ui=True,
                        help="open loop: comma-separated increasing arrival rates per second, "
                        "one rung each (each runs --warmup then --measure seconds exactly)")
    # a trace replay's rungs (loadgen/trace_shape.py)
    parser.add_argument("--speeds", default="", include_in_web_ui=True,
                        help="trace replay: comma-separated increasing speeds to replay "
                        "--trace at, one rung each (2: twice its rate), e.g. 0.5,1,2,4")
    # the load steps' rungs (loadgen/step_shape.py)
    parser.add_argument("--steps", default="", include_in_web_ui=True,
                        help="load steps: comma-separated user counts, each held for "
                        "--step-time seconds, e.g. 4,128,4")


@dataclass(frozen=True, slots=True)
class WorkloadOptions(FromLocust, Workload):
    """The values of the session, open-loop, load-step and trace-replay settings
    (`settings.Workload`) for one run, the open loop's rates, the trace replay's speeds
    and the load steps' user counts."""

    rates: str = ""
    speeds: str = ""
    steps: str = ""

    def more_problems(self) -> list[str]:
        problems = []
        if self.steps:
            try:
                problems += [f"--steps: {p}" for p in validate_steps(parse_ladder(self.steps))]
            except LadderError as exc:
                problems.append(f"--steps: {exc}")
        for flag, text, check in (("rates", self.rates, validate_rates),
                                  ("speeds", self.speeds, validate_speeds)):
            if not text:
                continue
            try:
                problems += [f"--{flag}: {p}" for p in check(parse_levels(text, flag))]
            except RateError as exc:
                problems.append(f"--{exc}")
        return problems

    def think(self) -> ThinkTime:
        return ThinkTime.parse(self.think_time)

    def turn_limit(self) -> LengthSpec | None:
        return LengthSpec.parse(self.turns) if self.turns else None

    def rate_list(self) -> list[float]:
        return parse_levels(self.rates)

    def speed_list(self) -> list[float]:
        return parse_levels(self.speeds, "speeds")


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(add_workload_arguments)
