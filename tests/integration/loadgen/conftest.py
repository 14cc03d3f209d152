"""Fixtures for the loadgen integration tests: run headless Locust and read its files.

`locust_run(locustfile, host, users=..., run_time=..., extra=[...])` runs
`python -m locust --headless` in a subprocess (a fresh interpreter, as a user would),
with the CSV prefix inside the test's tmp_path, and returns a `LocustRun` with the exit
status, the combined output and readers for `_requests.csv` and `_stats.csv`.
Runs with `--processes` get a free master port (`master_port_args`).
`fake_stream_server` starts the tiny stand-in server of this folder (same ready line
and trace contract as `specload sim`) for the things the simulator is not needed for.
"""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
READY_PREFIX = "specload-sim listening on "
SUMMARY_ROW = re.compile(
    r"^(?P<type>[A-Z]+)?\s+(?P<name>\S+)\s+(?P<reqs>\d+)\s+(?P<fails>\d+)\([\d.]+%\)\s+\|"
    r"\s+(?P<avg>[\d.]+)", re.MULTILINE)


def master_port_args() -> list[str]:
    """A free master port: with the default (5557), concurrent distributed runs on one
    machine (other tests, sweeps) would steal each other's workers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ["--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
            "--master-host", "127.0.0.1", "--master-port", str(port)]


@pytest.fixture
def master_ports() -> list[str]:
    """Arguments giving a distributed run its own free master port."""
    return master_port_args()


@dataclass
class LocustRun:
    prefix: Path
    returncode: int
    output: str

    def requests(self) -> list[dict[str, str]]:
        with open(f"{self.prefix}_requests.csv", newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def summary(self) -> dict[tuple[str, str], tuple[int, int, float]]:
        """(type, name) -> (requests, failures, average ms) from Locust's final summary.

        The final printed table, not `_stats.csv`: Locust rewrites that file once a
        second and does not rewrite it at shutdown, so it can miss the last second.
        """
        table = self.output.split("Response time percentiles")[-2]
        rows = {}
        for m in SUMMARY_ROW.finditer(table):
            key = (m["type"] or "", m["name"])
            rows[key] = (int(m["reqs"]), int(m["fails"]), float(m["avg"]))
        return rows


@pytest.fixture
def locust_run(tmp_path: Path) -> Callable[..., LocustRun]:
    def run(locustfile: str, host: str, users: int = 10, run_time: str = "10s",
            extra: Sequence[str] = (), env: dict[str, str] | None = None,
            name: str = "run") -> LocustRun:
        prefix = tmp_path / name / "locust"
        cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / locustfile),
               "--headless", "-u", str(users), "-r", str(users), "-t", run_time,
               "--csv", str(prefix), "--host", host, "--only-summary", *extra]
        if "--processes" in extra:
            cmd += master_port_args()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                              env={**os.environ, **(env or {})}, cwd=tmp_path)
        return LocustRun(prefix, proc.returncode, proc.stdout + proc.stderr)

    return run


@pytest.fixture
def fake_stream_server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> str:
        script = Path(__file__).with_name("fake_stream_server.py")
        proc = subprocess.Popen([sys.executable, str(script), "--port", "0", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env={**os.environ, **(env or {})})
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(READY_PREFIX), line
        return line[len(READY_PREFIX):].strip()

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)
