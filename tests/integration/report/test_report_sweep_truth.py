"""A short real sweep (two simulated arms) reported and checked against the simulator's trace.

The simulator writes one trace line per request with every chunk's emit time and token
count; the system output tok/s of each rung, from tokens emitted inside its measure
window, is the ground truth the report's client-side figure (tokens by arrival time)
must match within 3%. C* computed from the trace must fall between the same two rungs
as the report's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.report.crossover import find_crossover

LADDER = [1, 8, 40]
SCENARIO = f"""
name: truth
ladder: {LADDER}
warmup_s: 3
measure_s: 10
repeats: 1
request:
  max_tokens: 64
  ignore_eos: true
  temperature: 0
  seed: 0
arms:
  - name: spec-on
    sim: {{profile: seed-glm, spec: on, trace: true}}
  - name: spec-off
    sim: {{profile: seed-glm, spec: off, trace: true}}
"""


def _truth_tok_s(arm_dir: Path) -> dict[int, float]:
    """Tokens the simulator emitted inside each measure window, per second."""
    steps = pd.read_csv(arm_dir / "locust_steps.csv")
    emits, tokens = [], []
    with open(arm_dir / "sim_trace.jsonl", encoding="utf-8") as fh:
        for line in fh:
            for t, n in json.loads(line)["chunks"]:
                emits.append(t)
                tokens.append(n)
    emit, tok = np.asarray(emits), np.asarray(tokens, dtype=float)
    return {int(s.users): float(tok[(emit >= s.measure_start) & (emit < s.measure_end)].sum())
            / (s.measure_end - s.measure_start) for s in steps.itertuples()}


@pytest.mark.slow
def test_sweep_report_matches_simulator_ground_truth(tmp_path: Path) -> None:
    scenario = tmp_path / "truth.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    specload = Path(sys.executable).with_name("specload")
    done = subprocess.run([str(specload), "sweep", str(scenario), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = (tmp_path / "truth").iterdir()
    assert "C*" in done.stdout
    summary = pd.read_csv(run / "summary.csv").set_index(["arm", "concurrency"])
    truth = {arm: _truth_tok_s(run / arm) for arm in ("spec-on", "spec-off")}
    for arm, per_c in truth.items():
        for c, expected in per_c.items():
            got = summary.loc[(arm, c), "output_tok_s"]
            assert expected > 0
            assert got == pytest.approx(expected, rel=0.03), (arm, c, got, expected)
    speedup = [truth["spec-on"][c] / truth["spec-off"][c] for c in LADDER]
    expected_cross = find_crossover(LADDER, speedup)
    data = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    crossover = data["pairs"][0]["crossover"]
    assert crossover["verdict"] == expected_cross.verdict
    assert (crossover["below"], crossover["above"]) == (expected_cross.below,
                                                        expected_cross.above)
