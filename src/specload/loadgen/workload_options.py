"""Locust arguments of the chat-session, open-loop and load-step workloads
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
from specload.traffic.arrivals import RateError, parse_rates, validate_rates
from specload.traffic.shapes import LengthSpec, ThinkTime


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the settings of `settings.Workload`, the open loop's --rates and the load
    steps' --steps."""
    add_arguments(parser, Workload)
    # the open loop's rungs: its load plan, like the ladder's --ladder (loadgen/shape.py)
    parser.add_argument("--rates", default="", include_in_web_ui=True,
                        help="open loop: comma-separated increasing arrival rates per second, "
                        "one rung each (each runs --warmup then --measure seconds exactly)")
    # the load steps' rungs (loadgen/step_shape.py)
    parser.add_argument("--steps", default="", include_in_web_ui=True,
                        help="load steps: comma-separated user counts, each held for "
                        "--step-time seconds, e.g. 4,128,4")


@dataclass(frozen=True, slots=True)
class WorkloadOptions(FromLocust, Workload):
    """The values of the session, open-loop and load-step settings (`settings.Workload`)
    for one run, the open loop's rates and the load steps' user counts."""

    rates: str = ""
    steps: str = ""

    def more_problems(self) -> list[str]:
        problems = []
        if self.steps:
            try:
                problems += [f"--steps: {p}" for p in validate_steps(parse_ladder(self.steps))]
            except LadderError as exc:
                problems.append(f"--steps: {exc}")
        if not self.rates:
            return problems
        try:
            return problems + [f"--rates: {p}" for p in validate_rates(self.rate_list())]
        except RateError as exc:
            return [*problems, f"--{exc}"]

    def think(self) -> ThinkTime:
        return ThinkTime.parse(self.think_time)

    def turn_limit(self) -> LengthSpec | None:
        return LengthSpec.parse(self.turns) if self.turns else None

    def rate_list(self) -> list[float]:
        return parse_rates(self.rates)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(add_workload_arguments)
