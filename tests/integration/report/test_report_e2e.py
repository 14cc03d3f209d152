"""The shared end-to-end sweep's report: against the simulator's trace, and in a browser.

The simulator writes one trace line per request with every chunk's emit time and token
count; the system output tok/s of each rung, from tokens emitted inside its measure
window, is the ground truth the report's client-side figure (tokens by arrival time)
must match within 3%, and C* computed from the trace must fall between the same two
rungs as the report's. Then report.html is opened in headless Chromium (Debian's
`chromium`; skipped when absent, unless CI=true): every figure renders, no JavaScript
errors.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.report.crossover import find_crossover
from tests.support.browser import FLAGS, chromium
from tests.support.e2e import ARMS, LADDER, SweepResult

FIGURES = 10  # the simulator exposes running requests: the batch-size figure too


def _truth_tok_s(arm_dir: Path) -> dict[int, float]:
    """Tokens the simulator emitted inside each measure window, per second."""
    steps = pd.read_csv(arm_dir / "locust_rungs.csv")
    emits, tokens = [], []
    with open(arm_dir / "server_trace.jsonl", encoding="utf-8") as fh:
        for line in fh:
            for t, n in json.loads(line)["chunks"]:
                emits.append(t)
                tokens.append(n)
    emit, tok = np.asarray(emits), np.asarray(tokens, dtype=float)
    return {int(s.users): float(tok[(emit >= s.measure_start) & (emit < s.measure_end)].sum())
            / (s.measure_end - s.measure_start) for s in steps.itertuples()}


def test_report_matches_the_simulators_ground_truth(e2e_sweep: SweepResult) -> None:
    run = e2e_sweep.run_dir
    assert "C*" in e2e_sweep.stdout
    summary = pd.read_csv(run / "summary.csv").set_index(["arm", "concurrency"])
    truth = {arm: _truth_tok_s(run / arm) for arm in ARMS}
    for arm, per_c in truth.items():
        for c, expected in per_c.items():
            got = summary.loc[(arm, c), "output_tok_s"]
            assert expected > 0
            assert got == pytest.approx(expected, rel=0.03), (arm, c, got, expected)
    speedup = [truth["spec-on"][c] / truth["spec-off"][c] for c in LADDER]
    expected_cross = find_crossover(LADDER, speedup)
    crossover = json.loads((run / "summary.json").read_text())["pairs"][0]["crossover"]
    assert crossover["verdict"] == expected_cross.verdict
    assert (crossover["below"], crossover["above"]) == (expected_cross.below,
                                                        expected_cross.above)


def test_report_renders_every_figure_without_js_errors(e2e_sweep: SweepResult,
                                                       tmp_path: Path) -> None:
    browser = chromium()
    page = e2e_sweep.run_dir / "report.html"
    assert f"report: {page.relative_to(page.parents[3])}" in e2e_sweep.stdout
    shown = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    dom, log = shown.stdout, shown.stderr
    assert shown.returncode == 0, log[-2000:]
    assert dom.count('class="plot-container') == FIGURES
    assert dom.count('class="main-svg"') >= FIGURES
    assert "Uncaught" not in log and "CONSOLE" not in log, log[-2000:]
