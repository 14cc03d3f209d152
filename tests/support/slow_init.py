"""A locustfile part whose `init` listener holds its process for `HOLD_S` seconds of CPU,
as a slow start-up on a busy machine does (tests/integration/loadgen/test_run_time.py).
Listed before a shipped locustfile (`-f slow_init.py,chat.py`), it registers first."""

import time

from locust import events

HOLD_S = 1.5


@events.init.add_listener
def _hold(**_: object) -> None:
    # busy, not time.sleep: Locust's patched sleep would run the event loop
    until = time.perf_counter() + HOLD_S
    while time.perf_counter() < until:
        pass
