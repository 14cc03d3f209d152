"""The one shared end-to-end sweep: two simulated arms through a short ladder, reported.

Many tests need a finished sweep folder (files, manifest, progress lines, the report, the
report in a browser, the report against the simulator's trace); they all read this one,
run once per test session. Its ladder brackets seed-glm's crossover, its windows are
short but long enough for the report to match the trace within a few percent.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.sweeps import read_manifest, run_dir_of, run_sweep, write_scenario

LADDER = [1, 8, 40]
ARMS = ("spec-on", "spec-off")
SCENARIO: dict[str, Any] = {
    "name": "e2e",
    "ladder": LADDER,
    "warmup_s": 1,
    "measure_s": 3,
    "min_requests": 5,
    "max_measure_s": 10,
    "request": {"max_tokens": 24, "ignore_eos": True, "temperature": 0, "seed": 0},
    "arms": [{"name": "spec-on", "sim": {"profile": "seed-glm", "spec": "on", "trace": True}},
             {"name": "spec-off", "sim": {"profile": "seed-glm", "spec": "off",
                                          "trace": True}}],
}


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: its command's outcome and its run folder."""

    result: subprocess.CompletedProcess[str]
    run_dir: Path

    @property
    def stdout(self) -> str:
        return self.result.stdout

    @property
    def manifest(self) -> dict[str, Any]:
        return read_manifest(self.run_dir)

    def arm_dir(self, arm: str) -> Path:
        return self.run_dir / arm


def run_e2e(folder: Path) -> SweepResult:
    scenario = write_scenario(folder, SCENARIO, "e2e.yaml")
    res = run_sweep(folder, str(scenario), "--out", "out", timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return SweepResult(res, folder / run_dir_of(res.stdout))


def shared_e2e(folder: Path) -> SweepResult:
    """Run the sweep into `folder` once; other test processes (xdist workers) wait for it
    and read the same result."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "sweep.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "sweep.json"
        if done.exists():
            got = json.loads(done.read_text())
            return SweepResult(subprocess.CompletedProcess(
                got["args"], got["returncode"], got["stdout"], got["stderr"]),
                Path(got["run_dir"]))
        result = run_e2e(folder)
        done.write_text(json.dumps({
            "args": result.result.args, "returncode": result.result.returncode,
            "stdout": result.stdout, "stderr": result.result.stderr,
            "run_dir": str(result.run_dir)}))
        return result
