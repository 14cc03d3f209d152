"""A short sweep of two simulated arms end to end, failing arms, dry run, bad scenario."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

PROFILE = "h100-llama8b-eagle3"


def short_scenario(**changes) -> dict:
    data = {
        "name": "short",
        "ladder": [1, 3],
        "warmup_s": 1,
        "measure_s": 2.5,
        "request": {"max_tokens": 32, "ignore_eos": True},
        "arms": [
            {"name": "spec-on", "sim": {"profile": PROFILE, "spec": "on", "k": 3}},
            {"name": "spec-off", "sim": {"profile": PROFILE, "spec": "off"}},
        ],
    }
    data.update(changes)
    return data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_short_sweep_writes_every_file_and_the_manifest(
    tmp_path: Path, write_scenario, run_sweep, tools
) -> None:
    res = run_sweep(str(write_scenario(short_scenario())), "--out", "out")
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / tools.run_dir_of(res.stdout)
    assert run_dir.parent.name == "short" and run_dir.parent.parent.name == "out"
    m = tools.read_manifest(run_dir)
    assert m["status"] == "done" and m["scenario_name"] == "short"
    assert [(a["name"], a["role"], a["status"]) for a in m["arms"]] == [
        ("spec-on", "spec_on", "done"), ("spec-off", "spec_off", "done")]
    assert m["arms"][0]["k"] == 3 and m["arms"][0]["reps"][0]["dir"] == "spec-on"
    progress = [ln for ln in res.stdout.splitlines() if " done | elapsed " in ln]
    assert len(progress) == 4 and "tok/s (server)" in progress[0]
    for arm in ("spec-on", "spec-off"):
        arm_dir = run_dir / arm
        assert {p.name for p in arm_dir.iterdir()} >= tools.ARM_FILES
        steps = tools.read_csv(arm_dir / "locust_steps.csv")
        assert [(s["rung"], s["users"]) for s in steps] == [("0", "1"), ("1", "3")]
        for s in steps:
            ws, ms, me = (float(s[k]) for k in ("warmup_start", "measure_start", "measure_end"))
            assert ws <= ms < me and abs(me - ms - 2.5) < 1.01
        assert float(steps[1]["warmup_start"]) >= float(steps[0]["measure_end"])
        rows = tools.read_csv(arm_dir / "locust_requests.csv")
        assert len(rows) >= 4
        assert all(float(steps[0]["warmup_start"]) - 1 <= float(r["start"]) for r in rows)
        assert tools.counter_rate(arm_dir, steps[1], "vllm:generation_tokens_total") > 0


def test_failing_arms_are_marked_and_the_others_still_run(
    tmp_path: Path, write_scenario, run_sweep, tools
) -> None:
    port = free_port()
    dying = (f"exec timeout 4 {sys.executable} -m specload.cli sim --profile {PROFILE} "
             f"--spec off --port {port}")
    data = short_scenario(ladder=[1, 2], warmup_s=1, measure_s=3, arms=[
        {"name": "gone", "url": f"http://127.0.0.1:{free_port()}"},
        {"name": "dies", "command": {"start": dying, "base_url": f"http://127.0.0.1:{port}",
                                     "ready_timeout_s": 30}, "spec": "off"},
        {"name": "fine", "sim": {"profile": PROFILE, "spec": "on"}},
    ])
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 1, res.stdout + res.stderr
    m = tools.read_manifest(tmp_path / tools.run_dir_of(res.stdout))
    status = {a["name"]: (a["status"], a["reps"][0]["error"]) for a in m["arms"]}
    assert status["gone"][0] == "failed" and "is not reachable" in status["gone"][1]
    assert status["dies"][0] == "failed" and "server failed during the run" in status["dies"][1]
    assert status["fine"] == ("done", None)
    assert m["status"] == "failed"
    assert "failed arm(s): gone, dies" in res.stdout


def test_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, write_scenario, run_sweep
) -> None:
    res = run_sweep(str(write_scenario(short_scenario())), "--dry-run", "--out", "out")
    assert res.returncode == 0, res.stderr
    assert "arm spec-on: sim" in res.stdout and "--ladder 1,3" in res.stdout
    assert not (tmp_path / "out").exists()


def test_bad_scenario_and_unknown_arm_are_one_line_errors(write_scenario, run_sweep) -> None:
    res = run_sweep(str(write_scenario(short_scenario(ladder=[3, 1]))))
    assert res.returncode == 2
    assert "ladder: rung 1: the ladder must increase" in res.stderr
    assert "Traceback" not in res.stderr
    res = run_sweep(str(write_scenario(short_scenario())), "--arms", "spec-on,nope")
    assert res.returncode == 2
    assert "--arms: unknown arm(s) nope" in res.stderr


def test_processes_flag_spreads_users_over_local_processes(
    tmp_path: Path, write_scenario, run_sweep, tools
) -> None:
    data = short_scenario(ladder=[2, 4], arms=[
        {"name": "spec-on", "sim": {"profile": PROFILE, "spec": "on"}}])
    res = run_sweep(str(write_scenario(data)), "--out", "out", "--processes", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / tools.run_dir_of(res.stdout)
    arm_dir = run_dir / "spec-on"
    assert {p.name for p in arm_dir.iterdir()} >= tools.ARM_FILES
    assert tools.read_manifest(run_dir)["scenario"]["processes"] == 2
    rows = tools.read_csv(arm_dir / "locust_requests.csv")
    assert len({r["client_id"] for r in rows}) == 2
    assert [s["users"] for s in tools.read_csv(arm_dir / "locust_steps.csv")] == ["2", "4"]


def test_locust_failure_marks_the_arm_failed(tmp_path: Path, write_scenario, run_sweep, tools):
    # a master whose workers never come gives up and exits non-zero
    data = short_scenario(
        ladder=[1], distributed={"workers": 1, "master_bind_port": free_port(),
                                 "workers_wait_s": 1},
        arms=[{"name": "lonely", "sim": {"profile": PROFILE, "spec": "on"}}])
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 1, res.stdout + res.stderr
    m = tools.read_manifest(tmp_path / tools.run_dir_of(res.stdout))
    rep = m["arms"][0]["reps"][0]
    assert rep["status"] == "failed" and "locust exited with status 1" in rep["error"]
    assert "failed arm(s): lonely" in res.stdout


def test_repeats_get_their_own_folders(tmp_path: Path, write_scenario, run_sweep, tools):
    data = short_scenario(ladder=[2], arms=[
        {"name": "spec-off", "sim": {"profile": PROFILE, "spec": "off"}}])
    res = run_sweep(str(write_scenario(data)), "--out", "out", "--repeats", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[spec-off rep 2] rung 1/1 C=2 done" in res.stdout
    run_dir = tmp_path / tools.run_dir_of(res.stdout)
    reps = tools.read_manifest(run_dir)["arms"][0]["reps"]
    assert [(r["dir"], r["status"]) for r in reps] == [
        ("spec-off/rep-1", "done"), ("spec-off/rep-2", "done")]
    for rep in reps:
        assert {p.name for p in (run_dir / rep["dir"]).iterdir()} >= tools.ARM_FILES
