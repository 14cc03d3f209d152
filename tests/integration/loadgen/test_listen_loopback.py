"""Locust's web UI and master listen on 127.0.0.1 unless asked otherwise.

Checks the sockets really listening (psutil), for the documented ways to start Locust by
hand: `scripts/start-master.sh` (web UI and master) and `locust -f locustfiles/ladder.py`
(README, "Sweeps and scenarios"). The sweep's own Locust command lines are covered in
tests/unit/runner/test_locust_command.py and its `--processes` master's sockets in
test_rel_kills.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from specload.runner.processes import free_port
from tests.support import REPO
from tests.support.sweeps import wait_for


def listening(pid: int) -> dict[int, str]:
    """port -> address of every TCP socket `pid` (or a child of it) listens on."""
    found: dict[int, str] = {}
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return found
    for proc in procs:
        try:
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    found[conn.laddr.port] = conn.laddr.ip
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture
def start(tmp_path: Path) -> Iterator:
    procs: list[subprocess.Popen] = []

    def run(cmd: list[str], ports: set[int], env: dict[str, str] | None = None) -> dict:
        proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, **(env or {})},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        procs.append(proc)
        return wait_for(lambda: (lambda s: s if ports <= set(s) else None)(
            listening(proc.pid)), 60, f"ports {ports}")

    yield run
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_start_master_script_listens_on_loopback(start) -> None:
    web, master = free_port(), free_port()
    socks = start(["bash", str(REPO / "scripts" / "start-master.sh"), "http://127.0.0.1:9",
                   "--web-port", str(web)], {web, master},
                  env={"MASTER_PORT": str(master), "PYTHON": sys.executable})
    assert {socks[web], socks[master]} == {"127.0.0.1"}, socks


def test_plain_locust_web_ui_listens_on_loopback(start) -> None:
    web = free_port()
    socks = start([sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "ladder.py"),
                   "--host", "http://127.0.0.1:9", "--web-port", str(web)], {web})
    assert socks[web] == "127.0.0.1", socks
