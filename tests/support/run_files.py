"""Builders for small hand-made run files with known answers (report tests)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from specload.runfiles import records

HISTORY_COLUMNS = ["Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s",
                   "50%", "Total Request Count", "Total Failure Count",
                   "Total Median Response Time", "Total Average Response Time",
                   "Total Min Response Time", "Total Max Response Time",
                   "Total Average Content Size"]


def request(start: float, arrivals: Sequence[float], tokens: Sequence[int] | None = None,
            *, error_kind: str = "", interrupted: bool = False, end: float | None = None,
            output_tokens: int | None = None, finish_reason: str = "stop",
            tokens_source: str = "usage", rid: str = "r", category: str = "chat",
            **tags: Any) -> records.RequestRecord:
    """A record whose chunks arrive at the given absolute times (epoch s); `tags` are
    further record fields (session_id, turn, scheduled, late_ms, late_by, ...)."""
    gaps, toks = records.encode_chunks(start, arrivals, tokens)
    out = output_tokens if output_tokens is not None else (
        sum(tokens) if tokens is not None else len(arrivals))
    ttft = (arrivals[0] - start) * 1e3 if arrivals else None
    e2e = (arrivals[-1] - start) * 1e3 if arrivals else None
    tpot = (e2e - ttft) / (out - 1) if arrivals and out > 1 else None
    return records.RequestRecord(
        request_id=rid, client_id="c1", user_id=0, endpoint="chat", category=category,
        start=start, end=end if end is not None else (arrivals[-1] if arrivals else start),
        status=0 if error_kind else 200, ttft_ms=None if error_kind else ttft,
        e2e_ms=None if error_kind else e2e, tpot_ms=None if error_kind else tpot,
        output_tokens=out, tokens_source=tokens_source, num_chunks=len(arrivals),
        finish_reason=finish_reason, error_kind=error_kind, interrupted=interrupted,
        chunk_gaps_us=gaps, chunk_tokens=toks, **tags)


def write_prefix(prefix: Path, reqs: Sequence[records.RequestRecord],
                 rungs: Sequence[tuple[float, ...]] | None = None,
                 server: Sequence[tuple[float, str, float]] | None = None,
                 client: Sequence[tuple[Any, ...]] | None = None,
                 history: Sequence[Sequence[Any]] | None = None,
                 clock: Sequence[tuple[Any, ...]] | None = None,
                 events: Sequence[tuple[Any, ...]] | None = None) -> Path:
    """Write the run files of one Locust prefix; returns the prefix. Rungs with a sixth
    value are an open-loop run's (that value is the rate), with a seventh a trace
    replay's (its speed)."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([r.row() for r in reqs], columns=list(records.REQUEST_COLUMNS)).to_csv(
        f"{prefix}{records.REQUESTS_SUFFIX}", index=False)
    for rows, suffix, columns in (
        (rungs, records.RUNGS_SUFFIX,
         next((c for c in (records.TRACE_RUNGS_COLUMNS, records.RATE_RUNGS_COLUMNS)
               if rungs and len(rungs[0]) == len(c)), records.RUNGS_COLUMNS)),
        (server, records.SERVER_METRICS_SUFFIX, records.SERVER_METRICS_COLUMNS),
        (client, records.CLIENT_STATS_SUFFIX, records.CLIENT_STATS_COLUMNS),
        (history, records.LOCUST_HISTORY_SUFFIX, HISTORY_COLUMNS),
        (clock, records.CLOCK_SUFFIX, records.CLOCK_COLUMNS),
        (events, records.EVENTS_SUFFIX, records.EVENTS_COLUMNS),
    ):
        if rows is not None:
            pd.DataFrame(list(rows), columns=list(columns)).to_csv(f"{prefix}{suffix}",
                                                                    index=False)
    return prefix


def history_row(ts: int, users: int, count: int, avg_size: float) -> list[Any]:
    return [ts, users, "", "Aggregated", 0.0, 0.0, 0, count, 0, 0, 0, 0, 0, avg_size]


def steady_requests(t0: float, t1: float, users: int, period: float, chunks: int,
                    tokens_per_chunk: int) -> list[records.RequestRecord]:
    """`users` users running back-to-back requests of `period` s from t0 until t1."""
    out = []
    for u in range(users):
        t = t0 + u * period / users
        while t + period <= t1:
            step = period / chunks
            arrivals = [t + step * (i + 1) for i in range(chunks)]
            out.append(request(t, arrivals, [tokens_per_chunk] * chunks, rid=f"u{u}-{t}"))
            t += period
    return out


def write_manifest(run_dir: Path, arms: Sequence[dict[str, Any]],
                   planned: Sequence[dict[str, Any]] | None = None, **scenario: Any) -> None:
    """A manifest of finished arms; `planned` are the scenario's own arm entries."""
    if planned is not None:
        scenario["arms"] = list(planned)
    manifest = {"scenario": {"name": "t", **scenario}, "scenario_name": "t",
                "created": "2026-01-01T00:00:00Z", "arms": list(arms), "status": "done"}
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def arm_entry(name: str, role: str, reps: int = 1, k: int | None = 3) -> dict[str, Any]:
    return {"name": name, "kind": "sim", "spec": "on" if role == "spec_on" else "off",
            "role": role, "k": k, "status": "done",
            "reps": [{"rep": r, "dir": name if reps == 1 else f"{name}/rep-{r}",
                      "status": "done", "started": None, "finished": None, "error": None}
                     for r in range(1, reps + 1)],
            "ladder": [1, 2], "warmup_s": 1, "measure_s": 10}
