"""Open-loop arrivals: users that send when the arrival plan says, not when they are free.

The plan (`specload.traffic.arrivals`) is pure data made before the run; the rate shape
(`rate_shape.py`) starts it and hands each load process its share of the arrival times
(directly, or in a `specload_plan` message to each worker), which `ARRIVALS` queues.
The process's users are a pool of at most `--max-in-flight` (Locust spreads them over
the processes): each takes the next arrival, sleeps until it is due and sends, with the
scheduled time in its record, so latency can be measured from the schedule as well as
from the send. No start is ever dropped: an arrival due while every user of the pool is
sending an earlier one waits for the first one free and is recorded as late because of
the cap (`late_by = cap`: the user that took it was still busy when it fell due); any
other late start is the client's (`late_by = client`: the process woke late, short of
CPU, or had not spawned its pool yet). A trace replay's arrivals each say which request
they replay (`trace_replay.py`), whose users prepare before taking one (`prepare`).
Sends skip the start gate: the schedule, not an idle event loop, decides when a request
goes. With `--arrival-unit sessions` an arrival is a whole chat session
(`OpenSessionUser`): its turns follow one another with think times, and the pool caps
sessions, not requests.
"""

from __future__ import annotations

import logging
import math
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
from specload.traffic.trace_plan import TracePlan

log = logging.getLogger(__name__)
Plan = ArrivalPlan | TracePlan
MSG_PLAN = "specload_plan"
IDLE_S = 0.5  # how long a user without an arrival waits before asking again


class ArrivalQueue:
    """This process's planned arrivals, (epoch s, what it replays or None), taken in
    order by its users; `plan` is the plan they came from."""

    __slots__ = ("_arrivals", "_loaded", "plan")

    def __init__(self) -> None:
        self._arrivals: deque[tuple[float, Any]] = deque()
        self._loaded = Event()
        self.plan: Plan | None = None

    def load(self, arrivals: Sequence[tuple[float, Any]], plan: Plan | None = None) -> None:
        self._arrivals = deque(arrivals)
        self.plan = plan
        self._loaded.set()

    def clear(self) -> None:
        self._arrivals.clear()
        self._loaded.clear()

    @property
    def remaining(self) -> int:
        return len(self._arrivals)

    def take(self, timeout: float = IDLE_S) -> tuple[float, Any] | None:
        """The next arrival, or None when there is none (yet, or any more)."""
        if not self._loaded.wait(timeout) or not self._arrivals:
            return None
        return self._arrivals.popleft()


ARRIVALS = ArrivalQueue()


class OpenLoopUser(ChatStreamUser):
    """One of the pool: sends each arrival it takes at its scheduled time."""

    start_gate = False
    # when this user last finished an arrival: one that fell due before then found it
    # busy (a user not spawned yet was not busy: the client's)
    free_since = -math.inf

    def generate(self) -> None:
        IN_FLIGHT.park_while_draining()
        ctx = self.ctx or self._setup()
        model = self.model(ctx)
        if model is None:
            gevent.sleep(IDLE_S)
            return
        self.prepare(ctx, model)
        taken = ARRIVALS.take()
        if taken is None:
            gevent.sleep(IDLE_S)
            return
        due, replay = taken
        now = wall_clock.now()
        # overdue, and this user (the first to take it: the queue is in order) was busy
        # when it fell due: every user of the pool was
        cap_late = (now - due) * 1e3 > LATE_LIMIT_MS and self.free_since > due
        if due > now:
            gevent.sleep(due - now)
        try:
            self.arrive(ctx, model, Tags(scheduled=due, cap_late=cap_late), replay)
        finally:
            self.free_since = wall_clock.now()

    def prepare(self, ctx: ProcessState, model: str) -> None:
        """What to do before taking an arrival (each time: cheap once done)."""

    def arrive(self, ctx: ProcessState, model: str, tags: Tags, replay: Any) -> None:
        """Send one arrival; `replay` is what the plan gave with it (None: a rate plan's)."""
        self.stream(ctx, ctx.next_prompt(), model, tags=tags)


class OpenSessionUser(OpenLoopUser):
    """One of the pool: each arrival it takes is a whole chat session."""

    keep_text = True
    uses_sessions: ClassVar[bool] = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.sessions = SessionRunner(self)

    def arrive(self, ctx: ProcessState, model: str, tags: Tags, replay: Any) -> None:
        self.sessions.session = None
        schedule: dict[str, Any] = {"scheduled": tags.scheduled, "cap_late": tags.cap_late}
        while True:
            self.sessions.turn(ctx, model, **schedule)
            if self.sessions.session is None:
                return
            schedule = {}
            gevent.sleep(_deck(ctx).pause())


def load_share(plan: Plan, t0: float, index: int = 0, count: int = 1) -> int:
    """Queue this process's share of a plan started at `t0`; returns how many arrivals."""
    arrivals = [(t0 + offset, replay) for offset, replay in share(plan.arrivals(), index, count)]
    ARRIVALS.load(arrivals, plan)
    return len(arrivals)


def plan_from_message(data: dict[str, Any]) -> Plan:
    """A rate plan or a trace plan, from the dict it travelled as."""
    return TracePlan.from_message(data) if "requests" in data else \
        ArrivalPlan.from_message(data)


def _on_plan(environment: Environment, msg: Any, **_: Any) -> None:
    index, count = msg.data["share"]
    load_share(plan_from_message(msg.data["plan"]), msg.data["t0"], index, count)


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
