"""The requests a load process has in flight, and the end-of-run drain.

Every user registers its request's send time when it starts and removes it when the
request ends, so a process always knows its oldest unfinished request: its
*watermark*. Request rows whose requests started before the watermark are all
written; a rung whose measure window ended before every process's watermark has all
its rows, and its figures are final (`live.py`). At the end of a run the ladder shape
asks for a drain: users finish the request they are in, start no new one, and the run
ends once nothing is in flight (or a bounded grace has passed), so the last rung keeps
its latencies and its tokens. One registry per process (`IN_FLIGHT`).
"""

from __future__ import annotations

from itertools import count

import gevent
from gevent.event import Event

from specload.loadgen import wall_clock


class InFlight:
    """Send times of the requests in flight in this process, and the drain flag."""

    __slots__ = ("_ids", "_resume", "_starts", "chunks", "drain_seq", "draining", "tokens")

    def __init__(self) -> None:
        self._starts: dict[int, float] = {}
        self.chunks = 0  # chunks received by this process (a liveness signal)
        self.tokens = 0  # output tokens received by this process, as they arrive
        self._ids = count(1)
        self.draining = False
        self.drain_seq = 0  # which drain request this process has seen
        self._resume = Event()
        self._resume.set()

    def begin(self, start: float) -> int:
        key = next(self._ids)
        self._starts[key] = start
        return key

    def end(self, key: int) -> None:
        self._starts.pop(key, None)

    @property
    def count(self) -> int:
        return len(self._starts)

    def watermark(self) -> float:
        """The oldest send time still in flight, or now when nothing is."""
        return min(self._starts.values(), default=wall_clock.now())

    def drain(self, seq: int) -> None:
        """Stop starting requests (those in flight finish)."""
        self.draining, self.drain_seq = True, max(self.drain_seq, seq)
        self._resume.clear()

    def reset(self) -> None:
        """A new test: users may start requests again."""
        self.draining = False
        self._resume.set()

    def park_while_draining(self) -> None:
        """Block the calling user for as long as the process drains."""
        while self.draining:
            self._resume.wait(timeout=1.0)
            gevent.sleep(0)


IN_FLIGHT = InFlight()
