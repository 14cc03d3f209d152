"""The sweep's locustfile for `workload: {kind: open}`: arrivals at planned rates.

`open_loop.OpenLoopUser` (one request per arrival) or `open_loop.OpenSessionUser`
(one chat session per arrival, `--arrival-unit sessions`) carry the arrivals of
`rate_shape.RateShape`; `locustfiles/open.py` re-exports this for people who run
Locust by hand.
"""

from __future__ import annotations

from typing import Any

from locust import events

from specload.loadgen import open_loop, plugin, shape, workload_options
from specload.loadgen.open_loop import OpenLoopUser, OpenSessionUser
from specload.loadgen.rate_shape import RateShape
from specload.traffic.kinds import OPEN

__all__ = ["OpenLoopUser", "OpenSessionUser", "RateShape"]

plugin.install(workload_options, open_loop, shape)


@events.init.add_listener
def _one_user_class(environment: Any, **_: Any) -> None:
    """Keep the user class that `--arrival-unit` asks for."""
    unit = getattr(environment.parsed_options, "unit", "requests")
    keep = OpenSessionUser if OPEN.holds_sessions(unit) else OpenLoopUser
    environment.user_classes = [keep]
