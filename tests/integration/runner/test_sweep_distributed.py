"""A distributed sweep (master + two workers on loopback) at C=250 vs a single-process one."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest
import yaml

from specload.runner.processes import free_port
from tests.support.sweeps import ARM_FILES, read_csv, read_manifest, run_dir_of
from tests.support.trace_files import synthetic, write_mooncake


def scenario(distributed: dict | None) -> dict:
    data = {
        "name": "dist",
        "ladder": [5, 250],
        "warmup_s": 2,
        "measure_s": 3,
        "request": {"max_tokens": 16, "ignore_eos": True},
        # a profile that runs all 250 at once: seed-glm's 16-request cap would queue
        # them, and the rung (then the drain) would wait for the queue to turn over
        "arms": [{"name": "spec-on", "sim": {"profile": "h100-llama8b-eagle3", "spec": "on"}}],
    }
    if distributed:
        data["distributed"] = distributed
    return data


def arm_summary(run_dir: Path) -> tuple[set[str], list[tuple[str, str]], Counter]:
    arm = run_dir / "spec-on"
    steps = read_csv(arm / "locust_rungs.csv")
    top_start = float(steps[-1]["warmup_start"])
    rows = read_csv(arm / "locust_requests.csv")
    users_at_top = Counter(
        r["client_id"] for r in {(r["client_id"], r["user_id"]): r for r in rows
                                 if float(r["start"]) >= top_start}.values()
    )
    return ({p.name for p in arm.iterdir() if p.is_file()},
            [(s["rung"], s["users"]) for s in steps], users_at_top)


@pytest.mark.slow
def test_distributed_sweep_matches_single_process_files(tmp_path, run_sweep,
                                                        specload_worker) -> None:
    port = free_port()
    dist = {"workers": 2, "master_bind_host": "127.0.0.1", "master_bind_port": port,
            "workers_wait_s": 60}
    (tmp_path / "dist.yaml").write_text(yaml.safe_dump(scenario(dist)))
    (tmp_path / "single.yaml").write_text(yaml.safe_dump(scenario(None)))
    workers = specload_worker(port, processes=2)
    res = run_sweep("dist.yaml", "--out", "out", timeout=240)
    assert workers.signal(signal.SIGINT) == 130
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"specload worker 127.0.0.1 --port {port} --processes N" in res.stdout
    dist_dir = tmp_path / run_dir_of(res.stdout)
    assert read_manifest(dist_dir)["status"] == "done"

    res = run_sweep("single.yaml", "--out", "out", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    single_dir = tmp_path / run_dir_of(res.stdout)

    d_files, d_steps, d_users = arm_summary(dist_dir)
    s_files, s_steps, s_users = arm_summary(single_dir)
    # the master also recorded its workers' clocks: on one machine, no offset to speak of
    assert d_files == s_files | {"locust_clock.csv"} and s_files >= ARM_FILES
    clocks = read_manifest(dist_dir)["arms"][0]["reps"][0]["clocks"]
    assert len(clocks) == 2 and all(abs(c["offset_s"]) < 0.005 for c in clocks), clocks
    assert d_steps == s_steps == [("0", "5"), ("1", "250")]
    # every one of the 250 users has its rows in the master's file, from both workers
    assert sum(d_users.values()) == sum(s_users.values()) == 250
    assert len(d_users) == 2 and len(s_users) == 1
    history = read_csv(dist_dir / "spec-on" / "locust_stats_history.csv")
    assert max(int(r["User Count"]) for r in history) == 250
    metrics = read_csv(dist_dir / "spec-on" / "locust_server_metrics.csv")
    assert {"vllm:generation_tokens_total", "vllm:num_requests_running"} <= {
        r["metric"] for r in metrics}


# The workload kinds whose locustfile is not the ladder's: the workers download the
# master's (a worker that ran the ladder's failed every spawn with KeyError:
# 'ChatSessionUser', and the arm measured nothing).
OTHER_KINDS = {
    "sessions": {"kind": "sessions", "conversations": "builtin", "think_time": 0.2},
    "open": {"kind": "open", "rates": [5, 20], "max_in_flight": 64},
    # the plan carries the trace's requests: the worker reads no trace file
    "trace": {"kind": "trace", "trace": "trace.jsonl", "speed": [1, 2], "max_in_flight": 64},
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
def test_workers_run_the_masters_workload_kind(tmp_path, run_sweep, specload_worker,
                                               kind: str) -> None:
    port = free_port()
    data = scenario({"workers": 1, "master_bind_host": "127.0.0.1",
                     "master_bind_port": port, "workers_wait_s": 60})
    data["workload"] = OTHER_KINDS[kind]
    write_mooncake(tmp_path / "trace.jsonl", synthetic(60, rate=20.0))
    if kind in ("open", "trace"):
        del data["ladder"]
    else:
        data["ladder"] = [2, 6]
    (tmp_path / "dist.yaml").write_text(yaml.safe_dump(data))
    workers = specload_worker(port, processes=1)
    res = run_sweep("dist.yaml", "--out", "out", timeout=240)
    assert workers.signal(signal.SIGINT) == 130
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / run_dir_of(res.stdout)
    assert read_manifest(run_dir)["status"] == "done"
    rows = read_csv(run_dir / "spec-on" / "locust_requests.csv")
    assert rows and {r["error_kind"] for r in rows} == {""}
    if kind == "sessions":
        # sessions of several turns, the think time between them the scenario's
        assert max(int(r["turn"]) for r in rows) >= 2 and all(r["session_id"] for r in rows)
    else:
        # open-loop arrivals, each with its scheduled time
        assert all(r["scheduled"] for r in rows)
    if kind == "trace":  # every request of the window at each speed, sent by the worker
        for rung in read_csv(run_dir / "spec-on" / "locust_rungs.csv"):
            start, end = float(rung["measure_start"]) - 1e-5, float(rung["measure_end"]) - 1e-5
            assert sum(start <= float(r["scheduled"]) < end for r in rows) == 60
