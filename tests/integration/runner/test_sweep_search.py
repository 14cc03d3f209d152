"""`ladder: auto`: the crossover search against the simulator's own truth.

Both arms are `command:` arms serving the simulated seed-glm model (spec on and off),
each start counted in a file. With 256-token prompts and replies of 32 to 96 tokens
`sim-curve` (virtual time, the same reply lengths) puts the crossover near C = 23
(`_truth`, computed here); replies of one length would march in lockstep above the
spec-on server's 16 requests, and a short window's tok/s would depend on where their
waves fall in it (one CI run read C* 25.7 for 23.1). The
search runs a coarse pass from C = 1 to 64 and refines inside C*'s interval: it must
find C* within ±10% of the truth with fewer rungs per arm than the fixed 8-rung ladder,
its interval must hold the truth, each server must start once per pass (restart at most
twice; once more here, as the sweep is interrupted in its first round and resumed), and
the console and the report must say what it added and why.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from specload.runner.processes import free_port
from specload.sim.curve import predict
from specload.sim.profile import load_profile
from specload.traffic.shapes import LengthSpec
from tests.support.sweeps import (
    BackgroundSweep,
    read_manifest,
    run_sweep,
    wait_for,
    write_scenario,
)

pytestmark = [pytest.mark.slow, pytest.mark.long(245)]
PROFILE, PROMPT, REPLY = "seed-glm", 256, "uniform:32:96"


def _truth() -> float:
    """sim-curve's crossover of the profile at the test's request shape."""
    ladder = sorted({round(x) for x in np.geomspace(8, 48, 30)})
    profile = load_profile(PROFILE)
    on, off = (predict(profile, spec, None, ladder, prompt_tokens=PROMPT,
                       output_tokens=LengthSpec.parse(REPLY).sample)
               for spec in ("on", "off"))
    speedup = [a.output_tok_s / b.output_tok_s for a, b in zip(on, off, strict=True)]
    m = max(i for i, s in enumerate(speedup) if s > 1)
    t = (speedup[m] - 1) / (speedup[m] - speedup[m + 1])
    return math.exp(math.log(ladder[m]) + t * math.log(ladder[m + 1] / ladder[m]))


def _arm(name: str, spec: str, counter: Path) -> dict:
    port = free_port()
    start = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
             f"exec {sys.executable} -m specload.cli sim --profile {PROFILE} --spec {spec} "
             f"--port {port}")
    return {"name": name, "spec": spec,
            "command": {"start": start, "base_url": f"http://127.0.0.1:{port}"}}


def test_the_search_finds_the_simulators_crossover_in_fewer_rungs(tmp_path: Path) -> None:
    truth = _truth()
    scenario = write_scenario(tmp_path, {
        "name": "search", "ladder": "auto", "search": {"max_concurrency": 64},
        "warmup_s": 3, "measure_s": 8, "min_requests": 10, "drain_s": 5,
        "request": {"prompt_tokens": PROMPT, "output_tokens": REPLY, "ignore_eos": True},
        "arms": [_arm("spec-on", "on", tmp_path / "on-starts"),
                 _arm("spec-off", "off", tmp_path / "off-starts")]})
    # Ctrl-C once the first refinement round has begun; --resume goes on from there
    first = BackgroundSweep([str(scenario), "--out", "out"], tmp_path)
    wait_for(lambda: "search: round 1: C=" in first.text(), 300, "the first round")
    os.killpg(first.proc.pid, signal.SIGINT)
    assert first.wait(60) == 130, first.text()
    run = first.run_dir()
    assert len(read_manifest(run)["search"]["rounds"]) == 2
    done = run_sweep(tmp_path, "--resume", str(run), timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    search = read_manifest(run)["search"]
    rungs = sorted(x for r in search["rounds"] for x in r["levels"])
    assert search["rounds"][0]["levels"] == [1, 8, 64] and len(rungs) < 8
    assert search["stop"] and len(search["rounds"]) <= 3
    said = first.text() + done.stdout
    assert "search: coarse pass: geometric from C=1 to C=64" in first.text()
    assert "coarse pass" not in done.stdout  # the resumed run goes on, it does not start over
    for n, r in enumerate(search["rounds"][1:], 1):
        for level, why in zip(r["levels"], r["reasons"], strict=True):
            assert f"search: round {n}: C={level}: {why}" in said
    for arm in ("on", "off"):  # one start per pass, and one more for the interrupted one
        assert int((tmp_path / f"{arm}-starts").read_text()) <= len(search["rounds"]) + 1

    summary = json.loads((run / "summary.json").read_text())
    pair = summary["pairs"][0]
    assert pair["c_star"] == pytest.approx(truth, rel=0.10), (pair["c_star"], truth)
    interval = pair["c_star_interval"]
    assert interval["lo"] <= truth <= interval["hi"], (interval, truth)
    assert summary["search"]["rounds"] == search["rounds"]
    assert f"crossover search ({len(rungs)} rungs per arm): coarse C=1,8,64" in done.stdout
