"""Helpers for the reliability tests: the runner's sweep fixtures, background sweeps, kills.

The runner's fixtures (`write_scenario`, `run_sweep`, `tools`) are loaded from
tests/integration/runner/conftest.py so both areas drive `specload sweep` the same way.
`background_sweep` starts a sweep whose output goes to a file, for tests that kill
something while it runs; `arm_processes` finds the processes working for one arm (their
command lines name the arm's folder); the `rel` fixture hands these helpers to tests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

_RUNNER = Path(__file__).resolve().parents[1] / "runner" / "conftest.py"
_spec = importlib.util.spec_from_file_location("_runner_conftest", _RUNNER)
assert _spec is not None and _spec.loader is not None
_runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_runner)
write_scenario = _runner.write_scenario
run_sweep = _runner.run_sweep
tools = _runner.tools

PROFILE = "h100-llama8b-eagle3"


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `predicate` until it returns something truthy; fail the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def arm_processes(arm_dir: Path, word: str) -> list[psutil.Process]:
    """Live processes with `word` in their command line that name `arm_dir`'s folder.

    The runner may pass relative paths, so only `<run folder name>/<arm>` is matched.
    """
    fragment = f"{arm_dir.parent.name}/{arm_dir.name}/"
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = p.info["cmdline"] or []
            if any(fragment in part for part in cmd) and word in cmd:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def steps_done(arm_dir: Path) -> int:
    """Rungs finished so far according to the arm's steps file."""
    path = arm_dir / "locust_steps.csv"
    return max(0, len(path.read_text().splitlines()) - 1) if path.exists() else 0


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class BackgroundSweep:
    """A `specload sweep` subprocess with its output in a file."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.out = cwd / f"sweep-{time.monotonic_ns()}.out"
        with self.out.open("w") as fh:
            self.proc = subprocess.Popen(
                _runner.sweep_cmd(*args), cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                start_new_session=True, env=env)
        self.cwd = cwd

    def text(self) -> str:
        return self.out.read_text()

    def run_dir(self) -> Path:
        wait_for(lambda: "run folder: " in self.text(), 30, "the run folder")
        return self.cwd / _runner.run_dir_of(self.text())

    def wait(self, timeout: float = 180) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"sweep did not finish:\n{self.text()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def background_sweep(tmp_path: Path) -> Iterator[Callable[..., BackgroundSweep]]:
    started: list[BackgroundSweep] = []

    def start(*args: str, env: dict[str, str] | None = None) -> BackgroundSweep:
        sweep = BackgroundSweep(list(args), tmp_path, env)
        started.append(sweep)
        return sweep

    yield start
    for sweep in started:
        sweep.kill()


@pytest.fixture
def rel() -> SimpleNamespace:
    """The helpers above, for test modules (conftest modules are not importable by name)."""
    return SimpleNamespace(PROFILE=PROFILE, wait_for=wait_for, arm_processes=arm_processes,
                           steps_done=steps_done, read_trace=read_trace)
