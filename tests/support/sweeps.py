"""Run `specload sweep` as a user would and read what it wrote.

`run_sweep(cwd, *args)` runs it in the foreground (fails the test on a timeout);
`BackgroundSweep` runs it with its output in a file, for tests that interrupt or kill
something meanwhile. The readers take a run folder's manifest, CSV files and traces.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from specload.errors import UserError
from specload.runner.ownership import owning
from specload.runner.plan import Pass

# Files every arm folder holds after a sweep, whatever the load mode.
ARM_FILES = {
    "locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv",
    "locust_requests.csv", "locust_rungs.csv", "locust_server_metrics.csv", "locust.log",
    "server.log", "locust_client_stats.csv",
}


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "specload.cli", "sweep", *args]


def write_scenario(folder: Path, data: dict[str, Any], name: str = "scenario.yaml") -> Path:
    """The scenario as YAML; without the verification arm unless `data` asks for it
    (a third arm would lengthen every sweep test that is not about it)."""
    path = folder / name
    path.write_text(yaml.safe_dump({"verify": False, **data}, sort_keys=False))
    return path


def run_sweep(cwd: Path, *args: str, timeout: float = 240,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`specload sweep ARGS` in `cwd`; its process group is killed on a timeout."""
    proc = subprocess.Popen(
        sweep_cmd(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"sweep timed out\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_dir_of(stdout: str) -> Path:
    """The run folder a sweep announced on its `run folder: ...` line."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith("run folder: "))
    return Path(line.removeprefix("run folder: ").split(" (")[0])


MACHINE_WARNINGS = {"client_starved"}  # they report the machine the load ran on


def assert_no_warning_but_the_machines(warnings: list[dict[str, Any]], stdout: str) -> None:
    """A sweep's summary.json warnings hold none but the machine's (a busy shared machine
    starves the load generator, as the warning should say); with none, the console names
    no warning either. Judged by kind: the console's "N data-quality warning(s)" line
    heads any list."""
    assert [w for w in warnings if w["kind"] not in MACHINE_WARNINGS] == [], warnings
    if not warnings:
        assert "warning" not in stdout.lower(), stdout


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def counter_rate(arm_dir: Path, step: dict[str, str], name: str) -> float:
    """Server-side rate of a counter over a rung's measure window (nearest samples inside)."""
    t0, t1 = float(step["measure_start"]), float(step["measure_end"])
    pts = [(float(r["ts"]), float(r["value"]))
           for r in read_csv(arm_dir / "locust_server_metrics.csv")
           if r["metric"] == name and t0 <= float(r["ts"]) <= t1]
    (ta, va), (tb, vb) = pts[0], pts[-1]
    return (vb - va) / (tb - ta)


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
    """Rungs finished so far according to the arm's rungs file."""
    path = arm_dir / "locust_rungs.csv"
    return max(0, len(path.read_text().splitlines()) - 1) if path.exists() else 0


class BackgroundSweep:
    """A `specload sweep` subprocess with its output in a file."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None,
                 wrapper: Sequence[str] = ()) -> None:
        """`wrapper` runs it elsewhere, e.g. `ip netns exec NS` on a test host."""
        self.out = cwd / f"sweep-{time.monotonic_ns()}.out"
        with self.out.open("w") as fh:
            self.proc = subprocess.Popen(
                [*wrapper, *sweep_cmd(*args)], cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                start_new_session=True, env=env)
        self.cwd = cwd

    def text(self) -> str:
        return self.out.read_text()

    def run_dir(self) -> Path:
        wait_for(lambda: "run folder: " in self.text(), 30, "the run folder")
        return self.cwd / run_dir_of(self.text())

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

    def stop_what_it_left(self) -> None:
        """Stop the servers and Locust a killed sweep left running (as a resume would)."""
        if "run folder: " not in self.text():
            return
        with contextlib.suppress(UserError), owning(self.cwd / run_dir_of(self.text())):
            pass


class Passes:
    """A stand-in for `runner.execute.run_pass` in unit tests: it keeps each pass it is
    given and marks every repeat in it done (its rungs listed as finished)."""

    def __init__(self) -> None:
        self.seen: list[Pass] = []

    def __call__(self, sweep: Any, todo: Pass) -> None:
        self.seen.append(todo)
        sweep.report = None
        for rnd in todo.rounds:
            for run in rnd.runs:
                arm = sweep.manifest.arm(run.arm)
                next(r for r in arm.reps if r.rep == run.rep).status = "done"
                arm.refresh_status()
