"""Per arm x rung metrics: measure every repeat, then combine repeats with their spread.

`measure_rep` reads one repeat's files and returns one row per rung (client, server,
client-process, workers' clocks and losses). Repeats are measured in parallel
processes (reading and parsing dominate and are CPU-bound), then `combine_reps` combines
them per arm and rung by each column's rule in `rung_columns`: rates and percentiles are
means over repeats, counts are sums, and output tok/s also gets its min, max and
standard deviation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from specload.host.pools import map_jobs
from specload.report import (
    client_metrics,
    clock_align,
    ground_truth,
    load_health,
    load_steps,
    measure_cache,
    server_metrics,
)
from specload.report.run_files import ArmSource, RepSource, RunSource, read_rep
from specload.report.rung_columns import (
    SPREAD_STATS,
    Combine,
    View,
    combined_by,
    names,
    spread_names,
)
from specload.report.windows import rung_windows
from specload.runfiles import records

# Below this many bytes of request records, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 20_000_000


@dataclass(frozen=True, slots=True)
class RepJob:
    arm: str
    rep: RepSource


def measure_rep(job: RepJob) -> pd.DataFrame:
    """One row per rung of one repeat with every metric the summary needs."""
    return _labelled(job, measure_cache.measured(job.rep.prefix, rung_table, job.rep.done))


def _labelled(job: RepJob, table: pd.DataFrame) -> pd.DataFrame:
    if len(table):
        table.insert(0, "rep", job.rep.rep)
        table.insert(0, "arm", job.arm)
    return table


def rung_table(prefix: Path) -> pd.DataFrame:
    """One row per rung of the repeat whose Locust files share `prefix`."""
    data = read_rep(prefix)
    windows, source = rung_windows(data.rungs, data.history, data.requests)
    if not windows:
        return pd.DataFrame()
    table = load_steps.with_transitions(client_metrics.measure(data.requests, windows),
                                        data.requests, windows)
    server = server_metrics.index_metrics(data.server)
    extra = pd.DataFrame([server_metrics.server_row(server, w)
                          | load_health.client_row(data.client, w)
                          | clock_align.window_row(data.events, data.clock, w) for w in windows])
    extra["trace_tok_s"] = ground_truth.trace_tok_s(prefix, windows)
    table = pd.concat([table, extra], axis=1)
    table["trace_ratio"] = table["output_tok_s"] / table["trace_tok_s"]
    table["window_source"] = source
    return table


def measure_all(run: RunSource, processes: int | None = None) -> pd.DataFrame:
    """Every repeat of every arm measured, concatenated (one row per arm, rep and rung).

    A repeat measured before is read from the cache (`measure_cache`); the others, when
    their files are large, are measured in parallel processes, one repeat per task.
    """
    jobs = [RepJob(arm.name, rep) for arm in run.arms for rep in arm.reps]
    tables = [measure_cache.kept(j.rep.prefix) for j in jobs]
    missing = [j for j, t in zip(jobs, tables, strict=True) if t is None]
    size = sum(Path(f"{j.rep.prefix}{records.REQUESTS_SUFFIX}").stat().st_size for j in missing)
    fresh = iter(map_jobs(measure_rep, missing, 1 if size < PARALLEL_MIN_BYTES else processes))
    parts = [next(fresh) if t is None else _labelled(j, t)
             for j, t in zip(jobs, tables, strict=True)]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _merge_kinds(dicts: Sequence[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            merged[k] = merged.get(k, 0) + int(v)
    return merged


_COMBINERS: dict[Combine, Callable[[pd.Series], Any]] = {
    Combine.MERGE: lambda s: _merge_kinds(list(s)),
    Combine.FIRST: lambda s: next((x for x in s if x), ""),
}


def combine_reps(per_rep: pd.DataFrame, arms: Sequence[ArmSource]) -> pd.DataFrame:
    """One row per arm and rung: repeats combined by each column's `rung_columns.Combine`
    rule (a numeric column declared nowhere is averaged), with the spread."""
    leading = names(View.SUMMARY)
    if per_rep.empty:
        return pd.DataFrame(columns=list(leading))
    # an open-loop rung is its rate (its `concurrency` is the pool); NaN elsewhere
    keys = [k for k in combined_by(Combine.KEY) if k in per_rep]
    not_averaged = combined_by(Combine.REP_ONLY, *_COMBINERS)
    summed = [c for c in combined_by(Combine.SUM) if c in per_rep]
    numeric = [c for c in per_rep.columns
               if c not in (*keys, *not_averaged) and pd.api.types.is_numeric_dtype(per_rep[c])]
    grouped = per_rep.groupby(keys, sort=False, dropna=False)
    means = grouped[[c for c in numeric if c not in summed]].mean()
    (spread_column,) = combined_by(Combine.MEAN_SPREAD)
    spread = grouped[spread_column].agg([*SPREAD_STATS, "count"])
    spread.columns = [*spread_names(spread_column), "reps"]
    others = [grouped[c].agg(_COMBINERS[rule]) for rule in _COMBINERS
              for c in combined_by(rule) if c in per_rep]
    out = pd.concat([means, grouped[summed].sum(), spread, *others], axis=1).reset_index()
    out["failure_rate"] = out["failures"] / (out["requests"] + out["failures"]).where(
        lambda x: x > 0)
    order = {a.name: i for i, a in enumerate(arms)}
    out["_order"] = out["arm"].map(order)
    out = out.sort_values(["_order", *keys[1:]]).drop(columns="_order")
    first = [c for c in leading if c in out.columns]
    rest = [c for c in out.columns if c not in first]
    out = out[first + rest].reset_index(drop=True)
    out["rung"] = out["rung"].round().astype(int)
    out["reps"] = out["reps"].astype(int)
    return out
