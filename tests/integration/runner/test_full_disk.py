"""A disk that fills up in the middle of a sweep.

The run folder is on a small tmpfs the test mounts (it runs as root, as CI does). Once
the first arm's first rung is on disk, a filler file takes every byte left. The sweep
must stop with one line that names the folder and says how to go on, leave nothing
running, and keep every finished rung readable; once the filler is gone, `specload
report` builds from the folder as it is and `--resume` completes the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.sweeps import (
    read_csv,
    read_manifest,
    steps_done,
    sweep_cmd,
    wait_for,
)

PROFILE = "h100-llama8b-eagle3"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MB tmpfs of the test's own, unmounted at the end whatever happens."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    """Take every byte left on `disk` (unbuffered writes, ever smaller); the filler."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        size = 1 << 20
        while size >= 1:
            try:
                os.write(fd, b"\0" * size)
            except OSError:
                size //= 2
    finally:
        os.close(fd)
    return filler


@pytest.mark.slow
def test_a_full_disk_stops_the_sweep_with_one_line_and_resume_finishes(
    tmp_path: Path, small_disk: Path, write_scenario, background_sweep, run_sweep
) -> None:
    scenario = write_scenario({
        "name": "full-disk", "ladder": [2, 4, 8], "warmup_s": 1, "measure_s": 3,
        "request": {"max_tokens": 32, "ignore_eos": True},
        "arms": [{"name": "on", "sim": {"profile": PROFILE, "spec": "on", "trace": True}},
                 {"name": "off", "sim": {"profile": PROFILE, "spec": "off", "trace": True}}],
    })
    sweep = background_sweep(str(scenario), "--out", str(small_disk))
    run_dir = sweep.run_dir()
    wait_for(lambda: steps_done(run_dir / "on") >= 1, 90, "the first rung")
    children = [int(pid) for pid in json.loads(
        (run_dir / ".specload-children.json").read_text())]
    filler = _fill(small_disk)
    assert sweep.wait(180) == 2, sweep.text()
    text = sweep.text()
    assert "Traceback" not in text, text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("specload: error:")]
    assert line.startswith(f"specload: error: no space left on the device of {run_dir} "), line
    assert line.endswith(f"the finished rungs are kept: free some space, then `specload sweep "
                         f"--resume {run_dir}`"), line
    assert len(children) == 2 and _running(children) == []  # its server and Locust
    kept = [r["users"] for r in read_csv(run_dir / "on" / "locust_rungs.csv")]
    assert kept[:1] == ["2"], kept

    filler.unlink()
    report = subprocess.run([*sweep_cmd()[:-1], "report", str(run_dir)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"arm on rep 1: {len(kept)} of 3 rungs finished" in report.stdout, report.stdout
    resumed = run_sweep("--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_manifest(run_dir)["status"] == "done"
    for arm in ("on", "off"):
        assert [r["users"] for r in read_csv(run_dir / arm / "locust_rungs.csv")] == [
            "2", "4", "8"]
        ids = [r["request_id"] for r in read_csv(run_dir / arm / "locust_requests.csv")]
        assert len(ids) == len(set(ids))


def _running(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
    return alive
