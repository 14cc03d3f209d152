"""A locustfile part whose `init` listener waits `WAIT_S` seconds on the event loop, as a
plugin doing I/O at start-up does (tests/integration/loadgen/test_late_worker.py). Listed
before a shipped locustfile (`-f yielding_init.py,chat.py`), it registers first, so a
worker that joins a running test handles the master's spawn message, and fires
test_start, before specload's own `init` listeners have run."""

import gevent
from locust import events

WAIT_S = 2.0


@events.init.add_listener
def _wait(**_: object) -> None:
    gevent.sleep(WAIT_S)
