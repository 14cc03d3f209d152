"""The ladder shape in Locust's web UI: ladder and windows are form fields that take effect."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from specload.runner.processes import free_port
from tests.support import REPO
from tests.support.sweeps import read_csv


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode()


def wait_for_ui(url: str, proc: subprocess.Popen, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"locust exited with {proc.returncode}")
        try:
            return get(url)
        except OSError:
            time.sleep(0.2)
    pytest.fail("locust web UI did not come up")


def test_web_ui_runs_the_ladder_from_its_form_fields(tmp_path: Path, sim_server):
    sim = sim_server(profile="seed-glm", spec="on", trace=False)
    port = free_port()
    prefix = tmp_path / "ui"
    proc = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "ladder.py"),
         "--host", sim.url, "--web-host", "127.0.0.1", "--web-port", str(port),
         "--csv", str(prefix), "--max-tokens", "16", "--ignore-eos"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=(tmp_path / "locust.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        page = wait_for_ui(base + "/", proc)
        for field in ("ladder", "warmup_s", "measure_s"):
            assert f'"{field}"' in page  # shown among the UI's custom parameters
        form = {"user_count": "1", "spawn_rate": "1", "host": sim.url,
                "ladder": "2,3", "warmup_s": "1", "measure_s": "1.5"}
        req = urllib.request.Request(base + "/swarm",
                                     data=urllib.parse.urlencode(form).encode())
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.loads(resp.read())["success"] is True
        steps = Path(f"{prefix}_rungs.csv")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and len(
                read_csv(steps) if steps.exists() else []) < 2:
            time.sleep(0.3)
        rows = read_csv(steps)
        assert [(r["rung"], r["users"]) for r in rows] == [("0", "2"), ("1", "3")]
        deadline = time.monotonic() + 20
        while json.loads(get(base + "/stats/requests"))["state"] != "stopped":
            assert time.monotonic() < deadline, "the shape did not stop the test"
            time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
