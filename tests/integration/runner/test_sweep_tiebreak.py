"""Tie-break repeats: repeats that disagree on the verdict get more, until they agree.

The spec-off arm is a simulated H100 without speculation. The spec-on arm is a
`command:` arm whose start command serves the same H100 with EAGLE-3 drafts at its first
and third start and the much slower seed-glm model at its second (a counter file counts
the starts): with 32-token replies at C = 1 and 4, the first pays at both rungs
("always", 330 and 1245 tok/s against 158 and 615 in `sim-curve`), the second at
neither ("never", 56 and 94). Repeat 1 and repeat 2 disagree, repeat 3 settles it, and
no fourth runs although the budget allows one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from specload.runner.processes import free_port
from tests.support.sweeps import read_manifest, run_dir_of, run_sweep, write_scenario

pytestmark = pytest.mark.slow
FAST, SLOW = "h100-llama8b-eagle3", "seed-glm"


def _scenario(folder: Path, spec_on: dict) -> Path:
    return write_scenario(folder, {
        "name": "tiebreak", "ladder": [1, 4], "warmup_s": 1, "measure_s": 3,
        "min_requests": 3, "repeats": 2, "tiebreak_repeats": 2,
        "request": {"max_tokens": 32, "ignore_eos": True},
        "arms": [spec_on, {"name": "spec-off", "sim": {"profile": FAST, "spec": "off"}}]})


def _flipping_arm(counter: Path) -> dict:
    """The fast server, then the slow one, then the fast one ... at each start."""
    port = free_port()
    start = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
             f"if [ $((n % 2)) -eq 0 ]; then p={FAST}; else p={SLOW}; fi; "
             f"exec {sys.executable} -m specload.cli sim --profile $p --spec on "
             f"--port {port}")
    return {"name": "spec-on", "spec": "on",
            "command": {"start": start, "base_url": f"http://127.0.0.1:{port}"}}


def test_repeats_that_disagree_get_one_more_and_the_report_says_which_verdict_held(
        tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    done = run_sweep(tmp_path, str(_scenario(tmp_path, _flipping_arm(counter))),
                     "--out", "out", timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert counter.read_text().strip() == "3"
    assert ("tie-break: spec-on vs spec-off: the repeats disagree: repeat 1 says always; "
            "repeat 2 says never; running repeat 3 of every arm (1 of at most 2 more)"
            ) in done.stdout
    assert "tie-break: the repeats agree after 1 more" in done.stdout
    assert "2 of 3 repeats: says always" in done.stdout
    run = tmp_path / run_dir_of(done.stdout)
    manifest = read_manifest(run)
    assert [[r["dir"] for r in a["reps"]] for a in manifest["arms"]] == [
        [f"{name}/rep-{n}" for n in (1, 2, 3)] for name in ("spec-on", "spec-off")]
    assert manifest["status"] == "done" and manifest["scenario"]["repeats"] == 2
    pair = json.loads((run / "summary.json").read_text())["pairs"][0]
    assert pair["repeats_agree"] == {"verdict": "always", "below": None, "above": None,
                                     "repeats": 2, "of": 3, "settled": True}
    assert [c["verdict"] for c in pair["c_star_per_rep"]] == ["always", "never", "always"]

