"""The prefix cache end to end: chat sessions against simulated vLLM servers.

Every turn resends its history, so most of its prompt is cached. The report's hit rate
per rung (from the `vllm:prefix_cache_*` counters sampled during the run) must match
the simulator's own count in its trace (`cached_tokens` per request), and an arm with
`prefix_caching: false` must show no hits at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.ratios import ratio_range
from tests.support.sweeps import read_csv, read_trace, run_dir_of

SCENARIO = {
    "name": "prefix", "ladder": [2, 6], "warmup_s": 2, "measure_s": 10, "drain_s": 10,
    "request": {"max_tokens": 24, "ignore_eos": True},
    "workload": {"kind": "sessions", "think_time": 0.2, "turns": 4},
    "arms": [{"name": "cached", "sim": {"profile": "bench-20ms", "spec": "off"}},
             {"name": "uncached", "sim": {"profile": "bench-20ms", "spec": "off",
                                          "prefix_caching": False}}],
}


SAMPLE_S = 1.0  # the /metrics sampler's interval


def trace_hit_rates(records: list[dict], start: float, end: float) -> tuple[float, float]:
    """The range of the trace's hit rate over [start, end) that counters sampled every
    second and read between two samples at each edge can show: requests arriving within
    a sample of an edge count in any share (one request is a fortieth of a window)."""
    pairs = [(r["arrival"], (r["prompt_tokens"], r["cached_tokens"])) for r in records
             if "cached_tokens" in r]
    near = [p for t, p in pairs if min(abs(t - start), abs(t - end)) <= SAMPLE_S]
    whole = [p for t, p in pairs if start + SAMPLE_S < t < end - SAMPLE_S]
    return ratio_range(whole, near)


@pytest.mark.slow
def test_report_hit_rate_matches_the_simulators_count(write_scenario, run_sweep,
                                                      tmp_path: Path) -> None:
    result = run_sweep(str(write_scenario(SCENARIO)), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    run = run_dir_of(result.stdout)
    summary = json.loads((run / "summary.json").read_text())["summary"]
    rows = {(r["arm"], r["concurrency"]): r["prefix_hit_rate"] for r in summary}
    trace = read_trace(run / "cached" / "server_trace.jsonl")
    for rung in read_csv(run / "cached" / "locust_rungs.csv"):
        low, high = trace_hit_rates(trace, float(rung["measure_start"]),
                                    float(rung["measure_end"]))
        got = rows[("cached", int(rung["users"]))]
        assert low > 0.5  # later turns resend their history
        assert low - 0.01 <= got <= high + 0.01, (rung["users"], got, low, high)
    assert all(rows[("uncached", c)] == 0.0 for c in SCENARIO["ladder"])
    assert "cache hits" in (run / "report.html").read_text()
