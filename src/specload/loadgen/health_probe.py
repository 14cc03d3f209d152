"""Self-monitoring of each load process: CPU share and event-loop lag, once a second.

A load generator that is itself saturated reports its own limits, not the server's.
Every Locust process that runs users (the local runner, or each worker) starts a probe
greenlet that sleeps `PROBE_INTERVAL_S` again and again and records how late it wakes
(the event-loop lag every chunk's timestamp suffers) and how many wake-ups were later
than `records.CLIENT_LAG_LIMIT_MS`, and samples its own CPU with psutil. Once a second
it sends one row of `records.CLIENT_STATS_COLUMNS` through Locust's messages; the
process that writes CSVs (local runner or master) appends it to
`<csv prefix>_client_stats.csv` and hands it to live views that `listen` (the web UI's
Tokens tab). The report warns about rungs run by a saturated client.
`users.py` imports this module, so every locustfile with specload's users runs the probe.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Callable
from typing import IO, Any

import gevent
import psutil
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from specload.loadgen import wall_clock
from specload.loadgen.inflight import IN_FLIGHT
from specload.runfiles.records import (
    CLIENT_LAG_LIMIT_MS,
    CLIENT_STATS_COLUMNS,
    CLIENT_STATS_SUFFIX,
    client_id,
)

MESSAGE_TYPE = "specload_client_stats"
PROBE_INTERVAL_S = 0.010
SAMPLE_PERIOD_S = 1.0


def lag_percentiles(lags_ms: list[float]) -> tuple[float, float]:
    """p50 and p99 (nearest rank) of a list of lags in ms; zeros when empty."""
    if not lags_ms:
        return 0.0, 0.0
    ordered = sorted(lags_ms)
    n = len(ordered)
    return ordered[(n - 1) // 2], ordered[min(n - 1, int(0.99 * n))]


class ClientProbe:
    """Measures one process's CPU and loop lag and emits a row per sample period."""

    def __init__(self, environment: Environment, client_id: str) -> None:
        self.environment = environment
        self.client_id = client_id
        self._process = psutil.Process()
        self._greenlet: gevent.Greenlet | None = None
        self._chunks = IN_FLIGHT.chunks
        self._tokens = IN_FLIGHT.tokens
        self._lags: list[float] = []

    def start(self) -> None:
        if self._greenlet is None:
            self._process.cpu_percent(None)
            self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        """Stop probing, with a last row for the part of a period since the last one (its
        chunks and tokens count too)."""
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None
            self._emit(self._lags)
            self._lags = []

    def _run(self) -> None:
        self._lags = []
        period_start = time.perf_counter()
        while True:
            before = time.perf_counter()
            gevent.sleep(PROBE_INTERVAL_S)
            now = time.perf_counter()
            self._lags.append(max(0.0, (now - before - PROBE_INTERVAL_S) * 1000.0))
            if now - period_start >= SAMPLE_PERIOD_S:
                lags, self._lags = self._lags, []
                self._emit(lags)
                period_start = now

    def _emit(self, lags: list[float]) -> None:
        p50, p99 = lag_percentiles(lags)
        runner = self.environment.runner
        users = runner.user_count if runner is not None else 0
        late = sum(1 for lag in lags if lag > CLIENT_LAG_LIMIT_MS)
        chunks, self._chunks = IN_FLIGHT.chunks - self._chunks, IN_FLIGHT.chunks
        received = IN_FLIGHT.tokens  # a sum over the requests in flight: read once
        tokens, self._tokens = received - self._tokens, received
        row = [round(wall_clock.now(), 3), self.client_id, self._process.cpu_percent(None),
               round(p50, 3), round(p99, 3), users, len(lags), late, chunks, IN_FLIGHT.count,
               tokens]
        if runner is not None:
            runner.send_message(MESSAGE_TYPE, row)


class ClientStatsWriter:
    """Appends probe rows to `<csv prefix>_client_stats.csv` on the CSV-writing process."""

    def __init__(self, prefix: str) -> None:
        self.path = prefix + CLIENT_STATS_SUFFIX
        new = not os.path.exists(self.path)
        self._file: IO[str] = open(self.path, "a", newline="")  # noqa: SIM115
        self._writer = csv.writer(self._file)
        if new:
            self._writer.writerow(CLIENT_STATS_COLUMNS)
            self._file.flush()

    def on_message(self, environment: Environment, msg: Any, **_: Any) -> None:
        self._writer.writerow(msg.data)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


_probe: ClientProbe | None = None
_writer: ClientStatsWriter | None = None
_listeners: list[Callable[[list[Any]], None]] = []


def listen(listener: Callable[[list[Any]], None]) -> None:
    """Hand every probe row the CSV-writing process receives to `listener` too."""
    _listeners.append(listener)


def _on_init(environment: Environment, **_: Any) -> None:
    global _writer
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    if prefix:
        _writer = ClientStatsWriter(prefix)
    runner.register_message(MESSAGE_TYPE, _on_message)


def _on_message(environment: Environment, msg: Any, **_: Any) -> None:
    if _writer is not None:
        _writer.on_message(environment, msg)
    for listener in _listeners:
        listener(msg.data)


def _on_test_start(environment: Environment, **_: Any) -> None:
    global _probe
    if isinstance(environment.runner, MasterRunner):
        return
    if _probe is None:
        _probe = ClientProbe(environment, client_id())
    _probe.start()


def _on_test_stop(environment: Environment, **_: Any) -> None:
    if _probe is not None:
        _probe.stop()


def _on_quitting(environment: Environment, **_: Any) -> None:
    if _writer is not None:
        _writer.close()


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stop.add_listener(_on_test_stop)
    events.quitting.add_listener(_on_quitting)
