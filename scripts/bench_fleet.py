#!/usr/bin/env python3
"""Benchmark a load fleet against the server's own trace: does C concurrent streams stay true?

Four test hosts on this machine (network namespaces on a private bridge,
`tests/support/netns.py`; needs root): a master running `specload sweep`, two load
machines each running `specload worker --processes 2` (the second with its clock
`--offset-s` ahead, through the `SPECLOAD_CLOCK_OFFSET_S` test seam), and a server
running the simulator with its ground-truth trace. The simulator's profile is
`bench-20ms` with the step set by `--step-ms`, so every slot of the 4,096 streams at a
known pace and C users receive C / step chunks per second. One arm, one ladder;
per rung it prints:
- system tok/s as the report computes it against the tokens the server emitted in the
  same window (the report's `trace_ratio`);
- TTFT error per request: the client's TTFT minus the trace's (first chunk's emit time
  minus the kernel receive time of the request), p50, p99 and max;
- each load process's worst CPU (% of one core) and per-second event-loop lag p99 over
  the measure window, and its worst lag in the rung's first seconds (the spawn).
A rung "stays true" when tok/s is within 1% of the trace and the TTFT error p99 is at
most 5 ms; the last line names the largest C that does.

    sudo python scripts/bench_fleet.py                     # ladder 100,250,500,1000
    sudo python scripts/bench_fleet.py --ladder 50,200 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the test hosts live with the tests: tests/support/netns.py

from specload.report import render  # noqa: E402
from specload.report.load_health import client_row  # noqa: E402
from specload.report.run_files import read_rep  # noqa: E402
from specload.report.windows import Window  # noqa: E402
from specload.runfiles.records import SERVER_TRACE_NAME  # noqa: E402
from specload.runner.sim_launcher import SimOptions, launch  # noqa: E402
from tests.support import netns  # noqa: E402
from tests.support.sweeps import run_dir_of  # noqa: E402

TOK_S_BOUND = 0.01
TTFT_P99_BOUND_MS = 5.0
SPAWN_S = 3.0  # the rung-start span whose lag is shown apart
MASTER_PORT = 5557
WORKER_LOG = "worker-"
# the header of a gevent blocking-monitor report (gevent/_monitor.py), to the second
BLOCKED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) : Greenlet .* appears to be blocked")


def profile_file(folder: Path, step_ms: float) -> Path:
    """`bench-20ms` with another fixed step."""
    path = folder / f"bench-{step_ms:g}ms.yaml"
    path.write_text(yaml.safe_dump({"extends": "bench-20ms",
                                    "overheads": {"step_s": step_ms / 1000}}))
    return path


def scenario(args: argparse.Namespace, master_ip: str, url: str) -> dict[str, Any]:
    return {
        "name": "fleet",
        "ladder": args.ladder,
        "warmup_s": args.warmup_s,
        "measure_s": args.measure_s,
        "drain_s": 30,
        "request": {"output_tokens": args.output_tokens, "ignore_eos": True},
        "distributed": {"workers": 4, "master_bind_host": master_ip,
                        "master_bind_port": MASTER_PORT, "workers_wait_s": 60},
        "arms": [{"name": "fleet", "url": url, "spec": "off"}],
    }


def start_worker(folder: Path, host: netns.Host, master_ip: str,
                 env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = host.command([sys.executable, "-m", "specload.cli", "worker", master_ip,
                        "--port", str(MASTER_PORT), "--processes", "2"])
    log = (folder / f"{WORKER_LOG}{host.ip}.log").open("w")
    return subprocess.Popen(cmd, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, **env})


def run_sweep(master: netns.Host, sc: Path, folder: Path,
              loads: dict[str, netns.Host]) -> tuple[subprocess.CompletedProcess[str],
                                                     dict[str, str]]:
    """`specload sweep` on the master; meanwhile, which load machine each `client_id`
    (host name and pid) belongs to (a worker restarts its Locust processes when a master
    leaves, so they are named while they run)."""
    out = folder / "sweep.out"
    name = socket.gethostname()
    hosts: dict[str, str] = {}
    with out.open("w") as fh:
        proc = subprocess.Popen(
            master.command([sys.executable, "-m", "specload.cli", "sweep", str(sc),
                            "--out", str(folder / "out")]),
            cwd=folder, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        while proc.poll() is None:
            for role, host in loads.items():
                hosts |= {f"{name}-{pid}": role for pid in host.pids()}
            time.sleep(0.5)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.read_text(), ""), hosts


def run(args: argparse.Namespace, folder: Path) -> tuple[Path, dict[str, str]]:
    """Run the sweep on the four hosts; the run folder and which host each process is."""
    with netns.Network() as net:
        master, load_a, load_b, server = (net.add(r) for r in
                                          ("master", "load-a", "load-b", "server"))
        sim = launch(SimOptions.of(profile=str(profile_file(folder, args.step_ms)), spec="off",
                                   host=server.ip, port=0, trace_path=folder / "trace.jsonl",
                                   wrapper=server.command(())), folder / "sim.log")
        workers = []
        try:
            sc = folder / "fleet.yaml"
            sc.write_text(json.dumps(scenario(args, master.ip, sim.url)))
            monitor = ({"GEVENT_MONITOR_THREAD_ENABLE": "true",
                        "GEVENT_MAX_BLOCKING_TIME": str(args.monitor_ms / 1000)}
                       if args.monitor_ms else {})
            workers = [start_worker(folder, load_a, master.ip, monitor),
                       start_worker(folder, load_b, master.ip,
                                    {**monitor, "SPECLOAD_CLOCK_OFFSET_S": str(args.offset_s)})]
            print(f"server {sim.url}, step {args.step_ms:g} ms; ladder {args.ladder}; "
                  f"load-b's clock {args.offset_s:+g} s", flush=True)
            sweep, hosts = run_sweep(master, sc, folder, {"load-a": load_a, "load-b": load_b})
        finally:
            for proc in workers:
                kill_group(proc)
            sim.stop()
        if sweep.returncode != 0:
            raise SystemExit(f"bench_fleet: the sweep failed ({sweep.returncode}):\n"
                             f"{sweep.stdout[-3000:]}{sweep.stderr[-3000:]}")
        run_dir = folder / run_dir_of(sweep.stdout)
        shutil.copy(folder / "trace.jsonl", run_dir / "fleet" / SERVER_TRACE_NAME)
        return run_dir, hosts


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def ttft_errors(requests: pd.DataFrame, trace: dict[str, tuple[float, float]],
                w: Window) -> np.ndarray:
    """Client TTFT minus the trace's, in ms, for requests sent inside the window."""
    inside = requests[(requests["start"] >= w.start) & (requests["start"] < w.end)
                      & requests["ttft_ms"].notna()]
    errs = [ttft - 1000 * (trace[rid][1] - trace[rid][0])
            for rid, ttft in zip(inside["request_id"], inside["ttft_ms"], strict=True)
            if rid in trace]
    return np.asarray(errs, dtype=float)


