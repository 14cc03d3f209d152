"""Per-request CSV rows: written locally, or collected from workers by the master.

`Recorder.for_env(environment)` returns the one recorder of a Locust environment; users
call `add(record)` for every finished, failed or interrupted request. Where the rows go
depends on the runner:
- local runner: appended to `<csv prefix>_requests.csv` at once (flushed about every
  second and when the test stops);
- worker: buffered, and shipped to the master every `SHIP_INTERVAL_S` together with the
  process's state (its watermark and requests in flight, see `inflight.py`), and
  whenever the master asks for a flush or a drain; a killed worker loses at most that
  interval of rows;
- master: writes what arrives and hands rows and states to the live rungs (`live.py`).

The end of a run is the subtle part: the master waits only ~0.5 s for workers' last
reports. So when the test stops, the master sends every worker `specload_flush`; the
worker stops its users (an in-flight request then records itself as interrupted),
sends its remaining rows and answers `specload_done`; the master waits for every answer
(bounded by `--stop-timeout` + 10 s) before Locust goes on to quit. Messages from one
worker arrive in order, so rows always land before that worker's "done". Without
`--csv` nothing is written, and users build rows only when a live view taps them (the
web UI's Tokens tab); with `--no-records` they never do.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import os
import time
from itertools import count
from typing import IO, Any
from weakref import WeakKeyDictionary

import gevent
from gevent.event import Event
from locust import events
from locust.env import Environment
from locust.runners import (
    STATE_MISSING,
    STATE_RUNNING,
    STATE_SPAWNING,
    MasterRunner,
    WorkerRunner,
)

from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.live import LOCAL, LiveRungs, ProcessState, local_state
from specload.loadgen.options import RunOptions
from specload.runfiles.records import (
    REQUEST_COLUMNS,
    REQUESTS_SUFFIX,
    WRITE_FAILED_EXIT,
    RequestRecord,
)

log = logging.getLogger(__name__)

MSG_ROWS = "specload_rows"
MSG_FLUSH = "specload_flush"
MSG_DONE = "specload_done"
MSG_DRAIN = "specload_drain"
FLUSH_INTERVAL_S = 1.0
SHIP_INTERVAL_S = 1.0
HANDSHAKE_MARGIN_S = 10.0

_recorders: WeakKeyDictionary[Environment, Recorder] = WeakKeyDictionary()


class Recorder:
    """Collects `RequestRecord`s of one Locust environment; see the module docstring."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.rows_written = 0
        self._buffer: list[list[Any]] = []
        self._file: IO[str] | None = None
        self._created = False
        self._writer: Any = None
        self._last_flush = 0.0
        self._enabled = True
        self._to_file = True
        self._tokens = count(1)
        self._waiting: set[str] = set()
        self._answered = Event()
        self._token = 0
        self._shipper: gevent.Greenlet | None = None
        self.live = LiveRungs.for_env(environment)
        self.live.flush = self._flush
        self._hook()

    @classmethod
    def for_env(cls, environment: Environment) -> Recorder:
        """The environment's recorder, created (and hooked to its events) on first use."""
        rec = _recorders.get(environment)
        if rec is None:
            rec = _recorders[environment] = cls(environment)
        return rec

    # --- what users call -------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether rows are wanted at all (records on, and a file or a master to take them)."""
        return self._enabled

    def add(self, record: RequestRecord) -> None:
        """Take one request's row (cheap: a list append or one buffered CSV write)."""
        if not self._enabled:
            return
        row = record.row()
        if isinstance(self.env.runner, WorkerRunner):
            self._buffer.append(row)
        else:
            self._write([row])

    # --- wiring ----------------------------------------------------------------------

    def _hook(self) -> None:
        ev = self.env.events
        ev.test_start.add_listener(self._on_test_start)
        ev.test_stop.add_listener(self._on_test_stop)
        ev.quitting.add_listener(self._on_quitting)
        ev.quit.add_listener(self._on_quit)
        runner = self.env.runner
        if isinstance(runner, WorkerRunner):
            runner.register_message(MSG_FLUSH, self._on_flush_request)
            runner.register_message(MSG_DRAIN, self._on_drain_request)
        elif isinstance(runner, MasterRunner):
            runner.register_message(MSG_ROWS, self._on_rows_message)
            runner.register_message(MSG_DONE, self._on_done_message)
        self._refresh_enabled()
        if isinstance(runner, WorkerRunner) and runner.worker_state in (STATE_SPAWNING,
                                                                        STATE_RUNNING):
            # A worker that joins a running test can get its first spawn message, and
            # fire test_start, while it still connects or runs its `init` listeners
            # (Locust 2.47's WorkerRunner handles messages from its constructor on, and
            # a master with --enable-rebalancing sends spawn at once): the test this
            # recorder missed has started, so its rows must start shipping now.
            self._on_test_start(self.env)

    def _refresh_enabled(self) -> None:
        records_on = RunOptions.from_env(self.env, check=False).records
        self._to_file = records_on and bool(self._csv_prefix())
        if isinstance(self.env.runner, WorkerRunner):
            self._enabled = records_on  # the master decides whether it writes a file
        else:  # rows go to the file, and to live views that tap them (`live.py`)
            self._enabled = self._to_file or (records_on and bool(self.live.taps))

    def _csv_prefix(self) -> str:
        parsed = self.env.parsed_options
        return (getattr(parsed, "csv_prefix", None) or "") if parsed is not None else ""

    def _on_test_start(self, environment: Environment, **_: Any) -> None:
        self._refresh_enabled()
        IN_FLIGHT.reset()
        if isinstance(self.env.runner, WorkerRunner):
            if self._shipper is None:
                self._shipper = gevent.spawn(self._ship_forever)
        else:
            self.live.reset(self._csv_prefix() or None)
            if self._to_file:
                self._open()

    def _on_test_stop(self, environment: Environment, **_: Any) -> None:
        runner = self.env.runner
        if isinstance(runner, WorkerRunner):
            self._send_buffer()
        elif isinstance(runner, MasterRunner) and self._enabled:
            self._collect_from_workers(runner)
        self._flush()
        if not isinstance(runner, WorkerRunner):
            self.live.poll()  # rungs whose last requests just ended

    def _on_quitting(self, environment: Environment, **_: Any) -> None:
        # Locust fires `quitting` before its final runner.quit(), which still stops users
        # (and so records interrupted requests): flush here, close only at `quit`.
        # A worker quitting on its own (Ctrl-C reaches every process) stops its users
        # now, so their rows leave before Locust's "quit" message to the master.
        runner = self.env.runner
        if isinstance(runner, WorkerRunner):
            if runner.state in (STATE_RUNNING, STATE_SPAWNING):
                runner.stop()
            self._send_buffer()
        self._flush()

    def _on_quit(self, **_: Any) -> None:
        if self._shipper is not None:
            self._shipper.kill(block=False)
            self._shipper = None
        if self._file is not None:
            self._file.close()
            self._file = None

    # --- worker side -----------------------------------------------------------------

    def _ship_forever(self) -> None:
        while True:
            gevent.sleep(SHIP_INTERVAL_S)
            self._send_buffer()

    def _send_buffer(self) -> None:
        """Ship the buffered rows (maybe none) with this process's state, in one message."""
        rows, self._buffer = self._buffer, []
        if self.env.runner is not None:
            self.env.runner.send_message(MSG_ROWS, {"rows": rows,
                                                    "state": local_state().as_message()})

    def _on_drain_request(self, environment: Environment, msg: Any, **_: Any) -> None:
        IN_FLIGHT.drain(int(msg.data))
        self._send_buffer()

    def _on_flush_request(self, environment: Environment, msg: Any, **_: Any) -> None:
        runner = self.env.runner
        if runner is None:
            return
        if runner.state in (STATE_RUNNING, STATE_SPAWNING):
            runner.stop()  # users still in a request record themselves as interrupted
        self._send_buffer()
        runner.send_message(MSG_DONE, msg.data)

    # --- master side -----------------------------------------------------------------

    def _on_rows_message(self, environment: Environment, msg: Any, **_: Any) -> None:
        data = msg.data
        if data["rows"]:
            self._write(data["rows"], msg.node_id)
        self.live.update(msg.node_id, ProcessState.from_message(data["state"]))

    def _on_done_message(self, environment: Environment, msg: Any, **_: Any) -> None:
        if msg.data == self._token:
            self._waiting.discard(msg.node_id)
            if not self._waiting:
                self._answered.set()

    def _collect_from_workers(self, runner: MasterRunner) -> None:
        workers = {c.id for c in runner.clients.all if c.state != STATE_MISSING}
        if not workers:
            return
        self._token = next(self._tokens)
        self._waiting = set(workers)
        self._answered.clear()
        for worker in workers:
            # Locust hints `data` as a dict; it sends any msgpack value, here the token
            runner.send_message(MSG_FLUSH, self._token,  # type: ignore[arg-type]
                                client_id=worker)
        timeout = (self.env.stop_timeout or 0.0) + HANDSHAKE_MARGIN_S
        deadline = time.monotonic() + timeout
        while self._waiting and time.monotonic() < deadline:
            self._answered.wait(0.2)
            # a worker that quit meanwhile sent its rows before its "quit" message; one
            # marked missing (a lost load machine) will send nothing more
            self._waiting &= {c.id for c in runner.clients.all if c.state != STATE_MISSING}
        if self._waiting:
            log.warning("no final request rows from %d worker(s) within %.0f s: %s",
                        len(self._waiting), timeout, ", ".join(sorted(self._waiting)))

    # --- file ------------------------------------------------------------------------

    def _open(self) -> None:
        """Create the file (header first) once per process; later opens append."""
        if self._file is not None:
            return
        path = self._csv_prefix() + REQUESTS_SUFFIX
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "a" if self._created else "w"
        self._file = open(path, mode, newline="", encoding="utf-8")  # noqa: SIM115
        self._writer = csv.writer(self._file)
        if not self._created:
            self._writer.writerow(REQUEST_COLUMNS)
            self._created = True

    def _write(self, rows: list[list[Any]], node: str = LOCAL) -> None:
        self.live.add_rows(rows, node)
        if self._file is None:
            if not self._to_file:
                return
            self._open()
        try:
            self._writer.writerows(rows)
        except OSError as exc:
            self._write_failed(exc)
            return
        self.rows_written += len(rows)
        now = time.monotonic()
        if now - self._last_flush >= FLUSH_INTERVAL_S:
            self._flush()
            self._last_flush = now

    def _flush(self) -> None:
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as exc:
                self._write_failed(exc)

    def _write_failed(self, exc: OSError) -> None:
        """The rows file cannot be written (a full disk): stop the run, whose exit status
        tells the runner why (its log may not be writable either)."""
        log.error("specload: cannot write %s: %s; stopping the run",
                  self._csv_prefix() + REQUESTS_SUFFIX, exc.strerror or exc)
        self._to_file = self._enabled = False
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()  # its buffer cannot be written either
        self.env.process_exit_code = WRITE_FAILED_EXIT
        if self.env.runner is not None:
            gevent.spawn(self.env.runner.quit)  # not from this user's own greenlet


def _on_init(environment: Environment, **_: Any) -> None:
    Recorder.for_env(environment)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
