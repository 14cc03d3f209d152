"""`specload worker` on loopback: serves every arm of a distributed sweep, stops cleanly.

The sweep quits its Locust master after each arm; the workers end with it and `specload
worker` starts new ones for the next arm. SIGINT (Ctrl-C) and SIGTERM (an orchestrator)
stop it with one line, status 130 or 0, and no Locust process left behind.
"""

from __future__ import annotations

import signal

import psutil
import pytest

from specload.runner.processes import free_port
from tests.support.sweeps import read_csv, read_manifest, run_dir_of, wait_for
from tests.support.workers import START_LINE

PROFILE = "h100-llama8b-eagle3"


def two_arm_scenario(port: int) -> dict:
    return {
        "name": "workers",
        "ladder": [1, 4],
        "warmup_s": 1,
        "measure_s": 1.5,
        "request": {"max_tokens": 16, "ignore_eos": True},
        "distributed": {"workers": 2, "master_bind_host": "127.0.0.1",
                        "master_bind_port": port, "workers_wait_s": 60},
        "arms": [{"name": "spec-on", "sim": {"profile": PROFILE, "spec": "on"}},
                 {"name": "spec-off", "sim": {"profile": PROFILE, "spec": "off"}}],
    }


def assert_all_gone(procs: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(procs, timeout=5)
    assert not alive, [p.pid for p in alive]


@pytest.mark.slow
def test_worker_serves_a_two_arm_sweep_then_ctrl_c_stops_it(
    tmp_path, write_scenario, run_sweep, specload_worker
) -> None:
    port = free_port()
    worker = specload_worker(port, processes=2)
    scenario = write_scenario(two_arm_scenario(port))
    res = run_sweep(str(scenario), "--out", "out", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr + worker.text()
    assert f"specload worker 127.0.0.1 --port {port} --processes N" in res.stdout
    run_dir = tmp_path / run_dir_of(res.stdout)
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "done"
    for arm in ("spec-on", "spec-off"):
        rows = read_csv(run_dir / arm / "locust_requests.csv")
        # both workers of this arm's start sent rows to its master
        assert len({r["client_id"] for r in rows}) == 2, arm
    # one start per arm, plus the one now waiting for a next master
    wait_for(lambda: worker.starts() == 3, 30, "the start after the last arm")
    waiting = worker.wait_for_master_wait()
    assert "ended after" in worker.lines()[-1] and "status 0" in worker.lines()[-1]

    assert worker.signal(signal.SIGINT) == 130
    assert_all_gone(waiting)
    assert worker.locust_processes() == []
    lines = worker.lines()
    assert [ln for ln in lines if not ln.startswith(START_LINE)] == [
        "specload worker: stopped by SIGINT after 3 start(s); no worker left running"]


def test_sigterm_while_waiting_for_a_master_exits_0(specload_worker) -> None:
    worker = specload_worker(free_port(), processes=2)
    waiting = worker.wait_for_master_wait()
    assert worker.lines() == [
        f"specload worker: start 1: 2 Locust worker process(es) waiting for master "
        f"127.0.0.1:{worker.port} (Ctrl-C to stop)"]
    assert worker.signal(signal.SIGTERM) == 0
    assert_all_gone(waiting)
    assert worker.lines()[1:] == [
        "specload worker: stopped by SIGTERM after 1 start(s); no worker left running"]
