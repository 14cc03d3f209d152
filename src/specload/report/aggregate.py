"""Per arm x rung metrics: measure every repeat, then combine repeats with their spread.

`measure_rep` reads one repeat's files and returns one row per rung (client, server,
client-process, workers' clocks and losses). Repeats
are measured in parallel processes (reading and parsing dominate and are CPU-bound),
then `combine_reps` averages them per arm and concurrency: rates and percentiles are
means over repeats, counts are sums, and output tok/s also gets its min, max and
standard deviation.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from specload import records
from specload.report import client_metrics, clock_align, ground_truth, load_health, server_metrics
from specload.report.run_files import ArmSource, RepSource, RunSource, read_rep
from specload.report.windows import rung_windows

SUMMARY_COLUMNS = (
    "arm", "concurrency", "output_tok_s", "decode_tok_s_per_user", "request_tok_s_p50",
    "requests_per_s", "requests", "failures", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_chunk_p50_ms", "itl_token_p50_ms", "e2e_p50_ms", "tokens_per_chunk",
    "achieved_concurrency", "server_output_tok_s", "accept_len_mean", "accept_rate",
)
SUM_COLUMNS = ("requests", "requests_started", "failures", "interrupted", "reconnects",
               "timeouts", "workers_lost", "clock_problems")
SPREAD_COLUMN = "output_tok_s"
# Below this many bytes of request records, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 20_000_000
# Columns kept per repeat only (they make no sense averaged).
_REP_ONLY = ("rep", "window_start", "failures_by_kind", "window_source", "top_failure",
             "lost_detail", "clock_detail")


@dataclass(frozen=True, slots=True)
class RepJob:
    arm: str
    rep: RepSource


def measure_rep(job: RepJob) -> pd.DataFrame:
    """One row per rung of one repeat with every metric the summary needs."""
    data = read_rep(job.rep.prefix)
    windows, source = rung_windows(data.rungs, data.history, data.requests)
    if not windows:
        return pd.DataFrame()
    table = client_metrics.measure(data.requests, windows)
    server = server_metrics.index_metrics(data.server)
    extra = pd.DataFrame([server_metrics.server_row(server, w)
                          | load_health.client_row(data.client, w)
                          | clock_align.window_row(data.events, data.clock, w) for w in windows])
    extra["trace_tok_s"] = ground_truth.trace_tok_s(job.rep.prefix, windows)
    table = pd.concat([table, extra], axis=1)
    table["trace_ratio"] = table["output_tok_s"] / table["trace_tok_s"]
    table.insert(0, "rep", job.rep.rep)
    table.insert(0, "arm", job.arm)
    table["window_source"] = source
    return table


def _pool_context() -> multiprocessing.context.BaseContext:
    # Forking a process that runs other threads can copy a held lock; fork only when alone.
    return multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")


def measure_all(run: RunSource, processes: int | None = None) -> pd.DataFrame:
    """Every repeat of every arm measured, concatenated (one row per arm, rep and rung).

    Large runs are measured in parallel processes, one repeat per task.
    """
    jobs = [RepJob(arm.name, rep) for arm in run.arms for rep in arm.reps]
    size = sum(Path(f"{j.rep.prefix}{records.REQUESTS_SUFFIX}").stat().st_size for j in jobs)
    workers = min(len(jobs), processes or os.cpu_count() or 1)
    if workers <= 1 or size < PARALLEL_MIN_BYTES:
        parts = [measure_rep(j) for j in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
            parts = list(pool.map(measure_rep, jobs))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _merge_kinds(dicts: Sequence[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            merged[k] = merged.get(k, 0) + int(v)
    return merged


def combine_reps(per_rep: pd.DataFrame, arms: Sequence[ArmSource]) -> pd.DataFrame:
    """One row per arm and concurrency: repeats averaged (counts summed), with spread."""
    if per_rep.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    # an open-loop rung is its rate (its `concurrency` is the pool); NaN elsewhere
    keys = [k for k in ("arm", "concurrency", "rate") if k in per_rep]
    numeric = [c for c in per_rep.columns
               if c not in (*keys, *_REP_ONLY) and pd.api.types.is_numeric_dtype(per_rep[c])]
    grouped = per_rep.groupby(keys, sort=False, dropna=False)
    means = grouped[[c for c in numeric if c not in SUM_COLUMNS]].mean()
    sums = grouped[[c for c in SUM_COLUMNS if c in per_rep]].sum()
    spread = grouped[SPREAD_COLUMN].agg(["min", "max", "std", "count"])
    spread.columns = [f"{SPREAD_COLUMN}_{c}" for c in ("min", "max", "std")] + ["reps"]
    kinds = grouped["failures_by_kind"].agg(lambda s: _merge_kinds(list(s)))
    top = grouped["top_failure"].agg(lambda s: next((x for x in s if x), ""))
    out = pd.concat([means, sums, spread, kinds, top], axis=1).reset_index()
    out["failure_rate"] = out["failures"] / (out["requests"] + out["failures"]).where(
        lambda x: x > 0)
    order = {a.name: i for i, a in enumerate(arms)}
    out["_order"] = out["arm"].map(order)
    out = out.sort_values(["_order", *keys[1:]]).drop(columns="_order")
    first = [c for c in SUMMARY_COLUMNS if c in out.columns]
    rest = [c for c in out.columns if c not in first]
    out = out[first + rest].reset_index(drop=True)
    out["rung"] = out["rung"].round().astype(int)
    out["reps"] = out["reps"].astype(int)
    return out
