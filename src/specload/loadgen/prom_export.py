"""specload's live figures in the Prometheus text format, served by the process that
writes the CSV files.

The local runner, or the master of a distributed run, serves `GET /metrics`: on the web
UI's own port (a route of its Flask app) and, with `--metrics-port`, on a port of its own
(headless runs; the sweep gives each Locust run one and serves them all as one,
`runner/metrics_export.py`). Every series carries the labels `run` and `arm`
(`--run-label`, `--arm-label`, the arm by default the host), and the per-rung ones
`rung`: the rung's level on the workload's axis (users, arrivals per second or a
trace's speed, as the shape's `where()` says; `drain` after the last, `idle` outside a
run). Output tokens count as chunks arrive: the local runner reads its users' running
count at each scrape, a master adds each worker's count as its once-a-second health row
arrives (`health_probe`), so a master's counter moves in steps of a second. Requests by
outcome and the latency histograms (TTFT, TPOT, the gaps between chunks, tokens per
chunk) count request rows as they reach this process (`LiveRungs.tap`), each in the rung
that is in progress when it arrives. The users' event loop only appends rows to lists;
they are counted at each scrape and once a second. Load-process health (CPU share,
event-loop lag, requests in flight) comes from the health rows. Nothing of a request's
text, nor the API key, is exported.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import gevent
import numpy as np
from flask import Response
from gevent.pywsgi import WSGIServer
from locust import events
from locust.env import Environment
from locust.runners import MasterRunner
from locust.web import WebUI
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import make_wsgi_app

from specload.config.settings import Export, from_attributes
from specload.loadgen import health_probe
from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.live import LiveRungs, is_writer
from specload.runfiles.records import CLIENT_STATS_COLUMNS, REQUEST_COLUMNS

log = logging.getLogger(__name__)

UPDATE_INTERVAL_S = 1.0
ROWS_PER_BATCH = 200  # rows counted between two yields of the event loop
# a load process whose health row is older than this no longer counts as reporting
PROCESS_SILENT_S = 5.0
IDLE = "idle"
# Each histogram's help and bucket bounds: LLM latencies span milliseconds per token to
# minutes to a first token.
_CHUNK_GAPS = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15,
               0.25, 0.5, 1)
HISTOGRAMS: dict[str, tuple[str, tuple[float, ...]]] = {
    "specload_ttft_seconds": ("time to the first token of each request",
                              (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20,
                               40, 80)),
    "specload_tpot_seconds": ("time per output token after the first, per request",
                              _CHUNK_GAPS),
    "specload_itl_seconds": ("gaps between consecutive chunks of a stream",
                             (*_CHUNK_GAPS, 2, 5)),
    "specload_chunk_tokens": ("output tokens per streamed chunk",
                              (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 32)),
}
_COL = {name: REQUEST_COLUMNS.index(name) for name in (
    "ttft_ms", "tpot_ms", "error_kind", "chunk_gaps_us", "chunk_tokens")}
_STAT = {name: CLIENT_STATS_COLUMNS.index(name) for name in (
    "client_id", "cpu_percent", "lag_p99_ms", "in_flight", "tokens")}


def _ints(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Space-separated integers of many rows as one flat array (parsed in one call), and
    the flat index of each non-empty row's first. The report's `intlists.parse` does this
    with pyarrow, which a load process does not import (nor pandas)."""
    counts = np.array([t.count(" ") + 1 if t.strip() else 0 for t in texts], dtype=np.int64)
    flat = np.fromstring(" ".join(t for t in texts if t.strip()), dtype=np.int64, sep=" ")
    starts = np.cumsum(counts) - counts
    return flat, starts[counts > 0]


