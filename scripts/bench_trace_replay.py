#!/usr/bin/env python3
"""Benchmark how closely a trace replay keeps the trace's schedule, on 1 and 2 processes.

A Mooncake-format trace (`--requests` Poisson arrivals at `--rate` per second, written
as `tests/support/trace_files.py` writes the tests') is replayed with specload's trace
locustfile at `--speeds` against one simulated server (`specload sim --profile
bench-20ms --spec off`: a 20 ms step at any batch, so the server never holds a start
back). Printed per load-process count and speed: the arrivals sent, how many of the
plan's, and how late they started against their scheduled times (the trace's over the
speed): p50, p99 and the largest, in ms, and the share later than 10 ms (a "late start").
The target is p99 at most 5 ms; the last line gives p99 / 5 ms per run. On a machine
busy with other work the process is taken off the CPU for scheduler ticks of a few ms,
and the tail shows it: run it on a quiet machine.

    python scripts/bench_trace_replay.py            # ~2 minutes
    python scripts/bench_trace_replay.py --requests 3000 --rate 60 --speeds 1,2,4
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from specload.loadgen import locustfile_trace
from specload.runfiles.records import LATE_LIMIT_MS, REQUESTS_SUFFIX, RUNGS_SUFFIX
from specload.runner.processes import free_port
from specload.runner.sim_launcher import SimOptions, launch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the trace writer lives with the tests' files
from tests.support.trace_files import synthetic, write_mooncake  # noqa: E402

TARGET_P99_MS = 5.0


def replay(folder: Path, host: str, trace: Path, speeds: str, processes: int
           ) -> list[dict[str, float]]:
    """One Locust run; per rung: arrivals sent and planned, and their lateness."""
    prefix = folder / f"p{processes}" / "locust"
    prefix.parent.mkdir()
    cmd = [sys.executable, "-m", "locust", "-f", locustfile_trace.__file__, "--headless",
           "--only-summary", "--csv", str(prefix), "--host", host, "--trace", str(trace),
           "--speeds", speeds, "--warmup", "1", "--drain", "20", "--block-tokens", "16"]
    if processes > 1:
        port = str(free_port())
        cmd += ["--processes", str(processes), "--master-bind-host", "127.0.0.1",
                "--master-bind-port", port, "--master-port", port]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"locust failed: {done.stderr[-2000:]}")
    with open(f"{prefix}{RUNGS_SUFFIX}", newline="") as fh:
        rungs = list(csv.DictReader(fh))
    with open(f"{prefix}{REQUESTS_SUFFIX}", newline="") as fh:
        rows = [(float(r["scheduled"]), float(r["late_ms"])) for r in csv.DictReader(fh)
                if r["scheduled"]]
    out = []
    for rung in rungs:
        start, end = float(rung["measure_start"]), float(rung["measure_end"])
        late = np.array([ms for t, ms in rows if start <= t < end])
        out.append({"speed": float(rung["speed"]), "sent": late.size,
                    "planned": round(float(rung["rate"]) * (end - start)),
                    "p50": float(np.percentile(late, 50)), "p99": float(np.percentile(late, 99)),
                    "max": float(late.max()),
                    "late_share": float(np.mean(late > LATE_LIMIT_MS))})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=40.0,
                        help="the trace's arrivals per second at speed 1")
    parser.add_argument("--speeds", default="1,2,4")
    parser.add_argument("--processes", default="1,2",
                        help="comma-separated load-process counts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trace = write_mooncake(folder / "trace.jsonl",
                               synthetic(args.requests, args.rate, seed=1, block=16))
        sim = launch(SimOptions.of(profile="bench-20ms", spec="off", port=free_port()),
                     folder / "sim.log")
        try:
            print(f"trace: {args.requests} requests at {args.rate:g}/s, speeds {args.speeds}; "
                  "lateness of each arrival against its scheduled time (ms)")
            print(f"{'processes':>9} {'speed':>6} {'sent':>11} {'p50':>6} {'p99':>6} "
                  f"{'max':>7} {'>10 ms':>7}")
            worst = {}
            for processes in (int(p) for p in args.processes.split(",")):
                for r in replay(folder, sim.url, trace, args.speeds, processes):
                    print(f"{processes:>9} {r['speed']:>5g}x {r['sent']:>5}/{r['planned']:<5} "
                          f"{r['p50']:>6.2f} {r['p99']:>6.2f} {r['max']:>7.1f} "
                          f"{r['late_share']:>7.2%}", flush=True)
                    worst[processes] = max(worst.get(processes, 0.0), r["p99"])
            print("; ".join(f"p={p}: worst p99 / {TARGET_P99_MS:g} ms = {v / TARGET_P99_MS:.2f}"
                            for p, v in worst.items()))
        finally:
            sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
