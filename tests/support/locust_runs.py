"""Headless Locust runs of the shipped locustfiles, and the fake streaming server.

`run_locust(folder, locustfile, host, users=..., run_time=..., extra=[...])` runs
`python -m locust --headless` in a subprocess (a fresh interpreter, as a user would),
with the CSV prefix inside `folder`, and returns a `LocustRun` with the exit status, the
combined output and readers for `_requests.csv` and the final summary. Runs with
`--processes` get a free master port. `start_fake_stream_server` starts the tiny
stand-in server of this package (same ready line and trace contract as `specload sim`)
for what the simulator is not needed for.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specload.runner.processes import free_port
from specload.runner.sim_launcher import READY_LINE
from tests.support import REPO

SUMMARY_ROW = re.compile(
    r"^(?P<type>[A-Z]+)?\s+(?P<name>\S+)\s+(?P<reqs>\d+)\s+(?P<fails>\d+)\([\d.]+%\)\s+\|"
    r"\s+(?P<avg>[\d.]+)", re.MULTILINE)


def master_port_args() -> list[str]:
    """A free master port: with the default (5557), concurrent distributed runs on one
    machine (other tests, sweeps) would steal each other's workers."""
    port = str(free_port())
    return ["--master-bind-host", "127.0.0.1", "--master-bind-port", port,
            "--master-host", "127.0.0.1", "--master-port", port]


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


def run_locust(folder: Path, locustfile: str, host: str, users: int = 10,
               run_time: str = "10s", extra: Sequence[str] = (),
               env: dict[str, str] | None = None, name: str = "run") -> LocustRun:
    prefix = folder / name / "locust"
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / locustfile),
           "--headless", "-u", str(users), "-r", str(users), "-t", run_time,
           "--csv", str(prefix), "--host", host, "--only-summary", *extra]
    if "--processes" in extra:
        cmd += master_port_args()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})}, cwd=folder)
    return LocustRun(prefix, proc.returncode, proc.stdout + proc.stderr)


def start_fake_stream_server(*args: str, env: dict[str, str] | None = None
                             ) -> tuple[subprocess.Popen[str], str]:
    """The fake server on a free port; returns the process and its base URL."""
    script = Path(__file__).with_name("fake_stream_server.py")
    proc = subprocess.Popen([sys.executable, str(script), "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = READY_LINE.search(line)
    assert match, line
    return proc, match.group(1)
