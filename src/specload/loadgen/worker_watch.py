"""The master's watch over its workers: each one's clock offset, and workers it loses.

Clocks: the master measures every worker process's clock against its own with the
exchange of `specload.runfiles.clock_sync`, over Locust's custom messages
(`specload_clock_ping`, and the worker's `specload_clock_pong` carrying t2, t3 and its
`client_id`). A round of `clock_sync.EXCHANGES_PER_ROUND` pings starts a second after
the worker connected (Locust fires `worker_connect` "immediately after the connection is
established, so init event may not yet have finished on worker", `locust/event.py`,
2.47: the worker may not listen for pings yet) and again every
`clock_sync.ROUND_EVERY_S`, while a test runs or waits to start (not while it stops: a
stopping worker's message loop is busy stopping its users). Each round's best exchange
goes to `<prefix>_clock.csv` (`records.CLOCK_COLUMNS`) and to the live rungs, which put
the worker's rows on the master's clock (an uncertain round only until a sure one comes;
it is measured again a second later); what `clock_sync.problem` finds doubtful becomes
an event. A worker that never answers (an older specload) is taken as on the master's
clock after `UNANSWERED_ROUNDS` rounds, with an event saying so.

Losing a worker: a Locust worker sends a heartbeat every second and the master counts
down `HEARTBEAT_LIVENESS` (3) missed ones before it marks the worker `STATE_MISSING`
and takes it out of its users dispatcher (`MasterRunner.heartbeat_worker`, Locust 2.47):
about 4 s after the last heartbeat. Only with `--enable-rebalancing` does it dispatch
the rung's users again at once, over the remaining workers; without it the lost users
come back only when the shape next changes the user count (the next rung), since the
shape re-issues a count only when it differs from the last (`Runner.shape_worker`).
The sweep's master runs with `--enable-rebalancing` (`runner/locust_proc.py`). This
watch looks at the workers' states every second and records a "lost" event (and
"back", should the worker's heartbeats resume) with when the master last heard from
it. Events go to `<prefix>_events.csv` (`records.EVENTS_COLUMNS`) and to the log as
warnings; the sweep prints them and the report flags the rungs they touch.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import (
    STATE_CLEANUP,
    STATE_MISSING,
    STATE_STOPPED,
    STATE_STOPPING,
    MasterRunner,
    WorkerRunner,
)

from specload.loadgen import wall_clock
from specload.loadgen.live import LiveRungs
from specload.runfiles import clock_sync
from specload.runfiles.records import (
    CLOCK_COLUMNS,
    CLOCK_SUFFIX,
    EVENTS_COLUMNS,
    EVENTS_SUFFIX,
    client_id,
)

log = logging.getLogger(__name__)

MSG_PING = "specload_clock_ping"
MSG_PONG = "specload_clock_pong"
TICK_S = 1.0
FIRST_ROUND_AFTER_S = 1.0
REPLY_WAIT_S = 1.0  # answers later than this are left out (their round trip is long)
UNANSWERED_ROUNDS = 3
_NOT_MEASURING = (STATE_STOPPING, STATE_STOPPED, STATE_CLEANUP)


class CsvLog:
    """Rows appended to a CSV file with a header, each flushed at once (none without a path)."""

    def __init__(self, path: Path | None, columns: tuple[str, ...]) -> None:
        self.path = path
        self.columns = columns
        self._file: IO[str] | None = None
        self._writer: Any = None

    def write(self, row: list[Any]) -> None:
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", newline="", encoding="utf-8")
            self._writer = csv.writer(self._file)
            self._writer.writerow(self.columns)
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class Worker:
    """What the watch knows about one worker process (a Locust node)."""

    node: str
    next_round: float
    last_heard: float
    client_id: str = ""  # from its first answer; the request rows carry it
    missing: bool = False
    rounds: list[clock_sync.Measurement] = field(default_factory=list)
    unanswered: int = 0
    exchanges: list[clock_sync.Exchange] | None = field(default=None, repr=False)  # in a round

    @property
    def name(self) -> str:
        return self.client_id or self.node


class WorkerWatch:
    """See the module docstring. One per master environment (`start`)."""

    def __init__(self, environment: Environment, live: LiveRungs | None = None) -> None:
        self.env = environment
        self.live = live or LiveRungs.for_env(environment)
        self.workers: dict[str, Worker] = {}
        parsed = environment.parsed_options
        prefix = getattr(parsed, "csv_prefix", None) if parsed is not None else None
        self.clock_log = CsvLog(Path(prefix + CLOCK_SUFFIX) if prefix else None, CLOCK_COLUMNS)
        self.events_log = CsvLog(Path(prefix + EVENTS_SUFFIX) if prefix else None,
                                 EVENTS_COLUMNS)

    @property
    def runner(self) -> MasterRunner:
        runner = self.env.runner
        assert isinstance(runner, MasterRunner)
        return runner

    def start(self) -> None:
        """Listen for answers and heartbeats; look at the workers every second."""
        self.runner.register_message(MSG_PONG, self.on_pong)
        self.env.events.heartbeat_sent.add_listener(self.on_heartbeat)
        self.env.events.quit.add_listener(self.close)
        self.runner.greenlet.spawn(self._run)  # killed with the runner's greenlets at quit

    def close(self, **_: Any) -> None:
        self.clock_log.close()
        self.events_log.close()

    def _run(self) -> None:
        while True:
            self.tick(wall_clock.now())
            gevent.sleep(TICK_S)

    # --- the workers' states ---------------------------------------------------------

    def tick(self, now: float) -> None:
        """Note lost and returning workers; start the clock rounds that are due."""
        runner = self.runner
        nodes = list(runner.clients.values())
        measuring = runner.state not in _NOT_MEASURING
        for node in nodes:
            w = self.workers.get(node.id)
            if w is None:
                w = self.workers[node.id] = Worker(node.id, now + FIRST_ROUND_AFTER_S, now)
            missing = node.state == STATE_MISSING
            if missing and not w.missing:
                self.event(w, "lost", now, w.last_heard, self._lost_sentence(w, now))
            elif w.missing and not missing:
                self.event(w, "back", now, w.last_heard,
                           "sends heartbeats again; Locust gives it users again")
            w.missing = missing
            if measuring and not missing and w.exchanges is None and now >= w.next_round:
                w.next_round = now + clock_sync.ROUND_EVERY_S
                w.exchanges = []
                runner.greenlet.spawn(self._round, w)
        present = {node.id for node in nodes}
        for gone in set(self.workers) - present:  # quit, or missing for a minute
            del self.workers[gone]

    def _lost_sentence(self, w: Worker, now: float) -> str:
        users = ("its users restart on the remaining workers" if
                 self.runner.rebalancing_enabled() else
                 "its users are not replaced until the next rung (Locust runs without "
                 "--enable-rebalancing)")
        return (f"lost: no heartbeat for {now - w.last_heard:.1f} s, Locust marked it "
                f"missing; its requests in flight and up to a second of rows are gone, and "
                f"{users}")

    def on_heartbeat(self, client_id: str, **_: Any) -> None:
        w = self.workers.get(client_id)
        if w is not None:
            w.last_heard = wall_clock.now()

    # --- clock rounds ----------------------------------------------------------------

    def _round(self, w: Worker) -> None:
        for _ in range(clock_sync.EXCHANGES_PER_ROUND):
            self.runner.send_message(MSG_PING, {"t1": wall_clock.now()}, client_id=w.node)
            gevent.sleep(clock_sync.EXCHANGE_SPACING_S)
        gevent.sleep(REPLY_WAIT_S)
        exchanges, w.exchanges = w.exchanges or [], None
        self.finish_round(w, exchanges)

    def on_pong(self, environment: Environment, msg: Any, **_: Any) -> None:
        t4 = wall_clock.now()
        w = self.workers.get(msg.node_id)
        if w is None or w.exchanges is None:
            return  # too late for its round
        data = msg.data
        w.client_id = str(data["client_id"])
        w.exchanges.append(clock_sync.Exchange(float(data["t1"]), float(data["t2"]),
                                           float(data["t3"]), t4))

    def finish_round(self, w: Worker, exchanges: list[clock_sync.Exchange]) -> None:
        found = clock_sync.measure(exchanges)
        if found is None:
            w.unanswered += 1
            if w.unanswered == UNANSWERED_ROUNDS and not w.rounds:
                w.next_round = float("inf")  # it cannot answer: stop asking
                self.live.set_offset(w.node, 0.0)
                now = wall_clock.now()
                self.event(w, "clock_unmeasured", now, now,
                           f"answered none of {UNANSWERED_ROUNDS} clock rounds (an older "
                           "specload?); its times are taken as on the master's clock")
            return
        w.unanswered = 0
        w.rounds.append(found)
        row = [f"{found.ts:.6f}", w.name, w.node, f"{found.offset_s:.6f}",
               f"{found.rtt_s:.6f}", found.exchanges]
        self.clock_log.write(row)
        self.live.rounds.append(row)
        if found.sure or not any(m.sure for m in w.rounds):
            self.live.set_offset(w.node, found.offset_s)
        if not found.sure:
            w.next_round = min(w.next_round, found.ts + clock_sync.RETRY_AFTER_S)
        doubt = clock_sync.problem(w.rounds)
        if doubt is not None:
            self.event(w, doubt.kind, found.ts, doubt.since, doubt.sentence)

    # --- events ----------------------------------------------------------------------

    def event(self, w: Worker, kind: str, ts: float, since: float, detail: str) -> None:
        log.warning("worker %s: %s", w.name, detail)
        self.events_log.write([f"{ts:.6f}", w.name, w.node, kind, f"{since:.6f}", detail])


def answer_ping(environment: Environment, msg: Any, **_: Any) -> None:
    """A worker's answer: when the ping arrived and when the answer leaves, on its clock."""
    t2 = wall_clock.now()
    runner = environment.runner
    assert runner is not None
    runner.send_message(MSG_PONG, {"t1": msg.data["t1"], "t2": t2, "client_id": client_id(),
                                   "t3": wall_clock.now()})


def _on_init(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.register_message(MSG_PING, answer_ping)
    elif isinstance(runner, MasterRunner):
        WorkerWatch(environment).start()


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
