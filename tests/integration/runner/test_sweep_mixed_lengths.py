"""A sweep of mixed prompt lengths and long replies on simulated servers: speedup and C*
per context bucket, and TPOT along the reply checked against the server's own trace.

Checked: the report splits the traffic at its terciles into three context buckets, each
with a speedup at every rung and C* or a verdict, the mix summing to one; TPOT by output
position (tokens 0-512 and 512-2k) is what the simulator's trace says its chunks took
there, for the requests each window pooled, within what arrival stamps on a busy
machine allow.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specload.report import reply_positions
from tests.support.sweeps import read_csv, run_dir_of, run_sweep, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.long(150)]
PROFILE, LADDER = "h100-llama8b-eagle3", [4, 16]
TRACE_SLACK = 0.05  # client arrival stamps against the server's send stamps


def _trace_tpot(trace: Path, ids: set[str]) -> dict[str, float]:
    """TPOT per output-position bucket from the server's own chunk stamps."""
    time = {name: 0.0 for name in reply_positions.bucket_names()}
    tokens = dict.fromkeys(time, 0.0)
    names = reply_positions.bucket_names()
    for line in trace.read_text().splitlines():
        row = json.loads(line)
        if row["request_id"] not in ids:
            continue
        stamps = np.array([c[0] for c in row["chunks"]])
        sizes = np.array([c[1] for c in row["chunks"]], dtype=float)
        before = np.cumsum(sizes) - sizes
        for gap, n, at in zip(np.diff(stamps), sizes[1:], before[1:], strict=True):
            name = names[int(np.searchsorted(reply_positions.EDGES, at, side="right")) - 1]
            time[name] += gap * 1e3
            tokens[name] += n
    return {name: time[name] / tokens[name] for name in names if tokens[name]}


def test_context_buckets_and_the_speedup_along_the_reply(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, {
        "name": "mixed", "ladder": LADDER, "warmup_s": 3, "measure_s": 8, "min_requests": 8,
        "drain_s": 2,
        "request": {"prompt_tokens": "lognormal:1500:1.0", "output_tokens": "uniform:600:1200",
                    "ignore_eos": True, "temperature": 0},
        "arms": [{"name": "on", "sim": {"profile": PROFILE, "spec": "on"}},
                 {"name": "off", "sim": {"profile": PROFILE, "spec": "off"}}]})
    done = run_sweep(tmp_path, str(scenario), "--out", "out", timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / run_dir_of(done.stdout)
    found = json.loads((run / "summary.json").read_text())
    (buckets,) = found["context_buckets"]
    assert buckets["groups"] == "context bucket" and len(buckets["c_star"]) == 3
    assert sum(buckets["mix"].values()) == pytest.approx(1.0, abs=0.01)
    for rung in buckets["rungs"]:
        assert np.isfinite(rung["speedup"]), rung
    assert "by context bucket: " in done.stdout and "share their batches" in done.stdout
    (along,) = found["along_the_reply"]
    per_rung = {(r["concurrency"], r["bucket"]): r for r in along["rungs"]}
    assert {b for _, b in per_rung} == {"0-512", "512-2k"}
    windows = {int(r["users"]): (float(r["measure_start"]), float(r["measure_end"]))
               for r in read_csv(run / "on" / "locust_rungs.csv")}
    rows = [r for r in read_csv(run / "on" / "locust_requests.csv") if r["error_kind"] == ""
            and r["interrupted"] == "0"]
    for c, (start, end) in windows.items():
        ids = {r["request_id"] for r in rows if start <= float(r["start"]) < end}
        truth = _trace_tpot(run / "on" / "server_trace.jsonl", ids)
        for name, tpot in truth.items():
            got = per_rung[(c, name)]["tpot_on_ms"]
            assert got == pytest.approx(tpot, rel=TRACE_SLACK), (c, name, got, tpot)
