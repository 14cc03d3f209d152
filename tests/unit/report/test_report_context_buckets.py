"""A mixed-length run's context buckets: terciles or given edges over the prompt-length
bins, the bins merged, and each bucket's speedup and C*."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specload.report import context_buckets as cb
from specload.report.client_metrics import length_bin
from specload.report.crossover import analyse_pair
from specload.report.run_files import ArmSource


def _bin(requests: float, pace: float) -> dict[str, float]:
    return {"tokens": pace * 10 * requests, "in_flight_s": 10.0 * requests,
            "tok_s_per_request": pace, "pace_rel_se": 0.02, "requests": requests,
            "tpot_p50_ms": 1000.0 / pace, "req_accept_len": 2.5}


# short prompts pay up to C = 16, long ones at every C measured
PACE = {"on": {4: {"256-512": 60.0, "512-1024": 58.0, "4096-8192": 50.0},
               16: {"256-512": 30.0, "512-1024": 29.0, "4096-8192": 40.0},
               64: {"256-512": 10.0, "512-1024": 10.0, "4096-8192": 30.0}},
        "off": {4: {"256-512": 40.0, "512-1024": 40.0, "4096-8192": 30.0},
                16: {"256-512": 25.0, "512-1024": 25.0, "4096-8192": 25.0},
                64: {"256-512": 20.0, "512-1024": 20.0, "4096-8192": 20.0}}}
REQUESTS = {"256-512": 40.0, "512-1024": 30.0, "4096-8192": 30.0}


def _per_rep() -> pd.DataFrame:
    return pd.DataFrame([{"arm": arm, "rep": 1, "concurrency": c, "output_tok_s": 1000.0,
                          cb.COLUMN: {b: _bin(REQUESTS[b], v) for b, v in bins.items()}}
                         for arm, by_c in PACE.items() for c, bins in by_c.items()])


def test_prompt_lengths_fall_in_power_of_two_bins() -> None:
    assert list(length_bin(np.array([100.0, 300.0, 5000.0, np.nan]))) == [
        "0-128", "256-512", "4096-8192", ""]


def test_bucket_edges_are_the_traffics_terciles_or_the_given_ones_snapped() -> None:
    per_rep = _per_rep()
    assert cb.edges(per_rep) == [512, 4096]
    assert cb.edges(per_rep, [1000, 3000]) == [1024, 4096]


def test_each_bucket_gets_its_speedup_and_c_star() -> None:
    per_rep = _per_rep()
    arms = [ArmSource("on", "spec_on"), ArmSource("off", "spec_off")]
    summary = per_rep.drop(columns=["rep", cb.COLUMN])
    pair = analyse_pair(arms[0], arms[1], summary, per_rep)
    (found,) = cb.analyse([pair], per_rep)
    assert set(found.crossovers) == {"under 512", "512-4k", "4k and more"}
    assert found.crossovers["4k and more"].verdict == "always"
    short = found.crossovers["under 512"]
    assert short.verdict == "crosses" and 16 < (short.c_star or 0) < 64
    rows = found.rows.set_index(["category", "concurrency"])
    assert rows.loc[("under 512", 4), "speedup"] == pytest.approx(1.5)
    lines = found.lines()
    assert lines[0].startswith("on vs off by context bucket: ")
    assert lines[1].startswith("  the mix: under 512 40%")


def test_a_contexts_run_has_no_buckets() -> None:
    per_rep = _per_rep()
    arms = [ArmSource("on", "spec_on", context="512"), ArmSource("off", "spec_off",
                                                                  context="512")]
    pair = analyse_pair(arms[0], arms[1], per_rep.drop(columns=["rep", cb.COLUMN]), per_rep)
    assert cb.analyse([pair], per_rep) == []
