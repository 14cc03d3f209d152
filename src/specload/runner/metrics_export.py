"""The sweep's own `/metrics`: the live figures of every Locust run in progress as one
exposition.

`specload sweep --metrics-port P` serves `GET /metrics` on P (loopback unless
`--metrics-host`) for as long as the sweep runs. Each Locust run the sweep starts serves
its figures on a free loopback port of its own (`--metrics-port` of
`loadgen/prom_export.py`), labelled with the run folder's name and the arm; a scrape
here reads every run in progress and merges their families, so one scrape target covers
a sweep whatever runs side by side. A run's series end with it (Prometheus marks them
stale; its samples so far stay). Beside them the sweep exports `specload_sweep_info`
(the run and its scenario), `specload_sweep_locust_runs` (Locust runs in progress) and
each finished rung's figures as the report computes them (`progress.rung_figures`):
`specload_rung_output_tokens_per_second` and the TTFT and TPOT medians by arm and rung,
the latest repeat's, for the whole sweep (a dashboard's speedup divides two arms' tok/s).
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from specload.config.settings import Export, to_args
from specload.ladder.rungs import level_label
from specload.runner.processes import free_port

LOCAL = "127.0.0.1"
FETCH_TIMEOUT_S = 2.0
RUNG_FIGURES = {  # family: (the figure's key, its scale to the family's unit, help)
    "specload_rung_output_tokens_per_second": (
        "output_tok_s", 1.0, "a finished rung's output tok/s over its measure window"),
    "specload_rung_ttft_p50_seconds": ("ttft_p50_ms", 1e-3, "a finished rung's median TTFT"),
    "specload_rung_tpot_p50_seconds": ("tpot_p50_ms", 1e-3, "a finished rung's median TPOT"),
}


def merge(texts: list[str]) -> list[Metric]:
    """Families of several expositions, those of one name joined (their label sets differ:
    each run's `arm` and `run`)."""
    by_name: dict[str, Metric] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            kept = by_name.setdefault(family.name, family)
            if kept is not family:
                kept.samples.extend(family.samples)
    return list(by_name.values())


class SweepMetrics:
    """The sweep's endpoint and the Locust runs it reads (see the module docstring)."""

    def __init__(self, scenario: str, port: int, host: str = LOCAL) -> None:
        """Listen on `port` (OSError when it cannot); nothing is served before `start`."""
        self.run, self.scenario = "", scenario
        self._runs: set[int] = set()  # the ports of the Locust runs in progress
        self._rungs: dict[tuple[str, str], dict[str, float]] = {}  # (arm, rung) -> figures
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server = http.server.ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="sweep-metrics", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/metrics"

    def start(self, run: Path) -> SweepMetrics:
        """Serve the figures of the run in folder `run`."""
        self.run = run.name
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def locust_args(self, arm: str) -> tuple[list[str], int]:
        """The options that make a Locust run of `arm` serve its figures, and its port
        (to `add` once the run is started, `remove` once it ended)."""
        port = free_port()
        return to_args(Export(metrics_port=port, run_label=self.run, arm_label=arm),
                       Export), port

    def add(self, port: int) -> None:
        with self._lock:
            self._runs.add(port)

    def remove(self, port: int) -> None:
        with self._lock:
            self._runs.discard(port)

    def finished_rung(self, arm: str, line: dict[str, Any]) -> None:
        """A rung's figures, as the progress line has them (`progress.rung_figures`)."""
        level = line.get("speed") or line.get("rate") or line.get("users")
        figures = {name: float(line[key]) * scale for name, (key, scale, _) in RUNG_FIGURES.items()
                   if isinstance(line.get(key), int | float) and line[key] == line[key]}
        with self._lock:
            self._rungs[arm, level_label(float(level) if level is not None else None)] = figures

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            runs = sorted(self._runs)
        texts = []
        for port in runs:
            try:
                with urllib.request.urlopen(f"http://{LOCAL}:{port}/metrics",
                                            timeout=FETCH_TIMEOUT_S) as resp:
                    texts.append(resp.read().decode("utf-8", errors="replace"))
            except (urllib.error.URLError, OSError):
                continue  # starting or ending: its series are absent from this scrape
        yield from merge(texts)
        info = GaugeMetricFamily("specload_sweep_info", "the sweep in progress",
                                 labels=["run", "scenario"])
        info.add_metric([self.run, self.scenario], 1)
        yield info
        running = GaugeMetricFamily("specload_sweep_locust_runs", "Locust runs in progress",
                                    labels=["run"])
        running.add_metric([self.run], len(runs))
        yield running
        with self._lock:
            rungs = dict(self._rungs)
        for name, (_, _, text) in RUNG_FIGURES.items():
            family = GaugeMetricFamily(name, text, labels=["run", "arm", "rung"])
            for (arm, rung), figures in rungs.items():
                if name in figures:
                    family.add_metric([self.run, arm, rung], figures[name])
            yield family

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        registry = self.registry

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                body = generate_latest(registry)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # a scrape a second would flood the console

        return Handler
