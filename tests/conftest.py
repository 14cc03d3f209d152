"""Shared pytest fixtures: `sim_server` starts simulated inference servers on loopback.

`sim_server(profile="h100-llama8b-eagle3", spec="on", k=None, seed=0, faults=(),
trace=True, extra_args=())` runs `python -m specload.cli sim --port 0 ...` in a
subprocess, waits (30 s at most) for its ready line and returns a `SimServer` with
`.url`, `.trace_path`, `.proc` and `.read_trace()`. Every server started is stopped
(SIGTERM, then SIGKILL) when the test ends; `module_sim_server` is the same factory with
servers shared by a whole test module.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

READY_PREFIX = "specload-sim listening on "
READY_TIMEOUT_S = 30.0


@dataclass
class SimServer:
    """A running simulated server."""

    url: str
    trace_path: Path | None
    proc: subprocess.Popen[str]
    stderr_path: Path | None = None

    def stderr_text(self) -> str:
        """What the server wrote to stderr so far."""
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def read_trace(self) -> list[dict]:
        """Trace records written so far (complete lines only)."""
        if self.trace_path is None or not self.trace_path.exists():
            return []
        text = self.trace_path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines(keepends=True)
                if line.endswith("\n") and line.strip()]

    def stop(self) -> int:
        """Stop the server (SIGTERM, SIGKILL after 10 s); returns its exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _wait_ready(proc: subprocess.Popen[str], timeout: float, stderr_path: Path) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX):].strip()
    finally:
        sel.close()
    proc.kill()
    proc.wait(timeout=10)
    err = stderr_path.read_text(encoding="utf-8", errors="replace")
    raise RuntimeError(f"specload sim did not become ready: {err.strip()[-2000:]}")


def start_sim(
    tmp_dir: Path,
    profile: str = "h100-llama8b-eagle3",
    spec: str = "on",
    k: int | None = None,
    seed: int = 0,
    faults: Sequence[str] = (),
    trace: bool = True,
    extra_args: Sequence[str] = (),
) -> SimServer:
    """Start one simulated server subprocess and wait for its ready line."""
    tag = time.monotonic_ns()
    trace_path = tmp_dir / f"sim-trace-{tag}.jsonl" if trace else None
    stderr_path = tmp_dir / f"sim-stderr-{tag}.log"
    cmd = [sys.executable, "-m", "specload.cli", "sim", "--port", "0", "--host", "127.0.0.1",
           "--profile", profile, "--spec", spec, "--seed", str(seed)]
    if k is not None:
        cmd += ["-k", str(k)]
    for fault in faults:
        cmd += ["--fault", fault]
    if trace_path is not None:
        cmd += ["--trace", str(trace_path)]
    cmd += list(extra_args)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(stderr_path, "w", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    url = _wait_ready(proc, READY_TIMEOUT_S, stderr_path)
    return SimServer(url=url, trace_path=trace_path, proc=proc, stderr_path=stderr_path)


def _factory(tmp_dir: Path) -> Iterator[Callable[..., SimServer]]:
    started: list[SimServer] = []

    def factory(**kwargs: object) -> SimServer:
        server = start_sim(tmp_dir, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def sim_server(tmp_path: Path) -> Iterator[Callable[..., SimServer]]:
    """Factory fixture: `sim_server(profile=..., spec=..., ...)` -> SimServer."""
    yield from _factory(tmp_path)


@pytest.fixture(scope="module")
def module_sim_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., SimServer]]:
    """Like `sim_server`, but servers live until the test module ends (share them)."""
    yield from _factory(tmp_path_factory.mktemp("sim"))
