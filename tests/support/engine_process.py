"""A real engine's server started from a shell line for a test's own requests.

`running` starts it in its own process group on the port its line names, waits until
its health route answers (failing the test with the log's end if it exits or takes
too long) and stops the whole group on leaving, even when the test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from specload.runner import health_checks, placement


@contextmanager
def running(line: str, url: str, log: Path, what: str, ready_timeout_s: float = 300,
            health_path: str = "/health", cpus: frozenset[int] | None = None
            ) -> Iterator[str]:
    """The server `line` starts (on the CPUs `cpus`, None: anywhere), ready at `url`;
    yields `url`."""
    with log.open("wb") as out:
        proc = subprocess.Popen(["bash", "-c", line], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=placement.pinned(cpus))
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not health_checks.probe(url + health_path, 2).ok:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not start: {log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
