"""Sweeps of the other workloads, end to end on simulated servers.

An open-loop sweep whose arrivals are whole chat sessions (`unit: sessions`): both
arms run every rate, the progress lines name the rates, each session's first turn is
scheduled and its later turns follow it, and the report reads the run on the rate axis
(achieved rate, rate*). A dry run of a sessions scenario prints the sessions locustfile
with the think time; one of a trace replay its window and the trace locustfile.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sweeps import read_csv, run_dir_of
from tests.support.trace_files import synthetic, write_mooncake

RATES = [2, 6]


def scenario(workload: dict, **more: object) -> dict:
    return {
        "name": "workloads", "warmup_s": 1, "measure_s": 3, "drain_s": 10,
        "request": {"max_tokens": 12, "ignore_eos": True}, "workload": workload,
        "arms": [{"name": "spec-on", "sim": {"profile": "bench-20ms", "spec": "on"}},
                 {"name": "spec-off", "sim": {"profile": "bench-20ms", "spec": "off"}}],
        **more,
    }


@pytest.mark.slow
def test_an_open_loop_sweep_of_chat_sessions(write_scenario, run_sweep, tmp_path: Path
                                             ) -> None:
    path = write_scenario(scenario({"kind": "open", "rates": RATES, "unit": "sessions",
                                    "turns": 2, "think_time": 0.2, "max_in_flight": 64}))
    result = run_sweep(str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rung 2/2 rate=6/s" in result.stdout
    run = run_dir_of(result.stdout)
    for arm in ("spec-on", "spec-off"):
        rows = read_csv(run / arm / "locust_requests.csv")
        firsts = [r for r in rows if r["turn"] == "1"]
        assert firsts and all(r["scheduled"] for r in firsts)
        assert {r["turn"] for r in rows} == {"1", "2"}
        assert not [r for r in rows if r["turn"] == "2" and r["scheduled"]]
        assert [float(r["rate"]) for r in read_csv(run / arm / "locust_rungs.csv")] == RATES
    summary = (run / "summary.json").read_text()
    assert '"workload": "open"' in summary and '"rate_star"' in summary
    assert "open loop, speedup on mean E2E" in result.stdout


def test_a_sessions_dry_run_prints_the_sessions_locustfile(write_scenario, run_sweep,
                                                           tmp_path: Path) -> None:
    path = write_scenario(scenario({"kind": "sessions", "think_time": "lognormal:6:0.8"},
                                   ladder=[1, 10]))
    result = run_sweep(str(path), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "workload sessions: ladder 1,10" in result.stdout
    assert "locustfile_sessions.py" in result.stdout
    assert "--think-time lognormal:6:0.8" in result.stdout


def test_a_trace_dry_run_prints_its_window_and_the_trace_locustfile(write_scenario, run_sweep,
                                                                    tmp_path: Path) -> None:
    rows = synthetic(40, rate=4.0)
    write_mooncake(tmp_path / "t.jsonl", rows)
    n = sum(r.t_ms < 5000 for r in rows)
    path = write_scenario(scenario({"kind": "trace", "trace": "t.jsonl", "speed": [1, 2],
                                    "duration_s": 5}))
    result = run_sweep(str(path), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert ("workload trace: trace speeds 1,2, 1 s warmup + the window at each speed (its "
            f"{n} requests over 5 s of the trace, {n / 5:.3g}/s at 1x)") in result.stdout
    assert "locustfile_trace.py" in result.stdout and "--trace-duration 5.0" in result.stdout
