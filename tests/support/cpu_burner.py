"""Test-only locustfile add-on: starves its load process with a CPU-burning greenlet.

Loaded next to a real locustfile (`-f locustfiles/ladder.py,<this file>`). From test
start it burns the CPU in 40 ms bursts without yielding, then yields once, so every
other greenlet of the process (users, the client-stats lag probe) wakes tens of
milliseconds late and the process uses a whole core: a saturated load generator.
"""

from __future__ import annotations

import time
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner

BURST_S = 0.040


def _burn() -> None:
    while True:
        until = time.perf_counter() + BURST_S
        while time.perf_counter() < until:
            pass
        gevent.sleep(0)


@events.test_start.add_listener
def _start_burner(environment: Environment, **_: Any) -> None:
    if not isinstance(environment.runner, MasterRunner):
        gevent.spawn(_burn)
