"""Helpers for the runner's integration tests: write a scenario, run `specload sweep`."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

# Files every arm folder holds after a sweep, whatever the load mode.
ARM_FILES = {
    "locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv",
    "locust_requests.csv", "locust_steps.csv", "locust_server_metrics.csv", "locust.log",
    "server.log", "locust_client_stats.csv",
}


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "specload.cli", "sweep", *args]


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    def write(data: dict[str, Any], name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


@pytest.fixture
def run_sweep(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        proc = subprocess.Popen(
            sweep_cmd(*args), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"sweep timed out\nstdout:\n{out}\nstderr:\n{err}")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    return run


def run_dir_of(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("run folder: "))
    return Path(line.removeprefix("run folder: ").split(" (")[0])


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def counter_rate(arm_dir: Path, step: dict[str, str], name: str) -> float:
    """Server-side rate of a counter over a step's measure window (nearest samples inside)."""
    t0, t1 = float(step["measure_start"]), float(step["measure_end"])
    pts = [(float(r["ts"]), float(r["value"]))
           for r in read_csv(arm_dir / "locust_server_metrics.csv")
           if r["metric"] == name and t0 <= float(r["ts"]) <= t1]
    (ta, va), (tb, vb) = pts[0], pts[-1]
    return (vb - va) / (tb - ta)


@pytest.fixture
def tools() -> SimpleNamespace:
    """The helpers above, for test modules (conftest modules are not importable by name)."""
    return SimpleNamespace(
        ARM_FILES=ARM_FILES, run_dir_of=run_dir_of, read_manifest=read_manifest,
        read_csv=read_csv, counter_rate=counter_rate, sweep_cmd=sweep_cmd,
    )
