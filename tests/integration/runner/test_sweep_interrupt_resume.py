"""Ctrl-C (SIGINT to the sweep's process group) keeps finished rungs; --resume completes."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.support.sweeps import read_csv, read_manifest, run_dir_of, sweep_cmd

PROFILE = "h100-llama8b-eagle3"


def processes_mentioning(text: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(text in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.slow
def test_ctrl_c_then_resume_runs_only_the_missing_rungs(tmp_path: Path, run_sweep) -> None:
    scenario = {
        "name": "resumable",
        "ladder": [1, 2, 3],
        "warmup_s": 1,
        "measure_s": 2,
        "request": {"max_tokens": 24, "ignore_eos": True},
        "verify": False,
        "arms": [
            {"name": "a", "sim": {"profile": PROFILE, "spec": "on", "trace": True}},
            {"name": "b", "sim": {"profile": PROFILE, "spec": "off", "trace": True}},
        ],
    }
    path = tmp_path / "resumable.yaml"
    path.write_text(yaml.safe_dump(scenario))
    out = tmp_path / "sweep.out"
    with out.open("w") as fh:
        proc = subprocess.Popen(sweep_cmd(str(path), "--out", "out"), cwd=tmp_path,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: "run folder: " in out.read_text(), 30, "the run folder")
        run_dir = tmp_path / run_dir_of(out.read_text())
        steps = run_dir / "a" / "locust_rungs.csv"
        wait_for(lambda: steps.exists() and len(read_csv(steps)) >= 2, 90,
                 "two finished rungs")
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130, out.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.read_text()
    assert f"resume with: specload sweep --resume {run_dir_of(text)}" in text
    m = read_manifest(run_dir)
    assert m["status"] == "interrupted"
    assert [(a["name"], a["status"]) for a in m["arms"]] == [("a", "interrupted"),
                                                             ("b", "pending")]
    kept = [r["users"] for r in read_csv(steps)]
    assert kept == ["1", "2"]
    # Locust and the simulated server were stopped (their command lines name the run dir)
    wait_for(lambda: not processes_mentioning(str(run_dir)), 15, "children to exit")

    res = run_sweep("--resume", str(run_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resuming 1 missing rungs" in res.stdout
    m = read_manifest(run_dir)
    assert m["status"] == "done"
    assert all(a["status"] == "done" for a in m["arms"])
    for arm in ("a", "b"):
        rows = read_csv(run_dir / arm / "locust_rungs.csv")
        assert [(r["rung"], r["users"]) for r in rows] == [("0", "1"), ("1", "2"), ("2", "3")]
        ends = [float(r["measure_end"]) for r in rows]
        assert ends == sorted(ends)
    part = run_dir / "a" / "part-2"
    assert (part / "locust_stats.csv").exists()
    resumed_start = float(read_csv(run_dir / "a" / "locust_rungs.csv")[2]["warmup_start"])
    starts = [float(r["start"]) for r in read_csv(run_dir / "a" / "locust_requests.csv")]
    assert min(starts) < resumed_start - 5 < resumed_start <= max(starts)
    assert not (run_dir / "b" / "part-2").exists()


def test_a_reader_that_stops_early_stops_the_sweep_as_ctrl_c_does(tmp_path: Path) -> None:
    """`specload sweep ... | head -1`: the sweep's next progress line finds the pipe
    closed; the sweep stops as after Ctrl-C (status 130, manifest interrupted, servers
    and Locust stopped), with no traceback."""
    scenario = {
        "name": "piped", "ladder": [1, 2], "warmup_s": 1, "measure_s": 2,
        "request": {"max_tokens": 24, "ignore_eos": True}, "verify": False,
        "arms": [{"name": "a", "sim": {"profile": PROFILE, "spec": "on"}}],
    }
    path = tmp_path / "piped.yaml"
    path.write_text(yaml.safe_dump(scenario))
    proc = subprocess.Popen(sweep_cmd(str(path), "--out", "out"), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        first = proc.stdout.readline()  # like `head -1`: one line, then the reader goes
        proc.stdout.close()
        assert proc.wait(timeout=120) == 130
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    run_dir = tmp_path / run_dir_of(first)
    m = read_manifest(run_dir)
    assert (m["status"], [a["status"] for a in m["arms"]]) == ("interrupted", ["interrupted"])
    wait_for(lambda: not processes_mentioning(str(run_dir)), 15, "children to exit")
