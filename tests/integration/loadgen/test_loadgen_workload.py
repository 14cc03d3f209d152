"""Synthetic workloads: prompts calibrated to a token target, lengths drawn per request."""

from __future__ import annotations

import statistics

import pytest


@pytest.mark.parametrize("target", [1024, 300])
def test_calibrated_prompts_land_within_5_percent(sim_server, locust_run, target: int) -> None:
    sim = sim_server(trace=False)
    run = locust_run("chat.py", sim.url, users=2, run_time="4s", name=f"t{target}",
                     extra=["--prompt-tokens", str(target), "--max-tokens", "4",
                            "--shared-prefix-tokens", "100"])
    rows = sorted((r for r in run.requests() if r["error_kind"] == ""),
                  key=lambda r: float(r["start"]))
    assert len(rows) >= 12, run.output[-2000:]
    settled = [int(r["prompt_tokens"]) for r in rows[4:]]  # after a couple of replies
    assert all(abs(n / target - 1) <= 0.05 for n in settled), settled
    assert {r["category"] for r in rows} == {"synthetic"}


def test_lengths_are_drawn_from_their_distributions(sim_server, locust_run) -> None:
    sim = sim_server(trace=False)
    run = locust_run("chat.py", sim.url, users=4, run_time="5s",
                     extra=["--prompt-tokens", "uniform:100:400", "--output-tokens",
                            "normal:12:3", "--ignore-eos"])
    rows = [r for r in run.requests() if r["error_kind"] == ""]
    assert len(rows) >= 30
    outputs = [int(r["output_tokens"]) for r in rows]
    prompts = [int(r["prompt_tokens"]) for r in rows[8:]]
    assert 10 <= statistics.mean(outputs) <= 14 and len(set(outputs)) >= 5
    assert min(prompts) >= 90 and max(prompts) <= 420 and statistics.stdev(prompts) > 40