def blocked_at(folder: Path) -> list[float]:
    """When the load machines' blocking monitors reported a held loop (epoch s)."""
    return [datetime.fromisoformat(m[1].replace("Z", "+00:00")).timestamp()
            for log in folder.glob(f"{WORKER_LOG}*.log")
            for m in map(BLOCKED.match, log.read_text().splitlines()) if m]


def offsets(run_dir: Path, hosts: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each load process's clock offset as the master measured it (median of rounds)."""
    rounds = pd.read_csv(run_dir / "fleet" / "locust_clock.csv")
    return {cid: {"host": hosts.get(cid, "?"), "offset_s": float(g["offset_s"].median()),
                  "rounds": len(g)} for cid, g in rounds.groupby("client_id")}


def measure(run_dir: Path, hosts: dict[str, str],
            blocked: list[float]) -> list[dict[str, Any]]:
    """One result per rung; see the module docstring."""
    report = render.build(run_dir)
    data = read_rep(run_dir / "fleet" / "locust")
    # the reader keeps no request ids; its rows are the file's, in the file's order
    data.requests["request_id"] = pd.read_csv(run_dir / "fleet" / "locust_requests.csv",
                                              usecols=["request_id"])["request_id"].to_numpy()
    trace = {}
    with (run_dir / "fleet" / SERVER_TRACE_NAME).open("rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            if rec.get("first_token") is not None:
                trace[rec["request_id"]] = (rec["arrival"], rec["first_token"])
    client = data.client
    assert client is not None, "no _client_stats.csv"
    assert data.rungs is not None, "no _rungs.csv"
    warmup_start = dict(zip(data.rungs["rung"], data.rungs["warmup_start"], strict=True))
    rungs = []
    for r in report.per_rep.sort_values("concurrency").itertuples():
        w = Window(int(r.rung), int(r.concurrency), float(r.window_start),
                   float(r.window_start) + float(r.window_s))
        errs = ttft_errors(data.requests, trace, w)
        began = float(warmup_start[w.rung])
        # a report is stamped to the second, after the hold it reports
        reports = sum(began <= t < w.end + 1 for t in blocked)
        spawn = Window(w.rung, w.users, began, began + SPAWN_S)
        procs = []
        for cid in sorted(set(client["client_id"])):
            own = client[client["client_id"] == cid]
            held, at_start = client_row(own, w), client_row(own, spawn)
            procs.append({"host": hosts.get(cid, "?"), "client_id": cid,
                          "cpu_max": held["client_cpu_max"],
                          "lag_p99_ms": held["client_lag_p99_max_ms"],
                          "spawn_lag_p99_ms": at_start["client_lag_p99_max_ms"]})
        ok = (abs(r.trace_ratio - 1) <= TOK_S_BOUND and len(errs)
              and float(np.percentile(errs, 99)) <= TTFT_P99_BOUND_MS)
        rungs.append({"c": w.users, "tok_s": float(r.output_tok_s),
                      "trace_tok_s": float(r.trace_tok_s), "requests": len(errs),
                      "ttft_err_p50_ms": float(np.percentile(errs, 50)) if len(errs) else None,
                      "ttft_err_p99_ms": float(np.percentile(errs, 99)) if len(errs) else None,
                      "ttft_err_max_ms": float(errs.max()) if len(errs) else None,
                      "processes": procs, "blocked_reports": reports, "true": bool(ok)})
    return rungs


def show(rungs: list[dict[str, Any]], clocks: dict[str, dict[str, Any]],
         monitor_ms: float) -> None:
    print("clock offsets measured: " + ", ".join(
        f"{c['host']} {c['offset_s']:+.4f} s ({c['rounds']} rounds)"
        for _, c in sorted(clocks.items(), key=lambda kv: kv[1]["host"])))
    print(f"{'C':>5} {'tok/s':>9} {'trace':>9} {'diff %':>7} {'reqs':>6} "
          f"{'TTFT err p50':>12} {'p99':>6} {'max':>6}  true")
    for r in rungs:
        diff = 100 * (r["tok_s"] / r["trace_tok_s"] - 1)
        print(f"{r['c']:>5} {r['tok_s']:>9.1f} {r['trace_tok_s']:>9.1f} {diff:>+7.2f} "
              f"{r['requests']:>6} {r['ttft_err_p50_ms']:>12.2f} {r['ttft_err_p99_ms']:>6.2f} "
              f"{r['ttft_err_max_ms']:>6.2f}  {'yes' if r['true'] else 'NO'}")
    print("per load process: CPU max % of a core / lag p99 max ms in the measure window / "
          f"lag p99 max ms in the rung's first {SPAWN_S:g} s")
    for r in rungs:
        cells = "  ".join(f"{p['host']}:{p['cpu_max']:.0f}%/{p['lag_p99_ms']:.1f}/"
                          f"{p['spawn_lag_p99_ms']:.1f}" for p in r["processes"])
        held = (f"  monitor: {r['blocked_reports']} holds over {monitor_ms:g} ms"
                if monitor_ms else "")
        print(f"{r['c']:>5}  {cells}{held}")
    held = [r["c"] for r in rungs if r["true"]]
    top = max(held, default=None)
    print(f"largest C that stays true: {top if top is not None else 'none'}"
          f" (tok/s within {100 * TOK_S_BOUND:g}% of the trace, TTFT error p99 <= "
          f"{TTFT_P99_BOUND_MS:g} ms)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladder", default="100,250,500,1000",
                        type=lambda s: [int(c) for c in s.split(",")])
    parser.add_argument("--step-ms", type=float, default=100.0,
                        help="the simulated engine step (C users: C / step chunks/s)")
    parser.add_argument("--output-tokens", default="uniform:16:48",
                        help="reply lengths (drawn: replies of one length march in lockstep)")
    parser.add_argument("--warmup-s", type=float, default=8.0)
    parser.add_argument("--measure-s", type=float, default=15.0)
    parser.add_argument("--offset-s", type=float, default=3.0,
                        help="how far load-b's clock is ahead")
    parser.add_argument("--monitor-ms", type=float, default=20.0,
                        help="gevent's blocking monitor in every load process: count the "
                             "loop holds longer than this in each rung (0: off)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="keep the run folder here")
    args = parser.parse_args(argv)
    reason = netns.unavailable()
    if reason:
        print(f"bench_fleet: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.monotonic()
        run_dir, hosts = run(args, folder)
        rungs = measure(run_dir, hosts, blocked_at(folder))
        clocks = offsets(run_dir, hosts)
        print(f"ran in {time.monotonic() - started:.0f} s")
        show(rungs, clocks, args.monitor_ms)
        if args.json:
            args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                             "clocks": clocks, "rungs": rungs}, indent=1))
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
