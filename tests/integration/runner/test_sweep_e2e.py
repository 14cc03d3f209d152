"""The shared end-to-end sweep (tests/support/e2e.py): folders, manifest, progress, files."""

from __future__ import annotations

import itertools

import pandas as pd

from tests.support.e2e import ARMS, LADDER, SCENARIO, SweepResult
from tests.support.sweeps import ARM_FILES, counter_rate, read_csv


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
        assert f"C={row.concurrency} | {row.output_tok_s:.1f} tok/s" in line, (line, row)
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
