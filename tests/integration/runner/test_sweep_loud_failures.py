"""Failures are loud: a sweep whose requests fail exits non-zero and says why, and a busy
server whose health routes misbehave is never misjudged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.sweeps import read_manifest, run_dir_of

PROFILE = "h100-llama8b-eagle3"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.slow
def test_all_400_and_a_wrong_model_fail_their_arms_with_the_reason(
        tmp_path: Path, write_scenario, run_sweep, sim_server) -> None:
    other = sim_server(profile=PROFILE, trace=False, extra_args=["--model-name", "other"])
    scenario = write_scenario({
        "name": "loud", "ladder": [1, 2], "warmup_s": 0.5, "measure_s": 1.5,
        "min_requests": 0, "request": {"max_tokens": 16, "model": MODEL},
        "arms": [{"name": "unknown-model", "url": other.url, "spec": "on"},
                 {"name": "all-400", "sim": {"profile": PROFILE, "spec": "off",
                                             "faults": ["error400:1"]}}]})
    res = run_sweep(str(scenario), "--out", "out")
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert (f"[unknown-model] warning: the server does not list model '{MODEL}' "
            "(it lists other)") in out
    assert "failures 0 of" not in out
    assert f"HTTP 404: The model `{MODEL}` does not exist." in out  # the progress lines
    run_dir = tmp_path / run_dir_of(out)
    reps = {a["name"]: a["reps"][0] for a in read_manifest(run_dir)["arms"]}
    assert reps["unknown-model"]["status"] == "failed"
    assert f"HTTP 404: The model `{MODEL}` does not exist." in reps["unknown-model"]["error"]
    assert "(more than 50% failed)" in reps["unknown-model"]["error"]
    assert "HTTP 400: simulated bad request (fault)" in reps["all-400"]["error"]
    warnings = json.loads((run_dir / "summary.json").read_text())["warnings"]
    kinds = {w["kind"] for w in warnings}
    assert "failures" in kinds and "arm_note" in kinds
    # the failures explain these rungs: no advice about the client or the windows
    assert not kinds & {"client_saturated", "client_starved", "too_few_requests",
                        "concurrency_shortfall"}, kinds


@pytest.mark.slow
def test_a_busy_server_without_health_whose_models_route_blocks_is_not_misjudged(
        tmp_path: Path, write_scenario, run_sweep, sim_server) -> None:
    # llama-cpp-python: no /health, /v1/models waits behind the running generation
    # (10 s requests here), interrupt_requests off as one benchmarks it
    sim = sim_server(flavor="llama-cpp-python", profile="bench-20ms", spec="off",
                     trace=False, extra_args=["--no-interrupt"])
    scenario = write_scenario({
        "name": "busy", "ladder": [1, 2], "warmup_s": 0, "measure_s": 3, "min_requests": 0,
        "request": {"max_tokens": 500, "ignore_eos": True},
        "arms": [{"name": "slow", "url": sim.url, "spec": "off"}]})
    res = run_sweep(str(scenario), "--out", "out", timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    rep = read_manifest(tmp_path / run_dir_of(res.stdout))["arms"][0]["reps"][0]
    assert rep["status"] == "done", rep
