"""Spawning a rung's users does not hold a worker's event loop.

A sweep on two load processes (a Locust master and its workers) runs with gevent's
blocking monitor in every process (`GEVENT_MONITOR_THREAD_ENABLE`), which writes the
stack of any greenlet that keeps the loop longer than `GEVENT_MAX_BLOCKING_TIME` into
the Locust log. Locust 2.47 re-parsed its options once per key of every spawn message
(`loadgen/spawn_message.py`), 80-110 ms per message at each rung start; and the first
request of a process built a TLS context for a plain-HTTP server (tens of ms).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.sweeps import run_dir_of

BLOCKING_S = 0.05  # far above a spawn's own work, far below the stalls it replaced


@pytest.mark.slow
def test_a_rung_start_holds_no_worker_loop(tmp_path: Path, write_scenario, run_sweep) -> None:
    data = {"name": "spawn", "ladder": [1, 60], "warmup_s": 2, "measure_s": 2,
            "min_requests": 1, "processes": 2,
            "request": {"max_tokens": 32, "ignore_eos": True},
            "arms": [{"name": "a", "sim": {"profile": "bench-20ms", "spec": "off"}}]}
    env = {**os.environ, "GEVENT_MONITOR_THREAD_ENABLE": "true",
           "GEVENT_MAX_BLOCKING_TIME": str(BLOCKING_S)}
    res = run_sweep(str(write_scenario(data)), "--out", "out", timeout=180, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    log = (tmp_path / run_dir_of(res.stdout) / "a" / "locust.log").read_text()
    assert "Worker" in log or "worker" in log, log[-2000:]  # the workers' output is here
    for stall in ("default_args_dict", "create_default_context"):
        assert stall not in log, log[log.index(stall) - 3000:log.index(stall) + 200]
