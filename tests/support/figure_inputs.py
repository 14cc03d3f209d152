"""A small summary table and speedup pair with every column the figures draw from."""

from __future__ import annotations

import pandas as pd

from specload.report.crossover import CROSSES, Crossover, PairResult
from specload.report.run_files import ArmSource


def summary() -> pd.DataFrame:
    rows = []
    for arm, scale in (("on", 1.5), ("off", 1.0)):
        for c in (1, 10, 100):
            rows.append({"arm": arm, "concurrency": c, "output_tok_s": 10.0 * c * scale,
                         "output_tok_s_min": 9.0 * c, "output_tok_s_max": 11.0 * c * scale,
                         "reps": 2, "decode_tok_s_per_user": 50 / scale, "ttft_p50_ms": 40.0,
                         "ttft_p99_ms": 90.0, "tpot_p50_ms": 20.0, "itl_chunk_p50_ms": 30.0,
                         "itl_token_p50_ms": 12.0, "tokens_per_chunk": 2.5 if scale > 1 else 1,
                         "accept_len_mean": float("nan"), "failures": 1,
                         "failures_by_kind": {"http_error": 1}, "failure_rate": 0.01})
    return pd.DataFrame(rows)


def pair() -> PairResult:
    table = pd.DataFrame({"concurrency": [1, 10, 100], "output_tok_s_on": [15, 150, 900],
                          "output_tok_s_off": [10, 100, 1000], "speedup": [1.5, 1.5, 0.9],
                          "speedup_min": [1.4, 1.4, 0.8], "speedup_max": [1.6, 1.6, 1.0]})
    return PairResult(ArmSource("on", "spec_on"), ArmSource("off", "spec_off"), table,
                      Crossover(CROSSES, 50.0, 10, 100))
