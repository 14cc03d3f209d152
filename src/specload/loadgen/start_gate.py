"""Reading before sending: users start their next request only when no socket is waiting.

A load process measures arrival times from kernel timestamps, which stay exact while
the process is late to read a socket, but only until the next chunk lands on it: the
kernel merges queued data and keeps the newer stamp. The risk is highest in waves,
when many streams end in the same engine step (equal lengths, `ignore_eos`) and every
user builds and sends its next request back to back: at a few hundred microseconds
each, a wave of a hundred users keeps the event loop from reading for tens of
milliseconds, so the first chunks of the wave's early requests merge and their TTFT
grows by whole steps. `StartGate.wait` parks the user until the gevent loop goes idle
(a libev idle watcher: nothing else pending) and releases one user per idle pass, so
reads always go first; a late start only moves the request, it does not distort it
(TTFT is stamped at the send). A user never waits longer than `max_wait_s`, so a
saturated process still offers its load (its client-stats warning then says so).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gevent import getcurrent
from gevent.hub import get_hub

DEFAULT_MAX_WAIT_S = 0.05


class StartGate:
    """Queue of users waiting for an idle event loop; one is let through per idle pass."""

    __slots__ = ("_hub", "_idle", "_waiting", "max_wait_s", "released_idle",
                 "released_timeout")

    def __init__(self, max_wait_s: float = DEFAULT_MAX_WAIT_S) -> None:
        self.max_wait_s = max_wait_s
        self._waiting: deque[list[Any]] = deque()  # [greenlet or None once released]
        self._hub: Any = None
        self._idle: Any = None
        self.released_idle = 0
        self.released_timeout = 0

    def wait(self) -> None:
        """Block the calling greenlet until the loop is idle (or `max_wait_s` passed)."""
        hub = get_hub()
        if self._hub is not hub:
            self._hub, self._idle = hub, hub.loop.idle()
            self._waiting.clear()
        entry: list[Any] = [getcurrent()]
        self._waiting.append(entry)
        if not self._idle.active:
            self._idle.start(self._on_idle)
        timer = hub.loop.timer(self.max_wait_s)
        timer.start(self._on_timeout, entry)
        try:
            hub.switch()
        finally:
            timer.close()
            entry[0] = None

    def _on_idle(self) -> None:
        waiting = self._waiting
        while waiting:
            glet = waiting.popleft()[0]
            if glet is not None:
                self.released_idle += 1
                glet.switch()
                break
        if not waiting:
            self._idle.stop()

    def _on_timeout(self, entry: list[Any]) -> None:
        glet = entry[0]
        if glet is not None:
            self.released_timeout += 1
            glet.switch()
