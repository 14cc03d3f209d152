"""A real Prometheus server for a test: started on loopback with the test's scrape
targets, asked through its HTTP API, and always stopped.

Debian's `prometheus` package (`.ci/run` installs it). `prometheus_server` writes a
configuration that scrapes each named job's targets once a second, starts the server
on a free port with its data in the test's folder, waits until it is ready and yields a
`Prometheus` whose `query` runs an instant PromQL query (failing the test on an error).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from specload.runner.processes import free_port, stop_process_group

SCRAPE_INTERVAL = "1s"


def binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        pytest.fail("prometheus is not installed (Debian package `prometheus`; .ci/run "
                    "installs it)")
    return found


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as resp:
            answer = json.load(resp)
        assert answer["status"] == "success", answer
        return answer["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's result (a vector's samples, or a matrix's series)."""
        params = {"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"}
        try:
            return self.api("query", **params)["result"]
        except urllib.error.HTTPError as exc:  # a bad query: Prometheus says why
            pytest.fail(f"PromQL {expr!r}: {exc.read().decode()}")

    def value(self, expr: str, at: float | None = None) -> float:
        """The one value an instant query gives (the test fails on none or several)."""
        result = self.query(expr, at)
        assert len(result) == 1, f"{expr}: {result}"
        return float(result[0]["value"][1])

    def targets_up(self) -> dict[str, str]:
        return {t["scrapeUrl"]: t["health"] for t in self.api("targets")["activeTargets"]}


@contextmanager
def prometheus_server(folder: Path, jobs: Mapping[str, Sequence[str]]) -> Iterator[Prometheus]:
    """Prometheus scraping `jobs` (job name -> host:port targets, /metrics each)."""
    config = {"global": {"scrape_interval": SCRAPE_INTERVAL,
                         "evaluation_interval": SCRAPE_INTERVAL},
              "scrape_configs": [{"job_name": job, "static_configs": [{"targets": list(t)}]}
                                 for job, t in jobs.items()]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = folder / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary(), f"--config.file={folder / 'prometheus.yml'}",
             f"--storage.tsdb.path={folder / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"prometheus did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield Prometheus(url)
    finally:
        stop_process_group(proc, timeout=20)
