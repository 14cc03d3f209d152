"""`specload worker` as a load machine runs it: started, read, signalled, checked for leftovers.

Locust's worker processes are forked from the one it starts, so they all carry its
command line, and the master port (a free one per test) tells them apart from every
other test's workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from tests.support.sweeps import wait_for

START_LINE = "specload worker: start "


def worker_cmd(master_host: str, port: int, processes: int) -> list[str]:
    return [sys.executable, "-m", "specload.cli", "worker", master_host, "--port", str(port),
            "--processes", str(processes)]


class SpecloadWorker:
    """A `specload worker` subprocess with its console output in a file."""

    def __init__(self, folder: Path, port: int, processes: int = 2,
                 master_host: str = "127.0.0.1", wrapper: Sequence[str] = (),
                 env: dict[str, str] | None = None) -> None:
        """`wrapper` runs it elsewhere (`ip netns exec NS`); `env` adds variables."""
        self.port = port
        self.out = folder / f"worker-{time.monotonic_ns()}.out"
        with self.out.open("w") as fh:
            self.proc = subprocess.Popen(
                [*wrapper, *worker_cmd(master_host, port, processes)], cwd=folder, stdout=fh,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, **(env or {})})

    def text(self) -> str:
        return self.out.read_text()

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def starts(self) -> int:
        return sum(line.startswith(START_LINE) for line in self.lines())

    def wait_for_master_wait(self, timeout: float = 30) -> list[psutil.Process]:
        """The current start's Locust process while no master answers: one, because `-f -`
        downloads the master's locustfile before `--processes` forks the workers."""

        def up() -> list[psutil.Process]:
            found = self.locust_processes()
            return found if len(found) == 1 else []

        return wait_for(up, timeout, "the Locust process of `specload worker` to wait")

    def locust_processes(self) -> list[psutil.Process]:
        """Live Locust processes pointed at this worker's master port (zombies excluded)."""
        found = []
        for p in psutil.process_iter(["cmdline", "status"]):
            try:
                cmd = p.info["cmdline"] or []
                if (p.info["status"] != psutil.STATUS_ZOMBIE and "--worker" in cmd
                        and str(self.port) in cmd and "--master-port" in cmd):
                    found.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def signal(self, sig: signal.Signals, timeout: float = 30) -> int:
        """Send `sig` as a terminal or an orchestrator would; its exit status."""
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"specload worker ignored {sig.name}:\n{self.text()}") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for p in self.locust_processes():
            p.kill()