class Histogram:
    """Cumulative bucket counts and the sum of one series' observations."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = np.asarray(bounds, dtype=float)
        self.counts = np.zeros(len(bounds) + 1, dtype=np.int64)  # the last: above them all
        self.total = 0.0

    def observe(self, values: np.ndarray) -> None:
        if values.size:
            # `le` is inclusive: a value equal to a bound is in that bound's bucket
            at = np.searchsorted(self.bounds, values, side="left")
            self.counts += np.bincount(at, minlength=self.counts.size)
            self.total += float(values.sum())

    def buckets(self) -> list[tuple[str, float]]:
        cumulative = np.cumsum(self.counts)
        les = [f"{b:g}" for b in self.bounds] + ["+Inf"]
        return [(le, float(c)) for le, c in zip(les, cumulative, strict=True)]


class LoadExporter:
    """The live figures of one Locust environment as a prometheus_client collector."""

    def __init__(self, environment: Environment, labels: Export) -> None:
        self.env = environment
        self.run = labels.run_label
        self.arm = labels.arm_label or _bare_host(environment.host or "")
        self._rows: list[Sequence[Any]] = []
        self._health: list[Sequence[Any]] = []
        self._local_tokens = IN_FLIGHT.tokens
        self.tokens: dict[str, float] = defaultdict(float)
        self.requests: dict[tuple[str, str], float] = defaultdict(float)
        self.hists: dict[tuple[str, str], Histogram] = {}
        # client id -> when its latest health row arrived, and that row
        self.processes: dict[str, tuple[float, Sequence[Any]]] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # -- inputs (on the users' event loop: appends only) ---------------------------------

    def add_rows(self, rows: Sequence[list[Any]]) -> None:
        self._rows.extend(rows)

    def add_health(self, row: list[Any]) -> None:
        self._health.append(row)

    # -- counting ---------------------------------------------------------------------------

    def rung(self) -> tuple[str, str | None]:
        """The rung in progress (its label) and its phase."""
        where = getattr(self.env.shape_class, "where", None)
        now = where() if where is not None else None
        if now is None:
            return IDLE, None
        return now.label, now.phase

    def update(self) -> None:
        """Count what arrived since the last update into the rung in progress."""
        rung, _ = self.rung()
        master = isinstance(self.env.runner, MasterRunner)
        if not master:
            received = IN_FLIGHT.tokens  # a sum over the requests in flight: read once
            self.tokens[rung] += max(0, received - self._local_tokens)
            self._local_tokens = received
        health, self._health = self._health, []
        for row in health:  # stamped here: a worker's own clock may be off
            self.processes[str(row[_STAT["client_id"]])] = (time.time(), row)
            if master and len(row) > _STAT["tokens"]:
                self.tokens[rung] += max(0, float(row[_STAT["tokens"]]))
        rows, self._rows = self._rows, []
        for i in range(0, len(rows), ROWS_PER_BATCH):
            if i:
                gevent.sleep(0)  # the users' chunks go first
            self._count_rows(rung, rows[i:i + ROWS_PER_BATCH])

    def _count_rows(self, rung: str, rows: Sequence[Sequence[Any]]) -> None:
        c = _COL
        for row in rows:
            self.requests[rung, str(row[c["error_kind"]] or "ok")] += 1
        ttft = [float(r[c["ttft_ms"]]) for r in rows if r[c["ttft_ms"]] not in (None, "")]
        tpot = [float(r[c["tpot_ms"]]) for r in rows if r[c["tpot_ms"]] not in (None, "")]
        self._hist("specload_ttft_seconds", rung).observe(np.asarray(ttft) / 1e3)
        self._hist("specload_tpot_seconds", rung).observe(np.asarray(tpot) / 1e3)
        gaps = [str(r[c["chunk_gaps_us"]] or "") for r in rows]
        flat, firsts = _ints(gaps)
        keep = np.ones(flat.size, dtype=bool)
        keep[firsts] = False  # each stream's first gap is from its send, not a chunk
        self._hist("specload_itl_seconds", rung).observe(flat[keep] / 1e6)
        tokens, _ = _ints([str(r[c["chunk_tokens"]] or "") for r in rows])
        self._hist("specload_chunk_tokens", rung).observe(tokens.astype(float))

    def _hist(self, name: str, rung: str) -> Histogram:
        hist = self.hists.get((name, rung))
        if hist is None:
            hist = self.hists[name, rung] = Histogram(HISTOGRAMS[name][1])
        return hist

    # -- the exposition ---------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        self.update()
        base, per_rung = ["run", "arm"], ["run", "arm", "rung"]
        ours = [self.run, self.arm]
        tokens = CounterMetricFamily("specload_output_tokens", "output tokens received, "
                                     "counted as their chunks arrive", labels=per_rung)
        for rung, value in self.tokens.items():
            tokens.add_metric([*ours, rung], value)
        yield tokens
        requests = CounterMetricFamily("specload_requests", "requests ended, by outcome "
                                       "(ok, or the error kind)",
                                       labels=[*per_rung, "outcome"])
        for (rung, outcome), value in self.requests.items():
            requests.add_metric([*ours, rung, outcome], value)
        yield requests
        for name, (text, _) in HISTOGRAMS.items():
            family = HistogramMetricFamily(name, text, labels=per_rung)
            for (of, rung), hist in self.hists.items():
                if of == name:
                    family.add_metric([*ours, rung], hist.buckets(), hist.total)
            yield family
        yield from self._gauges(base, ours)

    def _gauges(self, base: list[str], ours: list[str]) -> Iterator[Metric]:
        runner = self.env.runner
        rung, phase = self.rung()
        fresh = [row for seen, row in self.processes.values()
                 if time.time() - seen < PROCESS_SILENT_S]
        master = isinstance(runner, MasterRunner)
        in_flight = sum(int(r[_STAT["in_flight"]]) for r in fresh) if master else IN_FLIGHT.count
        for name, text, value in (
                ("specload_users", "users running", runner.user_count if runner else 0),
                ("specload_in_flight_requests", "requests sent and not yet ended", in_flight),
                ("specload_load_processes", "load processes reporting", len(fresh))):
            family = GaugeMetricFamily(name, text, labels=base)
            family.add_metric(ours, value)
            yield family
        phases = GaugeMetricFamily("specload_rung_phase", "1 for the rung and phase in "
                                   "progress (warmup, measure, drain)",
                                   labels=[*base, "rung", "phase"])
        if phase is not None:
            phases.add_metric([*ours, rung, phase], 1)
        yield phases
        cpu = GaugeMetricFamily("specload_load_cpu_ratio", "each load process's share of "
                                "one core", labels=[*base, "process"])
        lag = GaugeMetricFamily("specload_load_loop_lag_p99_seconds", "each load process's "
                                "event-loop lag, p99 over its last second",
                                labels=[*base, "process"])
        for row in fresh:
            process = str(row[_STAT["client_id"]])
            cpu.add_metric([*ours, process], float(row[_STAT["cpu_percent"]]) / 100)
            lag.add_metric([*ours, process], float(row[_STAT["lag_p99_ms"]]) / 1e3)
        yield cpu
        yield lag

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _bare_host(url: str) -> str:
    """A host URL without the user and password it may carry."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _keep_counting(exporter: LoadExporter) -> None:
    """Count the rows once a second, so the lists stay short without a scrape."""
    while True:
        gevent.sleep(UPDATE_INTERVAL_S)
        exporter.update()


