#!/usr/bin/env python3
"""Benchmark the web UI's Tokens tab: does it make a load process's event loop lag?

One simulated server (`specload sim --profile bench-20ms`: a fixed 20 ms engine step, so
C users receive C / 0.020 chunks/s) and one Locust process that runs the users itself,
the case where the web UI shares the users' event loop. Each repeat runs three modes:

1. `headless`: no web UI, the baseline;
2. `stats-tab`: the web UI, polled as a browser showing Locust's Statistics tab does
   (the index page once, then GET /stats/requests every 2 s);
3. `tokens-tab`: the web UI, polled as a browser showing the Tokens tab does (the index
   page, its script and plotly.js once, then /stats/requests and /specload/live every
   2 s), while the tab's child process computes the figures;
4. `metrics`: headless with `--metrics-port`, scraped once a second as Prometheus does
   (`loadgen/prom_export.py` counts the rows on the users' loop).

Per run, over the measure windows, from the load process's `_client_stats.csv`: the
median and worst per-second event-loop lag p99, the share of lag-probe wake-ups later
than `records.CLIENT_LAG_LIMIT_MS` (the report flags a rung above 1%), the load
process's CPU; and the figures' child process's CPU. On a shared machine these move
with whatever else runs, so the modes alternate within each repeat; the direct answer
comes from gevent's own monitor (`GEVENT_MONITOR_THREAD_ENABLE`), which reports every
time one greenlet held the loop longer than `--blocking-ms`, with its stack: the
reports are counted by where they blocked (the tab's code, Locust's web UI, the rest).

    python scripts/bench_liveview.py                       # ~4 minutes
    python scripts/bench_liveview.py --ladder 20,100 --measure 30 --repeats 3
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

from specload.runfiles.records import CLIENT_LAG_LIMIT_MS, CLIENT_STATS_SUFFIX, RUNGS_SUFFIX
from specload.runner.processes import free_port
from specload.runner.sim_launcher import SimOptions, launch

REPO = Path(__file__).resolve().parents[1]
MODES = ("headless", "stats-tab", "tokens-tab", "metrics")
# Locust's web UI and the Tokens tab both refresh every 2 s; a Prometheus scrapes a sweep
# once a second (docs/distributed.md)
POLL_S = {"stats-tab": 2.0, "tokens-tab": 2.0, "metrics": 1.0}
ONCE = {"stats-tab": ["/"],
        "tokens-tab": ["/", "/specload/tokens_tab.js", "/specload/plotly.min.js"],
        "metrics": ["/metrics"]}
EVERY = {"stats-tab": ["/stats/requests"],
         "tokens-tab": ["/stats/requests", "/specload/live"], "metrics": ["/metrics"]}
# Where a blocked greenlet's stack was, by the files in it (first match wins).
BLOCKED_IN = {"blocked_in_tab": ("tokens_tab.py",),
              "blocked_in_export": ("prom_export.py", "prometheus_client"),
              "blocked_in_web_ui": ("locust/web.py", "/flask/", "pywsgi.py"),
              "blocked_elsewhere": ()}


def poll(base: str, mode: str, stop: threading.Event) -> None:
    """Request what a browser showing the mode's tab requests, until `stop`."""
    def get(path: str) -> bool:
        try:
            with urllib.request.urlopen(base + path, timeout=10) as resp:
                resp.read()
        except OSError:
            return False  # not up yet, or already gone
        return True

    while not get(ONCE[mode][0]):
        if stop.wait(0.2):
            return
    for path in ONCE[mode][1:]:
        get(path)
    while not stop.wait(POLL_S[mode]):
        for path in EVERY[mode]:
            get(path)


def child_cpu(proc: psutil.Process, seen: dict[int, float]) -> None:
    """Remember the CPU seconds of the load process's children (the figures' process)."""
    try:
        for child in proc.children(recursive=True):
            times = child.cpu_times()
            seen[child.pid] = times.user + times.system
    except psutil.NoSuchProcess:
        pass


