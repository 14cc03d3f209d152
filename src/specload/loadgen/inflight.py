"""The requests a load process has in flight, and the end-of-run drain.

Every user registers its request (its send time and its stream's tally) when it starts
and removes it when it ends, so a process always knows its oldest unfinished request,
its *watermark*, and the output tokens it has received so far, those of the requests in
flight included: its live token count. Request rows whose requests started before the
watermark are all written; a rung whose measure window ended before every process's
watermark has all its rows, and its figures are final (`live.py`). At the end of a run
the ladder shape asks for a drain: users finish the request they are in, start no new
one, and the run ends once nothing is in flight (or a bounded grace has passed), so the
last rung keeps its latencies and its tokens. One registry per process (`IN_FLIGHT`).
"""

from __future__ import annotations

from itertools import count
from typing import Protocol

import gevent
from gevent.event import Event

from specload.loadgen import wall_clock


class Tally(Protocol):
    """A request's stream as far as it has come (`measure.StreamTally`)."""

    @property
    def output_tokens(self) -> int: ...


class InFlight:
    """Send times of the requests in flight in this process, and the drain flag."""

    __slots__ = ("_ended_tokens", "_ids", "_resume", "_starts", "_tallies", "chunks",
                 "drain_seq", "draining")

    def __init__(self) -> None:
        self._starts: dict[int, float] = {}
        self.chunks = 0  # chunks received by this process (a liveness signal)
        self._tallies: dict[int, Tally] = {}  # each request's tokens so far
        self._ended_tokens = 0  # the tokens of the requests that have ended
        self._ids = count(1)
        self.draining = False
        self.drain_seq = 0  # which drain request this process has seen
        self._resume = Event()
        self._resume.set()

    def begin(self, start: float, tally: Tally | None = None) -> int:
        key = next(self._ids)
        self._starts[key] = start
        if tally is not None:
            self._tallies[key] = tally
        return key

    def end(self, key: int) -> None:
        self._starts.pop(key, None)
        tally = self._tallies.pop(key, None)
        if tally is not None:
            self._ended_tokens += tally.output_tokens

    @property
    def tokens(self) -> int:
        """Output tokens received by this process so far, those of requests in flight
        included (read once a second: nothing is counted per chunk)."""
        return self._ended_tokens + sum(t.output_tokens for t in self._tallies.values())

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