def _serve(environment: Environment, exporter: LoadExporter, opts: Export) -> None:
    try:
        server = WSGIServer((opts.metrics_host, opts.metrics_port),
                            make_wsgi_app(exporter.registry), log=None)
        server.start()
    except OSError as exc:
        log.error("--metrics-port %d: cannot listen on %s (%s)", opts.metrics_port,
                  opts.metrics_host, exc.strerror or exc)
        if environment.runner is not None:
            environment.runner.quit()
        return
    events.quitting.add_listener(lambda **_: server.stop(timeout=1))
    log.info("live figures for Prometheus at http://%s:%d/metrics", opts.metrics_host,
             server.server_port)


def _on_init(environment: Environment, web_ui: WebUI | None = None, **_: Any) -> None:
    if not is_writer(environment):
        return
    opts = from_attributes(Export, environment.parsed_options)
    if web_ui is None and not opts.metrics_port:
        return
    exporter = LoadExporter(environment, opts)
    LiveRungs.for_env(environment).tap(exporter.add_rows)
    health_probe.listen(exporter.add_health)
    gevent.spawn(_keep_counting, exporter)
    if web_ui is not None and web_ui.app is not None:
        base = getattr(environment.parsed_options, "web_base_path", None) or ""
        web_ui.app.add_url_rule(f"{base}/metrics", "specload_metrics",
                                web_ui.auth_required_if_enabled(lambda: Response(
                                    exporter.exposition(), content_type=CONTENT_TYPE_LATEST)))
    if opts.metrics_port:
        _serve(environment, exporter, opts)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init.add_listener(_on_init)
