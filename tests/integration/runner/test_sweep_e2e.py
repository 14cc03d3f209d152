"""The shared end-to-end sweep (tests/support/e2e.py): folders, manifest, progress, files,
and its report, against the simulator's trace and in a browser.

One module, so that one test process runs the sweep and uses it (two modules on two
xdist workers left one of them waiting for the other's sweep). The simulator writes one
trace line per request with every chunk's emit time and token count; the system output
tok/s of each rung, from tokens emitted inside its measure window, is the ground truth
the report's client-side figure (tokens by arrival time) must match within 3%, and C*
computed from the trace must fall between the same two rungs as the report's. Then
report.html is opened in headless Chromium (Debian's `chromium`; skipped when absent,
unless CI=true): every figure renders, no JavaScript errors.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.report.crossover import find_crossover
from tests.support.browser import FLAGS, chromium
from tests.support.e2e import ARMS, LADDER, SCENARIO, SweepResult
from tests.support.sweeps import ARM_FILES, counter_rate, read_csv

# the simulator exposes running requests: the batch-size figure too; the built-in prompts
# are of five categories and of mixed lengths: the speedup by category and by context
# bucket too
FIGURES = 12


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



def test_run_folder_and_manifest(e2e_sweep: SweepResult) -> None:
    run_dir = e2e_sweep.run_dir
    assert run_dir.parent.name == "e2e" and run_dir.parent.parent.name == "out"
    m = e2e_sweep.manifest
    assert m["status"] == "done" and m["scenario_name"] == "e2e"
    assert [(a["name"], a["role"], a["status"]) for a in m["arms"]] == [
        ("spec-on", "spec_on", "done"), ("spec-off", "spec_off", "done")]
    # the profile's draft length, announced by the simulator, is recorded
    assert m["arms"][0]["k"] == 3 and m["arms"][0]["reps"][0]["dir"] == "spec-on"


def test_one_progress_line_per_rung_with_the_tables_figures(e2e_sweep: SweepResult) -> None:
    progress = [ln for ln in e2e_sweep.stdout.splitlines() if " | elapsed " in ln]
    assert len(progress) == len(ARMS) * len(LADDER)
    assert progress[0].startswith(f"[spec-on] rung 1/{len(LADDER)} C=1 | ")
    summary = pd.read_csv(e2e_sweep.run_dir / "summary.csv")
    for line, row in zip(progress, summary.itertuples(), strict=True):
        shown = re.search(rf"C={row.concurrency} \| ([\d.]+) tok/s", line)
        # the line rounds to 0.1 and summary.csv keeps 6 significant digits: rounding that
        # CSV value again can land on the other side (146.1 shown, 146.15 in the file)
        assert shown and abs(float(shown[1]) - row.output_tok_s) <= 0.05 + 1e-5 * abs(
            row.output_tok_s), (line, row.output_tok_s)
        assert f"{row.requests} requests, no failures" in line


def test_every_arm_folder_holds_its_files_and_windows(e2e_sweep: SweepResult) -> None:
    measure, cap = SCENARIO["measure_s"], SCENARIO["max_measure_s"]
    warmup, min_requests = SCENARIO["warmup_s"], SCENARIO["min_requests"]
    extended = []
    for arm in ARMS:
        arm_dir = e2e_sweep.arm_dir(arm)
        assert {p.name for p in arm_dir.iterdir()} >= ARM_FILES | {"server_trace.jsonl"}
        steps = read_csv(arm_dir / "locust_rungs.csv")
        assert [(int(s["rung"]), int(s["users"])) for s in steps] == list(enumerate(LADDER))
        rows = read_csv(arm_dir / "locust_requests.csv")
        for s in steps:
            ws, ms, me = (float(s[k]) for k in ("warmup_start", "measure_start", "measure_end"))
            assert ws < ms <= ws + warmup + 1.01
            # at least measure_s, and until min_requests requests that started in it
            # completed: seed-glm queues spec-on's requests behind 16 running at C = 40,
            # so there the window must outlast measure_s to get them
            assert measure - 0.01 <= me - ms < cap
            done = [r for r in rows if ms <= float(r["start"]) and float(r["end"]) <= me
                    and r["error_kind"] == ""]
            assert len(done) >= min_requests, (arm, s)
            if me - ms > measure + 0.5:
                extended.append((arm, int(s["users"])))
        for prev, nxt in itertools.pairwise(steps):
            assert float(nxt["warmup_start"]) >= float(prev["measure_end"])
        assert len(rows) >= 10
        assert all(float(steps[0]["warmup_start"]) - 1 <= float(r["start"]) for r in rows)
        assert counter_rate(arm_dir, steps[-1], "vllm:generation_tokens_total") > 0
    assert ("spec-on", LADDER[-1]) in extended, extended
