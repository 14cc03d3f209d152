"""A worker that joins a running test ships its request rows from the start.

Found by the one-hour soak: a worker started while the test ran (the soak's churn, a
load machine rejoining) could receive the master's spawn message, and so fire
test_start, before the recorder hooked itself to the environment at `init`; its rows
then piled up in its memory (+191% in the soak) and were lost when it was killed
(133,864 requests). Here the late worker's `init` waits on the event loop
(`tests/support/yielding_init.py`), which makes that order certain: its rows must reach
the master's file while the test still runs, not only when it ends.
"""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from specload.runfiles.records import REQUESTS_SUFFIX
from specload.runner.processes import free_port
from tests.support import REPO
from tests.support.sweeps import wait_for

CHAT = str(REPO / "locustfiles" / "chat.py")
YIELDING = str(REPO / "tests" / "support" / "yielding_init.py")


def _locust(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "locust", *args], stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _clients(prefix: Path) -> set[str]:
    try:
        with open(f"{prefix}{REQUESTS_SUFFIX}", newline="") as f:
            return {row["client_id"] for row in csv.DictReader(f)}
    except FileNotFoundError:
        return set()


@pytest.mark.slow
def test_a_worker_joining_a_running_test_ships_its_rows_at_once(sim_server, tmp_path: Path):
    sim = sim_server()
    port = str(free_port())
    prefix = tmp_path / "out" / "locust"
    common = ["--max-tokens", "16", "--ignore-eos"]
    master = _locust("-f", CHAT, "--master", "--headless", "--expect-workers", "1",
                     "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
                     "--enable-rebalancing", "-u", "4", "-r", "4", "-t", "90s", "--csv",
                     str(prefix), "--host", sim.url, "--only-summary", *common,
                     log=tmp_path / "master.log")
    worker_args = ["--worker", "--master-host", "127.0.0.1", "--master-port", port]
    procs = [master, _locust("-f", CHAT, *worker_args, log=tmp_path / "w1.log")]
    try:
        first = f"{socket.gethostname()}-{procs[1].pid}"
        wait_for(lambda: first in _clients(prefix), 60, "the first worker's rows")
        late = _locust("-f", f"{YIELDING},{CHAT}", *worker_args, log=tmp_path / "w2.log")
        procs.append(late)
        name = f"{socket.gethostname()}-{late.pid}"
        wait_for(lambda: name in _clients(prefix), 40, "the late worker's rows, mid-run")
        assert master.poll() is None, "the test ended before the late worker's rows came"
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
