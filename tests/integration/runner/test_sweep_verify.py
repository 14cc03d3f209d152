"""The verification arm and the multi-k study, end to end through `specload sweep`.

A multi-k study on h100-llama8b-eagle3 (k = 2 and 5 against spec-off, as k = 0) must
pick the simulator's own best k per rung (virtual time, the same workload: see
tests/support/best_k.py), write the schedule in the three engines' syntax, then run it
as the verification arm, which resuming does not rerun, and name each rung's winner
among the four arms. A url pair gets its
verification arm by hand: the sweep prints the files and the --arms re-run. Ctrl-C
during the verification arm keeps its finished rungs; --resume runs the rest.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from specload.traffic.shapes import LengthSpec
from tests.support.best_k import simulated_best_k
from tests.support.sweeps import (
    assert_no_warning_but_the_machines,
    read_manifest,
    run_dir_of,
    wait_for,
)

pytestmark = pytest.mark.long(185)  # the slow tier starts it first

PROFILE = "h100-llama8b-eagle3"
# Replies of one length march in lockstep: a spec-off server (nothing drawn) at C = 64
# then serves waves, and where a window falls among them moved its tok/s by 15%
PROMPT, REPLY = 100, "uniform:16:48"
LADDER = [4, 64]
# k = 5 leads k = 2 by 13% at C = 4, spec-off leads both by 24% at C = 64. A k between
# two others leads them by 3-4% at best, within reach of two 8 s windows' noise (the
# report's pick_k calls 2% a tie): the unit tests hold that pick in virtual time
KS = [2, 5]
FILES = ("vllm-speculative-config.json", "sglang-adaptive.json", "trtllm.yaml")
# Warnings that the load generator, not the server, set a rung's figures: on a machine
# busy with other work a 5% margin between two k is then noise (the report says so).
LOAD_PROBLEMS = ("client_saturated", "client_starved", "concurrency_shortfall")


@pytest.mark.slow
@pytest.mark.timing
# the k = 0 tax at C = 64 is a few percent of the servers' step time: with the real tier's
# untimed checks beside the slow tier, one run measured it at 0.981, within its 2% band
@pytest.mark.flaky(reruns=1)
def test_multi_k_study_recovers_the_simulators_best_k_and_verifies_it(
    tmp_path: Path, write_scenario, run_sweep
) -> None:
    data = {
        # 8 s windows: the simulator draws each draft's acceptance, and over 3 s (100
        # requests at C = 4) k = 5's 5% lead once measured 2%, a tie that picks k = 3
        "name": "multi-k-short", "ladder": LADDER, "warmup_s": 1, "measure_s": 8,
        "min_requests": 10, "verify": True,
        "request": {"prompt_tokens": PROMPT, "output_tokens": REPLY, "ignore_eos": True},
        "arms": [{"name": "spec-on", "k": KS, "sim": {"profile": PROFILE, "spec": "on"}},
                 {"name": "spec-off", "sim": {"profile": PROFILE, "spec": "off"}}],
    }
    path = str(write_scenario(data))
    res = run_sweep(path, "--out", "out", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / run_dir_of(res.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    study = summary["multi_k"]
    picks = [row["best_k"] for row in study["rungs"]]
    expected = simulated_best_k(PROFILE, LADDER, KS, prompt_tokens=PROMPT,
                                output_tokens=LengthSpec.parse(REPLY).sample)
    assert expected == [5, 0]
    starved = [w["message"] for w in summary["warnings"] if w["kind"] in LOAD_PROBLEMS]
    if picks != expected and starved:
        pytest.skip(f"picks {picks}, but the report flags the load generator: {starved[0]}")
    assert picks == expected, res.stdout
    assert [k for _, _, k in study["schedule"]] == [5, 0]
    for name in FILES:
        assert (run_dir / "recommended" / "multi-k" / name).stat().st_size > 0
    manifest = read_manifest(run_dir)
    verify = manifest["arms"][-1]
    assert (verify["name"], verify["role"], verify["status"]) == ("verify", "verify", "done")
    assert verify["schedule"] == study["schedule"]
    (env,) = summary["verify"]
    assert [r["concurrency"] for r in env["rungs"]] == LADDER
    # at C = 4 the schedule drafts 5 tokens, the best arm's: the same server, step for step
    assert env["rungs"][0]["efficiency"] > 0.9, env
    assert "verify: envelope efficiency" in res.stdout
    # at C = 64 the schedule is off, inside a server that keeps its drafter in sync:
    # the profile's k = 0 overhead is beyond the noise, and the README says what to do
    tax = env["k0_tax"]
    assert tax["spec_off"] == "spec-off" and tax["beyond_noise_at"] == [64], tax
    readme = (run_dir / "recommended" / "multi-k" / "README.md").read_text()
    assert "k = 0 costs up to" in readme and "routed by load" in readme, readme
    # four arms side by side: k = 5 (or the schedule drafting 5) leads at C = 4, and
    # spec-off (or the schedule, off there) at C = 64
    side = summary["arms_side_by_side"]
    assert side["arms"] == ["spec-on-k2", "spec-on-k5", "spec-off", "verify"]
    winners = {r["concurrency"]: r["winner"] for r in side["rungs"]}
    assert "spec-on-k2" not in winners[4] and "spec-off" not in winners[4], winners
    assert "spec-on-k2" not in winners[64] and "spec-on-k5" not in winners[64], winners
    assert "4 arms side by side" in res.stdout and "best per load:" in res.stdout

    again = run_sweep("--resume", str(run_dir), timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[verify] starting" not in again.stdout


@pytest.mark.slow
def test_a_url_pair_gets_its_verification_arm_by_hand(
    tmp_path: Path, write_scenario, run_sweep, sim_server
) -> None:
    # spec-on speculates only at batch 1 (k = 0, with the drafter's sync cost, above):
    # it leads at C = 1 and falls behind at C = 3, so the report recommends a threshold
    on = sim_server(profile=PROFILE, spec="schedule",
                    extra_args=("--adaptive-schedule", "1-1:3,2-:0"))
    off = sim_server(profile=PROFILE, spec="off")
    data = {
        "name": "url-verify", "ladder": [1, 3], "warmup_s": 1, "measure_s": 2.5,
        "verify": True, "request": {"max_tokens": 24, "ignore_eos": True},
        # a schedule's server, said to be one: a fixed-k arm that stops drafting is warned
        # about (report/spec_checks.py)
        "arms": [{"name": "spec-on", "url": on.url, "spec": "schedule", "role": "spec_on",
                  "k": 3},
                 {"name": "spec-off", "url": off.url, "spec": "off"}],
    }
    res = run_sweep(str(write_scenario(data)), "--out", "out", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = tmp_path / run_dir_of(res.stdout)
    assert f"specload sweep --resume {run_dir_of(res.stdout)} --arms verify" in res.stdout
    assert_no_warning_but_the_machines(
        json.loads((run_dir / "summary.json").read_text())["warnings"], res.stdout)
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "done"
    verify = manifest["arms"][-1]
    assert (verify["name"], verify["status"], verify["by_hand"]) == ("verify", "pending", True)
    # C* lies between C = 1 and 3: speculate with k = 3 up to there, not above
    assert [k for _, _, k in verify["schedule"]] == [3, 0], verify["schedule"]
    for name in FILES:
        assert (run_dir / "recommended" / name).is_file()

    plain = run_sweep("--resume", str(run_dir), timeout=60)  # not named: still waits
    assert "[verify] starting" not in plain.stdout, plain.stdout
    named = run_sweep("--resume", str(run_dir), "--arms", "verify", timeout=90)
    assert named.returncode == 0, named.stdout + named.stderr
    assert read_manifest(run_dir)["arms"][-1]["status"] == "done"
    (env,) = json.loads((run_dir / "summary.json").read_text())["verify"]
    assert [r["concurrency"] for r in env["rungs"]] == [1, 3]


@pytest.mark.slow
def test_ctrl_c_in_the_verify_arm_keeps_its_rungs_and_resume_finishes_it(
    write_scenario, run_sweep, background_sweep
) -> None:
    # spec-on speculates at batch 1 only: a threshold to verify, from short sim arms
    data = {
        "name": "verify-resume", "ladder": [1, 3, 6], "warmup_s": 1, "measure_s": 3,
        "verify": True, "request": {"max_tokens": 24, "ignore_eos": True},
        "arms": [{"name": "spec-on", "role": "spec_on", "sim": {
                     "profile": PROFILE, "spec": "schedule",
                     "adaptive_schedule": [[1, 1, 3], [2, 100000, 0]]}},
                 {"name": "spec-off", "sim": {"profile": PROFILE, "spec": "off"}}],
    }
    sweep = background_sweep(str(write_scenario(data)), "--out", "out")
    wait_for(lambda: "[verify] rung 1/3" in sweep.text(), 120, "the verify arm's first rung")
    sweep.proc.send_signal(signal.SIGINT)
    assert sweep.wait(60) == 130, sweep.text()
    run_dir = sweep.run_dir()
    arms = {a["name"]: a["status"] for a in read_manifest(run_dir)["arms"]}
    assert arms == {"spec-on": "done", "spec-off": "done", "verify": "interrupted"}

    res = run_sweep("--resume", str(run_dir), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "running C=3,6 (resuming 2 missing rungs)" in res.stdout, res.stdout
    assert "[spec-on]" not in res.stdout and "[spec-off]" not in res.stdout
    assert read_manifest(run_dir)["status"] == "done"
    (env,) = json.loads((run_dir / "summary.json").read_text())["verify"]
    assert [r["concurrency"] for r in env["rungs"]] == [1, 3, 6]
