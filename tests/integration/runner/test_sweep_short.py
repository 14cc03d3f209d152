"""A short sweep of two simulated arms end to end, failing arms, dry run, bad scenario."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specload.runner.processes import free_port
from tests.support.sweeps import ARM_FILES, read_csv, read_manifest, run_dir_of

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



def test_failing_arms_are_marked_and_the_others_still_run(
    tmp_path: Path, write_scenario, run_sweep
) -> None:
    port = free_port()
    dying = (f"exec timeout 3 {sys.executable} -m specload.cli sim --profile {PROFILE} "
             f"--spec off --port {port}")
    data = short_scenario(ladder=[1, 2], warmup_s=0.5, measure_s=2.5, arms=[
        {"name": "gone", "url": f"http://127.0.0.1:{free_port()}"},
        {"name": "dies", "command": {"start": dying, "base_url": f"http://127.0.0.1:{port}",
                                     "ready_timeout_s": 30}, "spec": "off"},
        {"name": "fine", "sim": {"profile": PROFILE, "spec": "on"}},
    ])
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 1, res.stdout + res.stderr
    m = read_manifest(tmp_path / run_dir_of(res.stdout))
    status = {a["name"]: (a["status"], a["reps"][0]["error"]) for a in m["arms"]}
    assert status["gone"][0] == "failed" and "/health: connection refused" in status["gone"][1]
    # it dies again once started again (`command.restart_on_exit`: once by default)
    assert status["dies"][0] == "failed" and status["dies"][1].startswith(
        "the server exited during the rung at C="), status["dies"]
    assert "[dies] the server exited during the rung at C=" in res.stdout
    assert "; starting it again to repeat that rung (0 restart(s) left)" in res.stdout
    assert status["fine"] == ("done", None)
    assert m["status"] == "failed"
    assert "failed arm(s): gone, dies" in res.stdout


def test_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, write_scenario, run_sweep
) -> None:
    res = run_sweep(str(write_scenario(short_scenario(verify=True))), "--dry-run", "--out",
                    "out")
    assert res.returncode == 0, res.stderr
    assert "arm spec-on: sim" in res.stdout and "--ladder 1,3" in res.stdout
    assert "spec=on k=3)" in res.stdout and "spec=off)" in res.stdout
    # two rungs of 3.5 s on three arms: the verification arm's too
    assert "planned load time 21s" in res.stdout
    assert not (tmp_path / "out").exists()


def test_bad_scenario_and_unknown_arm_are_one_line_errors(write_scenario, run_sweep) -> None:
    res = run_sweep(str(write_scenario(short_scenario(ladder=[3, 1]))))
    assert res.returncode == 2
    assert "ladder: rung 1: the ladder must increase" in res.stderr
    assert "Traceback" not in res.stderr
    res = run_sweep(str(write_scenario(short_scenario())), "--arms", "spec-on,nope")
    assert res.returncode == 2
    assert "--arms: unknown arm(s) nope" in res.stderr


@pytest.mark.slow
def test_processes_and_repeats(tmp_path: Path, write_scenario, run_sweep) -> None:
    """`--processes 2` spreads users over two load processes; repeats get their folders."""
    data = short_scenario(ladder=[2, 4], warmup_s=0.5, measure_s=1.5, arms=[
        {"name": "spec-on", "sim": {"profile": PROFILE, "spec": "on"}}])
    res = run_sweep(str(write_scenario(data)), "--out", "out", "--processes", "2",
                    "--repeats", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[spec-on rep 2] rung 2/2 C=4 | " in res.stdout
    run_dir = tmp_path / run_dir_of(res.stdout)
    manifest = read_manifest(run_dir)
    assert manifest["scenario"]["processes"] == 2
    reps = manifest["arms"][0]["reps"]
    assert [(r["dir"], r["status"]) for r in reps] == [
        ("spec-on/rep-1", "done"), ("spec-on/rep-2", "done")]
    for rep in reps:
        rep_dir = run_dir / rep["dir"]
        assert {p.name for p in rep_dir.iterdir()} >= ARM_FILES
        rows = read_csv(rep_dir / "locust_requests.csv")
        assert len({r["client_id"] for r in rows}) == 2
        assert [s["users"] for s in read_csv(rep_dir / "locust_rungs.csv")] == ["2", "4"]


def test_locust_failure_marks_the_arm_failed(tmp_path: Path, write_scenario, run_sweep):
    # a master whose workers never come gives up and exits non-zero
    data = short_scenario(
        ladder=[1], distributed={"workers": 1, "master_bind_port": free_port(),
                                 "workers_wait_s": 1},
        arms=[{"name": "lonely", "sim": {"profile": PROFILE, "spec": "on"}}])
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 1, res.stdout + res.stderr
    m = read_manifest(tmp_path / run_dir_of(res.stdout))
    rep = m["arms"][0]["reps"][0]
    assert rep["status"] == "failed" and "locust exited with status 1" in rep["error"]
    assert "failed arm(s): lonely" in res.stdout


@pytest.mark.slow
def test_interleaved_arms_take_turns_rung_by_rung(tmp_path: Path, write_scenario,
                                                  run_sweep) -> None:
    """`interleave: true`: both servers stay up and every rung runs on spec-on, then on
    spec-off, before the next; each arm's files come out whole, as a sequential sweep's.
    Each rung's run sends its own prompts: a rung that sent the first rung's again would
    find them in the server's prefix cache (it did, before `prompts.run_seed`)."""
    data = short_scenario(warmup_s=0.5, measure_s=1.5, interleave=True, verify=False,
                          request={"max_tokens": 32, "ignore_eos": True,
                                   "prompt_tokens": 128})
    res = run_sweep(str(write_scenario(data)), "--out", "out")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("ready; its rungs interleave with the other arms'") == 2
    run_dir = tmp_path / run_dir_of(res.stdout)
    starts = sorted((float(r["warmup_start"]), arm, r["users"], r["rung"])
                    for arm in ("spec-on", "spec-off")
                    for r in read_csv(run_dir / arm / "locust_rungs.csv"))
    assert [s[1:] for s in starts] == [("spec-on", "1", "0"), ("spec-off", "1", "0"),
                                       ("spec-on", "3", "1"), ("spec-off", "3", "1")]
    for arm in ("spec-on", "spec-off"):
        rows = read_csv(run_dir / arm / "locust_requests.csv")
        with (run_dir / arm / "server_trace.jsonl").open() as fh:
            trace = [json.loads(line) for line in fh]
        served = {t["request_id"] for t in trace}
        assert {r["request_id"] for r in rows if r["error_kind"] == ""} == served
        cached = sum(t["cached_tokens"] for t in trace)
        assert cached < 0.05 * sum(t["prompt_tokens"] for t in trace), (arm, cached)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sorted((r["arm"], r["concurrency"]) for r in summary["summary"]) == [
        ("spec-off", 1), ("spec-off", 3), ("spec-on", 1), ("spec-on", 3)]
