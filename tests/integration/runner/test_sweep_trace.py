"""Trace replay end to end: a Mooncake trace and an Azure trace, each replayed at speeds
1, 2 and 4 on a simulated pair.

The pair's profile is `bench-20ms` with a speculating server that runs at most eight
requests (as SGLang's EAGLE runs fewer than its plain server): spec-on answers sooner
while its six slots keep up, then queues. So speculation pays at the trace's own rate
and stops paying before twice it. Each sweep (this module's, and the Azure one in
`test_sweep_trace_azure.py`, a module of its own so that the two run side by side)
checks:
- the schedule, exactly: every arrival of every rung was planned at its trace time over
  the speed (to the microsecond), every request of the window once per rung;
- how well it was kept: arrivals no cap held started within 20 ms p99 of their times.
  On an idle machine the bound is 5 ms (`scripts/bench_trace_replay.py`,
  docs/benchmarks.md); beside the other slow tests, a process is taken away for
  scheduler ticks of a few ms;
- the requests as the trace has them: every reply exactly its `output_length` tokens,
  prompts counted within 5% of `input_length` once calibrated, the client's tokens
  within 1% of the simulator's trace, and Mooncake's shared blocks found in the
  server's prefix cache (Azure's requests share nothing);
- the answer: speed* between 1x and 2x with its interval.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from specload.sim.profile import PROFILES_DIR
from specload.traffic.traces import load_trace
from tests.support.sweeps import read_csv, run_dir_of
from tests.support.trace_files import synthetic, write_mooncake

SPEEDS = [1, 2, 4]
LATE_P99_MS = 20.0
LATE_P50_MS = 2.0


def capped_profile(folder: Path) -> Path:
    profile = yaml.safe_load((PROFILES_DIR / "bench-20ms.yaml").read_text())
    profile["speculative"].update({"k": 1, "acceptance": [0.9], "max_num_seqs": 8})
    path = folder / "capped.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def scenario(trace: Path, profile: Path, **more: object) -> dict:
    return {"name": "trace", "warmup_s": 1, "drain_s": 15, "request": {"temperature": 0},
            "workload": {"kind": "trace", "trace": str(trace), "speed": SPEEDS,
                         "block_tokens": 16},
            "arms": [{"name": "spec-on", "sim": {"profile": str(profile), "spec": "on"}},
                     {"name": "spec-off", "sim": {"profile": str(profile), "spec": "off"}}],
            **more}


def check_replay(run: Path, trace_path: Path, shares_prefixes: bool) -> dict:
    """Everything the module docstring lists but the answer; returns summary.json."""
    trace = load_trace(str(trace_path))
    times = np.array([r.t_s for r in trace.requests])
    for arm in ("spec-on", "spec-off"):
        rungs = read_csv(run / arm / "locust_rungs.csv")
        rows = read_csv(run / arm / "locust_requests.csv")
        assert [float(r["speed"]) for r in rungs] == SPEEDS
        sched = np.array([float(r["scheduled"]) for r in rows])
        for rung in rungs:
            speed, start = float(rung["speed"]), float(rung["measure_start"])
            length = trace.length_s / speed
            assert float(rung["measure_end"]) - start == pytest.approx(length, abs=1e-5)
            assert float(rung["rate"]) == pytest.approx(len(times) / length, rel=1e-5)
            mine = sched[(sched >= start - 1e-5) & (sched < start + length - 1e-5)]
            planned = np.sort(times / speed)
            got = np.sort(mine - start)
            nearest = planned[np.clip(np.searchsorted(planned, got), 0, planned.size - 1)]
            below = planned[np.clip(np.searchsorted(planned, got) - 1, 0, planned.size - 1)]
            assert np.minimum(abs(got - nearest), abs(got - below)).max() < 1e-5
            # arrivals still queued when the run ended (every user of an overloaded arm
            # busy) were never sent: only in the last rung
            if arm == "spec-off" or rung is not rungs[-1]:
                assert got.size == planned.size
        free = [float(r["late_ms"]) for r in rows if r["late_by"] != "cap"]
        assert np.percentile(free, 99) <= LATE_P99_MS, np.percentile(free, [50, 99, 100])
        assert np.percentile(free, 50) <= LATE_P50_MS
        done = [r for r in rows if r["status"] == "200" and not r["error_kind"]]
        assert len(done) > 0.5 * len(rows)
        for r in done:
            want = trace.requests[int(r["prompt_index"])]
            assert int(r["output_tokens"]) == int(r["max_tokens"]) == want.output_tokens
        late = done[len(done) // 2:]  # calibrated by then
        errors = [int(r["prompt_tokens"]) / trace.requests[int(r["prompt_index"])].input_tokens
                  - 1 for r in late]
        assert abs(float(np.median(errors))) < 0.05 and np.percentile(np.abs(errors), 90) < 0.1
    summary = json.loads((run / "summary.json").read_text())
    rows = [r for r in read_csv(run / "summary.csv")]
    assert all(abs(float(r["trace_ratio"]) - 1) <= 0.01 for r in rows), \
        [r["trace_ratio"] for r in rows]
    hits = [float(r["prefix_hit_rate"]) for r in rows]
    assert all(h > 0.5 for h in hits) if shares_prefixes else all(h < 0.2 for h in hits)
    return summary


def check_answer(summary: dict, stdout: str) -> None:
    (pair,) = summary["rate_pairs"]
    speed = pair["speed_star"]
    assert 1 < speed < 2, pair["table"]
    span = pair["speed_star_interval"]
    assert span is not None and span["lo"] is not None and span["lo"] <= speed
    assert span["hi"] is None or speed <= span["hi"]
    assert f"speculation pays up to {speed:.2g}x this trace's rate" in stdout
    assert "between speeds 1x and 2x" in stdout
    assert summary["workload"] == "trace"


@pytest.mark.slow
@pytest.mark.timing
def test_a_mooncake_trace_replayed_at_three_speeds(write_scenario, run_sweep, tmp_path: Path
                                                   ) -> None:
    trace = write_mooncake(tmp_path / "mooncake.jsonl",
                           synthetic(2000, rate=70.0, seed=1, block=16))
    path = write_scenario(scenario(trace, capped_profile(tmp_path)))
    result = run_sweep(str(path), "--out", str(tmp_path / "out"), timeout=400)
    assert result.returncode == 0, result.stdout + result.stderr
    for arm in ("spec-on", "spec-off"):
        assert f"[{arm}] rung 3/3 speed 4x (" in result.stdout
    run = run_dir_of(result.stdout)
    check_answer(check_replay(run, trace, shares_prefixes=True), result.stdout)
    assert "trace: all 2000 requests fit the server's context" in result.stdout
