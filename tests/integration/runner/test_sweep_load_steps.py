"""Load steps end to end through `specload sweep`: how fast each choice reacts to a jump.

Two simulated arms of one profile step 4 -> 16 -> 4 users: a batch-size schedule (k = 3
at every batch: stateless) and SGLang's adaptive speculation (`spec: adaptive` on the
sglang flavour) with a long warmup before its EMA tiers decide. Going to 16 users, the
batch reaches a tier the EMA controller has never seen: it runs that tier's middle step
count (1) until its warmup is over, while the schedule drafts 3 from the first batch.
The report must show it: the schedule settled within its step, the EMA controller
seconds later and many more tokens short.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

from specload.cli import main
from specload.sim.profile import PROFILES_DIR
from tests.support.sweeps import assert_no_warning_but_the_machines, run_dir_of

pytestmark = pytest.mark.long(100)

STEP_S = 12


@pytest.mark.slow
@pytest.mark.flaky(reruns=2)  # real-time servers on a shared machine
def test_a_learning_controller_settles_later_than_a_schedule(
        tmp_path: Path, write_scenario, run_sweep, capsys: pytest.CaptureFixture[str]) -> None:
    profile = yaml.safe_load((PROFILES_DIR / "h100-llama8b-eagle3.yaml").read_text())
    profile["speculative"]["ema_tiers"] = {"warmup_batches": 200}  # SGLang's is 10
    slow = tmp_path / "slow-ema.yaml"
    slow.write_text(yaml.safe_dump(profile))
    data = {
        "name": "load-steps", "workload": {"kind": "steps", "steps": [4, 16, 4],
                                           "step_s": STEP_S},
        "request": {"prompt_tokens": 256, "output_tokens": "uniform:32:96",
                    "ignore_eos": True},
        "arms": [
            {"name": "schedule", "sim": {"profile": "h100-llama8b-eagle3", "flavor": "sglang",
                                         "spec": "schedule",
                                         "adaptive_schedule": [[1, 100000, 3]]}},
            {"name": "sglang-ema", "sim": {"profile": str(slow), "flavor": "sglang",
                                           "spec": "adaptive"}}],
    }
    res = run_sweep(str(write_scenario(data)), "--out", "out", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[schedule] step 3/3 to 4 users" in res.stdout
    run_dir = tmp_path / run_dir_of(res.stdout)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["workload"] == "steps"
    assert_no_warning_but_the_machines(summary["warnings"], res.stdout)
    steps = {(s["arm"], s["step"]): s for s in summary["load_steps"]}
    assert [(s["from_users"], s["users"]) for s in summary["load_steps"][::2]] == [
        (0, 4), (4, 16), (16, 4)]
    for s in steps.values():  # every step settles within its steady window's start
        assert s["settle_s"] is not None and s["settle_s"] < STEP_S / 2, s
    fixed, learning = steps["schedule", 2], steps["sglang-ema", 2]
    assert learning["settle_s"] >= fixed["settle_s"] + 0.5, (fixed, learning)
    assert learning["lost_tokens"] > 2 * max(fixed["lost_tokens"], 0) + 500, (fixed, learning)
    # the two servers reach the same steady level: only the way there differs
    assert math.isclose(learning["steady_tok_s"], fixed["steady_tok_s"], rel_tol=0.05)
    assert "step 2 (4->16 users): schedule" in res.stdout and "first: schedule" in res.stdout
    page = (run_dir / "report.html").read_text()
    assert "Settling after each step" in page and "Load steps: tok/s after each jump" in page
    # `compare` matches rungs by concurrency, which steps repeat: it says so
    again = tmp_path / "again"
    shutil.copytree(run_dir, again)
    assert main(["compare", str(run_dir), str(again)]) == 2
    assert "a load-step run, whose steps repeat user counts" in capsys.readouterr().err
