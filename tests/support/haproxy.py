"""A real HAProxy in front of a test's replicas, with `tests/data/haproxy-replicas.cfg`.

Debian's `haproxy` package (`.ci/run` installs it). `haproxy_front` starts it in the
foreground (`-db`) on a free loopback port with the replicas' addresses in its
environment, waits until the port accepts connections and stops it on leaving.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from specload.runner.processes import free_port, stop_process_group

CONFIG = Path(__file__).resolve().parents[1] / "data" / "haproxy-replicas.cfg"


@contextmanager
def haproxy_front(folder: Path, replicas: Sequence[str]) -> Iterator[str]:
    """HAProxy balancing round-robin over `replicas` (host:port each); yields its URL."""
    found = shutil.which("haproxy")
    if found is None:
        pytest.fail("haproxy is not installed (Debian package `haproxy`; .ci/run installs it)")
    port = free_port()
    env = {**os.environ, "FRONT": f"127.0.0.1:{port}",
           **{f"REPLICA_{i}": r for i, r in enumerate(replicas)}}
    log = folder / "haproxy.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([found, "-f", str(CONFIG), "-db"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"haproxy did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(proc, timeout=10)
