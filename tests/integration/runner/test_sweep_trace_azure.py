"""Trace replay of an Azure trace on two load processes, and a line broken afterwards.

The same pair and checks as `test_sweep_trace.py`'s Mooncake replay. The two processes
split the arrivals between them, half each. A line broken after the sweep stops
`--resume` with the problem naming the file and the line, and the report of what ran
still builds from the files, which are as they were.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from tests.integration.runner.test_sweep_trace import (
    capped_profile,
    check_answer,
    check_replay,
    scenario,
)
from tests.support.sweeps import read_csv, run_dir_of, sweep_cmd
from tests.support.trace_files import synthetic, write_azure


@pytest.mark.slow
@pytest.mark.timing
def test_an_azure_trace_on_two_processes_and_a_line_broken_later(
        write_scenario, run_sweep, tmp_path: Path) -> None:
    trace = write_azure(tmp_path / "AzureLLMInferenceTrace_code.csv",
                        synthetic(400, rate=70.0, seed=2))
    path = write_scenario(scenario(trace, capped_profile(tmp_path), processes=2))
    result = run_sweep(str(path), "--out", str(tmp_path / "out"), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    run = run_dir_of(result.stdout)
    summary = check_replay(run, trace, shares_prefixes=False)
    check_answer(summary, result.stdout)
    for arm in ("spec-on", "spec-off"):
        rows = read_csv(run / arm / "locust_requests.csv")
        by_process = {r["client_id"] for r in rows}
        assert len(by_process) == 2
        counts = [sum(r["client_id"] == c for r in rows) for c in by_process]
        assert math.isclose(*counts, rel_tol=0.05)  # round-robin: half each

    kept = (run / "spec-on" / "locust_requests.csv").read_bytes()
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join([*lines, "2023-11-16 18:20:00.0000000,12"]) + "\n")
    again = run_sweep("--resume", str(run), timeout=60)
    assert again.returncode == 2
    head, said = again.stderr.strip().splitlines()  # "...: 1 problem(s):", then the one
    assert head.endswith("manifest.json: 1 problem(s):"), head
    assert f"trace file '{trace}' line {len(lines) + 1}: 2 fields, not 3" in said, said
    assert (run / "spec-on" / "locust_requests.csv").read_bytes() == kept
    (run / "report.html").unlink()
    report = subprocess.run([*sweep_cmd()[:-1], "report", str(run)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert (run / "report.html").is_file() and "speculation pays up to" in report.stdout
