"""Process kills during a sweep: the simulated server, a Locust worker, the sweep itself.

Each time the sweep goes on (or stops with a one-line reason), every rung finished
before the fault stays on disk and in the report, the failures the fault caused are
in the request records grouped by `error_kind`, and `--resume` completes the run.
Also a server that is not up when its arm starts (failed, resumed once it is up) and
one that takes a while to become ready (waited for).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from specload.runner.processes import free_port
from tests.support.sweeps import (
    arm_processes,
    read_csv,
    read_manifest,
    read_trace,
    run_dir_of,
    steps_done,
    sweep_cmd,
    wait_for,
)

pytestmark = pytest.mark.long(145)  # the slow tier starts it first

PROFILE = "h100-llama8b-eagle3"


def summary_rungs(run_dir: Path) -> list[tuple[str, int]]:
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    return sorted((row["arm"], row["concurrency"]) for row in summary)


def check_nothing_lost(arm_dir: Path, client: str = "", traced_after: float = 0.0) -> None:
    """Every request in the simulator's trace (that arrived after `traced_after`) is in the
    records exactly once, every successful record (of `client`) is in the trace, and each
    load process's records (or `client`'s) are numbered 1..n without a gap (across resumes
    a resumed part starts its own processes, so gaps are checked per client)."""
    rows = read_csv(arm_dir / "locust_requests.csv")
    ids = Counter(r["request_id"] for r in rows)
    assert max(ids.values()) == 1
    traced = [t["request_id"] for t in read_trace(arm_dir / "server_trace.jsonl")
              if t["arrival"] > traced_after]
    assert traced and len(traced) == len(set(traced))
    assert set(traced) <= set(ids), sorted(set(traced) - set(ids))[:5]
    mine = [r for r in rows if not client or r["client_id"] == client]
    ok = {r["request_id"] for r in mine if r["error_kind"] == "" and r["interrupted"] == "0"}
    assert ok <= set(traced) | {t["request_id"] for t in read_trace(
        arm_dir / "server_trace.jsonl")}, sorted(ok - set(traced))[:5]
    seqs: dict[str, list[int]] = {}
    for r in mine:
        seqs.setdefault(r["client_id"], []).append(int(r["seq"]))
    for got in seqs.values():
        assert sorted(got) == list(range(1, len(got) + 1))


@pytest.mark.slow
def test_server_killed_mid_rung_and_servers_not_ready_then_resume(
    tmp_path: Path, write_scenario, run_sweep, background_sweep, sim_server
) -> None:
    late_port, slow_port = free_port(), free_port()
    slow_start = (f"sleep 2; exec {sys.executable} -m specload.cli sim --profile {PROFILE} "
                  f"--spec off --port {slow_port}")
    scenario = write_scenario({
        "name": "kills", "ladder": [2, 4], "warmup_s": 1, "measure_s": 3,
        "request": {"max_tokens": 16, "ignore_eos": True},
        "arms": [
            {"name": "killed", "sim": {"profile": PROFILE, "spec": "on", "trace": True}},
            {"name": "late", "url": f"http://127.0.0.1:{late_port}", "spec": "off"},
            {"name": "slow", "spec": "off", "command": {
                "start": slow_start, "base_url": f"http://127.0.0.1:{slow_port}",
                "ready_timeout_s": 60}},
        ],
    })
    sweep = background_sweep(str(scenario), "--out", "out")
    run_dir = sweep.run_dir()
    killed = run_dir / "killed"
    wait_for(lambda: steps_done(killed) >= 1, 90, "the first rung")
    (sim,) = wait_for(lambda: arm_processes(killed, "sim"), 10, "the sim process")
    time.sleep(1.0)  # into the next rung, with requests in flight
    sim.send_signal(signal.SIGKILL)
    assert sweep.wait() == 1, sweep.text()
    text = sweep.text()
    assert "Traceback" not in text
    m = read_manifest(run_dir)
    status = {a["name"]: (a["status"], a["reps"][0]["error"]) for a in m["arms"]}
    assert status["killed"][0] == "failed" and "\n" not in status["killed"][1]
    assert status["killed"][1].startswith(
        "the server exited during the rung at C=4: simulated server exited with status -9: ")
    assert status["late"] == ("failed", f"server at http://127.0.0.1:{late_port} is not "
                              f"ready (http://127.0.0.1:{late_port}/health: connection "
                              "refused); start it or set the arm's ready_url")
    assert status["slow"] == ("done", None)
    assert "[killed] FAILED: the server exited during the rung at C=4" in text
    assert "failed arm(s): killed, late" in text
    # the rung finished before the kill is on disk and in the report
    assert [r["users"] for r in read_csv(killed / "locust_rungs.csv")] == ["2"]
    assert summary_rungs(run_dir) == [("killed", 2), ("slow", 2), ("slow", 4)]
    kinds = Counter(r["error_kind"] for r in read_csv(killed / "locust_requests.csv"))
    assert set(kinds) - {""} <= {"connection", "stream_cut", "interrupted"}
    assert kinds["connection"] + kinds["stream_cut"] >= 1, kinds
    check_nothing_lost(killed)

    sim_server(extra_args=["--port", str(late_port)], trace=False)
    res = run_sweep("--resume", str(run_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[killed] " in res.stdout and "resuming 1 missing rungs" in res.stdout
    assert "[slow]" not in res.stdout
    m = read_manifest(run_dir)
    assert m["status"] == "done" and all(a["status"] == "done" for a in m["arms"])
    assert [r["users"] for r in read_csv(killed / "locust_rungs.csv")] == ["2", "4"]
    assert summary_rungs(run_dir) == [(arm, c) for arm in ("killed", "late", "slow")
                                      for c in (2, 4)]
    check_nothing_lost(killed)
    assert (killed / "part-2" / "server_trace.jsonl").exists()


@pytest.mark.slow
def test_worker_killed_then_ctrl_c_then_resume(
    tmp_path: Path, write_scenario, run_sweep, background_sweep
) -> None:
    # rungs long enough that the Ctrl-C below lands inside the third: after the lost
    # worker's stall the first two rungs can end within a second of each other, and on
    # a machine busy with the slow tier this test's own polling can lag the rungs by
    # seconds (6 s windows once let the third rung end first)
    scenario = write_scenario({
        "name": "workers", "ladder": [2, 4, 6], "warmup_s": 1, "measure_s": 10,
        "processes": 2, "request": {"max_tokens": 16, "ignore_eos": True},
        "arms": [{"name": "arm", "sim": {"profile": PROFILE, "spec": "on", "trace": True}}],
    })
    sweep = background_sweep(str(scenario), "--out", "out")
    run_dir = sweep.run_dir()
    arm = run_dir / "arm"
    wait_for(lambda: steps_done(arm) >= 1, 90, "the first rung")
    locust = arm_processes(arm, "--headless")  # forked workers share the command line
    (master,) = [p for p in locust if p.ppid() not in {q.pid for q in locust}]
    workers = master.children()
    assert len(workers) == 2
    # the implicit master of --processes listens on loopback only
    assert {c.laddr.ip for c in master.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN} == {"127.0.0.1"}
    workers[0].send_signal(signal.SIGKILL)
    killed_at = time.time()
    killed_client = f"{socket.gethostname()}-{workers[0].pid}"
    # the run goes on with the other worker: the next rungs still finish
    wait_for(lambda: steps_done(arm) >= 2, 60, "the rung after the kill")
    time.sleep(1.5)  # into the third rung
    os.killpg(sweep.proc.pid, signal.SIGINT)
    assert sweep.wait() == 130, sweep.text()
    assert f"resume with: specload sweep --resume {run_dir_of(sweep.text())}" in (
        sweep.text())
    assert read_manifest(run_dir)["status"] == "interrupted"
    assert [r["users"] for r in read_csv(arm / "locust_rungs.csv")] == ["2", "4"]
    rows = read_csv(arm / "locust_requests.csv")
    (survivor,) = {r["client_id"] for r in rows} - {killed_client}
    assert not [r for r in rows if r["client_id"] == killed_client
                and float(r["start"]) > killed_at]
    rung2_end = float(read_csv(arm / "locust_rungs.csv")[1]["measure_end"])
    assert {r["client_id"] for r in rows if float(r["start"]) > rung2_end} == {survivor}
    # The rows a SIGKILLed worker had not yet sent die with it; the survivor's requests,
    # also those in flight at Ctrl-C, are all recorded exactly once.
    check_nothing_lost(arm, client=survivor, traced_after=killed_at + 0.5)
    # the finished rungs are in a report built from the interrupted folder
    res = subprocess.run([*sweep_cmd()[:-1], "report", str(run_dir)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert summary_rungs(run_dir) == [("arm", 2), ("arm", 4)]

    res = run_sweep("--resume", str(run_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resuming 1 missing rungs" in res.stdout
    assert [r["users"] for r in read_csv(arm / "locust_rungs.csv")] == ["2", "4", "6"]
    assert summary_rungs(run_dir) == [("arm", 2), ("arm", 4), ("arm", 6)]
    assert read_manifest(run_dir)["status"] == "done"


@pytest.mark.slow
def test_runner_killed_then_report_and_resume_clear_what_it_left(
    tmp_path: Path, write_scenario, run_sweep, background_sweep
) -> None:
    """`kill -9` of the sweep and of its Locust mid-rung, as the OOM killer or a lost
    session would: the report builds from the folder as it is and says what is missing;
    a second sweep of the folder is refused while one runs; `--resume` stops the server
    the killed sweep left running (a `command:` arm's), cuts off the row Locust left
    half-written, and only the rung in flight is lost."""
    port = free_port()
    start = (f"exec {sys.executable} -m specload.cli sim --profile {PROFILE} --spec off "
             f"--port {port}")
    scenario = write_scenario({
        "name": "killed-runner", "ladder": [2, 4, 6], "warmup_s": 1, "measure_s": 3,
        "request": {"max_tokens": 16, "ignore_eos": True},
        "arms": [{"name": "on", "sim": {"profile": PROFILE, "spec": "on"}},
                 {"name": "off", "spec": "off", "command": {
                     "start": start, "base_url": f"http://127.0.0.1:{port}"}}],
    })
    sweep = background_sweep(str(scenario), "--out", "out")
    run_dir = sweep.run_dir()
    off = run_dir / "off"
    wait_for(lambda: steps_done(off) >= 1, 120, "the off arm's first rung")
    time.sleep(1.0)  # into its second rung, with requests in flight
    (locust,) = wait_for(lambda: arm_processes(off, "locust"), 10, "the off arm's Locust")
    children = json.loads((run_dir / ".specload-children.json").read_text())
    (server_pid,) = [int(pid) for pid, child in children.items()
                     if child["arm"] == "off" and child["what"].startswith("server")]
    server_started = psutil.Process(server_pid).create_time()
    os.kill(sweep.proc.pid, signal.SIGKILL)
    locust.send_signal(signal.SIGKILL)
    sweep.proc.wait()
    assert psutil.Process(server_pid).is_running()  # orphaned, still serving
    requests = off / "locust_requests.csv"
    with requests.open("a") as fh:  # as a writer killed in the middle of a row leaves it
        fh.write("cut-short-row,vm-1,1,chat,code,1796332116.4")
    kept = {r["request_id"] for r in read_csv(requests)} - {"cut-short-row"}

    report = subprocess.run([*sweep_cmd()[:-1], "report", str(run_dir)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    assert ("arm off rep 1: 1 of 3 rungs finished (stopped while running: killed, or "
            "still running)") in report.stdout
    assert "the last row of locust_requests.csv was cut short" in report.stdout
    assert f"resume it with `specload sweep --resume {run_dir}`" in report.stdout
    assert summary_rungs(run_dir) == [("off", 2), ("on", 2), ("on", 4), ("on", 6)]

    resumed = background_sweep("--resume", str(run_dir))
    wait_for(lambda: "run folder: " in resumed.text(), 60, "the resumed sweep's start")
    second = run_sweep("--resume", str(run_dir), timeout=60)
    assert second.returncode == 2, second.stdout + second.stderr
    assert (f"{run_dir} is in use by another specload sweep (pid {resumed.proc.pid})"
            in second.stderr), second.stderr
    assert resumed.wait() == 0, resumed.text()
    text = resumed.text()
    assert ("stopped the server (start command) of arm off left running by a killed sweep "
            f"(pid {server_pid})") in text
    assert "[off] cut off the half-written last row of locust_requests.csv" in text
    assert "[on]" not in text and "resuming 2 missing rungs" in text
    with contextlib.suppress(psutil.NoSuchProcess):  # gone, or its pid reused since
        assert psutil.Process(server_pid).create_time() != server_started
    assert read_manifest(run_dir)["status"] == "done"
    assert [r["users"] for r in read_csv(off / "locust_rungs.csv")] == ["2", "4", "6"]
    ids = Counter(r["request_id"] for r in read_csv(requests))
    assert max(ids.values()) == 1 and kept <= set(ids) and "cut-short-row" not in ids
    assert summary_rungs(run_dir) == [(arm, c) for arm in ("off", "on") for c in (2, 4, 6)]
    assert not [p.name for p in run_dir.glob(".specload*")]
