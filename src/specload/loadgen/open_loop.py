"""Open-loop arrivals: users that send when the arrival plan says, not when they are free.

The plan (`specload.traffic.arrivals`) is pure data made before the run; the rate shape
(`rate_shape.py`) starts it and hands each load process its share of the arrival times
(directly, or in a `specload_plan` message to each worker), which `ARRIVALS` queues.
The process's users are a pool of at most `--max-in-flight` (Locust spreads them over
the processes): each takes the next arrival, sleeps until it is due and sends, with the
scheduled time in its record, so latency can be measured from the schedule as well as
from the send. No start is ever dropped: an arrival due while every user of the pool is
sending an earlier one waits for the first one free and is recorded as late because of
the cap (`late_by = cap`); any other late start is the client's (`late_by = client`:
the process woke late, short of CPU, or had not spawned its pool yet). Sends skip the
start gate: the schedule, not an idle event loop, decides when a request goes. With
`--arrival-unit sessions` an arrival is a whole chat session (`OpenSessionUser`): its
turns follow one another with think times, and the pool caps sessions, not requests.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

import gevent
from gevent.event import Event
from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from specload.loadgen import wall_clock
from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.process_state import ProcessState
from specload.loadgen.sessions import SessionRunner, _deck
from specload.loadgen.users import ChatStreamUser, Tags
from specload.runfiles.records import LATE_LIMIT_MS
from specload.traffic.arrivals import ArrivalPlan, share

log = logging.getLogger(__name__)
MSG_PLAN = "specload_plan"
IDLE_S = 0.5  # how long a user without an arrival waits before asking again


class ArrivalQueue:
    """This process's planned arrival times (epoch s), taken in order by its users."""

    __slots__ = ("_loaded", "_times", "sending")

    def __init__(self) -> None:
        self._times: deque[float] = deque()
        self._loaded = Event()
        self.sending = 0  # users of this process sending an arrival (request or session)

    def load(self, times: Sequence[float]) -> None:
        self._times = deque(times)
        self._loaded.set()

    def clear(self) -> None:
        self._times.clear()
        self._loaded.clear()

    @property
    def remaining(self) -> int:
        return len(self._times)

    def take(self, timeout: float = IDLE_S) -> float | None:
        """The next arrival, or None when there is none (yet, or any more)."""
        if not self._loaded.wait(timeout) or not self._times:
            return None
        return self._times.popleft()


ARRIVALS = ArrivalQueue()


class OpenLoopUser(ChatStreamUser):
    """One of the pool: sends each arrival it takes at its scheduled time."""

    start_gate = False

    def generate(self) -> None:
        IN_FLIGHT.park_while_draining()
        ctx = self.ctx or self._setup()
        model = self.model(ctx)
        if model is None:
            gevent.sleep(IDLE_S)
            return
        due = ARRIVALS.take()
        if due is None:
            gevent.sleep(IDLE_S)
            return
        wait = due - wall_clock.now()
        pool = self.environment.runner.target_user_count
        cap_late = -wait * 1e3 > LATE_LIMIT_MS and ARRIVALS.sending >= pool - 1
        if wait > 0:
            gevent.sleep(wait)
        ARRIVALS.sending += 1
        try:
            self.arrive(ctx, model, Tags(scheduled=due, cap_late=cap_late))
        finally:
            ARRIVALS.sending -= 1

    def arrive(self, ctx: ProcessState, model: str, tags: Tags) -> None:
        self.stream(ctx, ctx.next_prompt(), model, tags=tags)


class OpenSessionUser(OpenLoopUser):
    """One of the pool: each arrival it takes is a whole chat session."""

    keep_text = True
    uses_sessions: ClassVar[bool] = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.sessions = SessionRunner(self)

    def arrive(self, ctx: ProcessState, model: str, tags: Tags) -> None:
        self.sessions.session = None
        schedule: dict[str, Any] = {"scheduled": tags.scheduled, "cap_late": tags.cap_late}
        while True:
            self.sessions.turn(ctx, model, **schedule)
            if self.sessions.session is None:
                return
            schedule = {}
            gevent.sleep(_deck(ctx).pause())


def load_share(plan: ArrivalPlan, t0: float, index: int = 0, count: int = 1) -> int:
    """Queue this process's share of a plan started at `t0`; returns how many arrivals."""
    times = [t0 + offset for offset in share(plan.offsets(), index, count)]
    ARRIVALS.load(times)
    return len(times)


def _on_plan(environment: Environment, msg: Any, **_: Any) -> None:
    index, count = msg.data["share"]
    load_share(ArrivalPlan.from_message(msg.data["plan"]), msg.data["t0"], index, count)


def _on_init(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.register_message(MSG_PLAN, _on_plan)


def _on_test_stop(environment: Environment, **_: Any) -> None:
    # not at test_start: a local shape may already have queued the new plan by then
    ARRIVALS.clear()


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
    events.test_stop.add_listener(_on_test_stop)