def run(mode: str, sim_url: str, prefix: Path, args: argparse.Namespace) -> dict[str, float]:
    port = free_port()
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "ladder.py"),
           "--host", sim_url, "--csv", str(prefix), "--ladder", args.ladder,
           "--warmup", str(args.warmup), "--measure", str(args.measure),
           "--max-tokens", str(args.max_tokens), "--ignore-eos", "--only-summary"]
    cmd += (["--headless"] if mode == "headless" else
            ["--headless", "--metrics-port", str(port)] if mode == "metrics" else
            ["--autostart", "--autoquit", "1", "--web-port", str(port)])
    env = {**os.environ, "GEVENT_MONITOR_THREAD_ENABLE": "true",
           "GEVENT_MAX_BLOCKING_TIME": str(args.blocking_ms / 1000)}
    prefix.parent.mkdir(parents=True, exist_ok=True)
    log = prefix.parent / "locust.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fh, env=env)
    stop = threading.Event()
    poller = None
    if mode != "headless":
        poller = threading.Thread(target=poll, args=(f"http://127.0.0.1:{port}", mode, stop))
        poller.start()
    ps, seen = psutil.Process(proc.pid), {}
    while proc.poll() is None:
        child_cpu(ps, seen)
        time.sleep(0.5)
    stop.set()
    if poller is not None:
        poller.join()
    return (lag_figures(prefix) | {"child_cpu_s": sum(seen.values())}
            | blocked(log.read_text()))


def blocked(log: str) -> dict[str, float]:
    """gevent's reports of a greenlet holding the loop, by where its stack was."""
    counts = dict.fromkeys(BLOCKED_IN, 0.0)
    for report in log.split("appears to be blocked")[1:]:
        stack = report.split("Blocked Stack", 1)[-1].split("\n\n", 1)[0]
        where = next((k for k, marks in BLOCKED_IN.items() if any(m in stack for m in marks)),
                     "blocked_elsewhere")
        counts[where] += 1
    return counts


def lag_figures(prefix: Path) -> dict[str, float]:
    """The load process's lag and CPU over the measure windows of its rungs."""
    with open(f"{prefix}{RUNGS_SUFFIX}", newline="") as fh:
        windows = [(float(r["measure_start"]), float(r["measure_end"]))
                   for r in csv.DictReader(fh)]
    with open(f"{prefix}{CLIENT_STATS_SUFFIX}", newline="") as fh:
        rows = [r for r in csv.DictReader(fh)
                if any(a <= float(r["ts"]) <= b for a, b in windows)]
    p99 = [float(r["lag_p99_ms"]) for r in rows]
    late = sum(int(r["lag_late"]) for r in rows) / max(1, sum(int(r["lag_samples"])
                                                               for r in rows))
    return {"lag_p99_median_ms": statistics.median(p99), "lag_p99_max_ms": max(p99),
            "late_share": late, "cpu_mean": statistics.fmean(float(r["cpu_percent"])
                                                             for r in rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladder", default="20,60")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--measure", type=float, default=20.0)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--blocking-ms", type=float, default=5.0,
                        help="gevent reports a greenlet that holds the loop this long")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-liveview-"))
    sim = launch(SimOptions.of(profile="bench-20ms", spec="off"), folder / "sim.log")
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    try:
        for rep in range(args.repeats):
            for mode in MODES:
                got = run(mode, sim.url, folder / f"{mode}-{rep}" / "locust", args)
                results[mode].append(got)
                print(f"rep {rep + 1} {mode:10s} " + ", ".join(
                    f"{k} {v:.3g}" for k, v in got.items()), flush=True)
    finally:
        sim.stop()
    print(f"\nladder {args.ladder}, {args.measure:g} s windows, {args.repeats} repeats; "
          f"late = share of probe wake-ups more than {CLIENT_LAG_LIMIT_MS:g} ms late; "
          f"blocked = gevent's reports of the loop held > {args.blocking_ms:g} ms, by where")
    print(f"{'mode':12s} {'lag p99 median':>15s} {'lag p99 worst':>14s} {'late':>7s} "
          f"{'CPU %':>6s} {'child CPU s':>12s} {'blocked: tab':>13s} {'export':>7s} "
          f"{'web UI':>7s} {'elsewhere':>10s}")
    for mode, runs in results.items():
        mean = {k: statistics.fmean(r[k] for r in runs) for k in runs[0]}
        total = {k: sum(r[k] for r in runs) for k in BLOCKED_IN}
        print(f"{mode:12s} {mean['lag_p99_median_ms']:13.2f}ms "
              f"{max(r['lag_p99_max_ms'] for r in runs):12.1f}ms {100 * mean['late_share']:6.2f}% "
              f"{mean['cpu_mean']:6.1f} {mean['child_cpu_s']:12.1f} "
              f"{total['blocked_in_tab']:13.0f} {total['blocked_in_export']:7.0f} "
              f"{total['blocked_in_web_ui']:7.0f} "
              f"{total['blocked_elsewhere']:10.0f}")
    print(f"files in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
