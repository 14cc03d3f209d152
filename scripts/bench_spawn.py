#!/usr/bin/env python3
"""Benchmark the event-loop lag at rung starts, with and without the spawn fixes.

Each variant runs a headless Locust ladder (specload's ladder locustfile, 1 user, then
`--users` at once) on 1 or 2 load processes against one simulated server (`specload sim
--profile bench-20ms`: a 20 ms engine step, so every user's stream keeps a process busy)
with gevent's blocking monitor on (`GEVENT_MONITOR_THREAD_ENABLE`, a report for every
greenlet that keeps the loop over `--blocking-ms`). "before" undoes specload's patch of
Locust (`loadgen/spawn_message.py`) in its locustfile, so each worker re-parses Locust's
options once per key of every spawn message again, as Locust 2.47 does. Printed per
variant: the largest per-second lag p99 (`_client_stats.csv`, the probe's 10 ms ticks)
in the first 3 s of the big rung and in the rest of it, the monitor's reports, and the
ratio before / after of the rung-start lag. A last part, in this process, times the
longest wait of a greenlet standing in for a stream while Locust's spawn loop creates one
spawn message's users (`--message-users`), with the users created in batches that yield
(`loadgen/spawn_batches.py`) and with one batch as large as the message ("before").

    python scripts/bench_spawn.py                 # ~2 minutes
    python scripts/bench_spawn.py --users 250 --processes 1,2
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gevent
from locust.argument_parser import get_parser
from locust.env import Environment

from specload.loadgen import locustfile_ladder, plugin, spawn_batches
from specload.loadgen.users import ChatStreamUser
from specload.runfiles.records import CLIENT_STATS_SUFFIX, RUNGS_SUFFIX
from specload.runner.processes import free_port
from specload.runner.sim_launcher import SimOptions, launch

START_S = 3.0  # the rung-start span: the spawn messages of a 100-users-per-second ramp
UNDO = '''
from specload.loadgen.locustfile_ladder import *  # noqa: F403
from locust import argument_parser
argument_parser.default_args_dict = getattr(
    argument_parser.default_args_dict, "__wrapped__", argument_parser.default_args_dict)
'''


def run(folder: Path, host: str, users: int, processes: int, before: bool,
        blocking_ms: float) -> dict[str, float]:
    """One Locust ladder; the lag at the big rung's start and after, and the reports."""
    name = f"{'before' if before else 'after'}-p{processes}"
    locustfile = Path(locustfile_ladder.__file__)
    if before:
        locustfile = folder / f"{name}.py"
        locustfile.write_text(UNDO)
    prefix = folder / name / "locust"
    prefix.parent.mkdir()
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless",
           "--only-summary", "--csv", str(prefix), "--host", host, "--ladder", f"1,{users}",
           "--warmup", "3", "--measure", "5", "--min-requests", "1", "--max-tokens", "64",
           "--ignore-eos"]
    if processes > 1:
        port = str(free_port())
        cmd += ["--processes", str(processes), "--master-bind-host", "127.0.0.1",
                "--master-bind-port", port, "--master-port", port]
    env = {**os.environ, "GEVENT_MONITOR_THREAD_ENABLE": "true",
           "GEVENT_MAX_BLOCKING_TIME": str(blocking_ms / 1000)}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    with open(f"{prefix}{RUNGS_SUFFIX}", newline="") as fh:
        rung = next(r for r in csv.DictReader(fh) if int(r["users"]) == users)
    start, end = float(rung["warmup_start"]), float(rung["measure_end"])
    with open(f"{prefix}{CLIENT_STATS_SUFFIX}", newline="") as fh:
        rows = [(float(r["ts"]), float(r["lag_p99_ms"])) for r in csv.DictReader(fh)]
    # a row covers the second before its stamp
    at_start = [lag for ts, lag in rows if start < ts <= start + START_S + 1]
    later = [lag for ts, lag in rows if start + START_S + 1 < ts <= end]
    return {"start": max(at_start, default=float("nan")),
            "later": max(later, default=float("nan")),
            "reports": done.stderr.count("appears to be blocked")}


def one_message(env: Environment, users: int) -> float:
    """The longest a ready greenlet waited (ms) while the spawn loop created `users`."""
    waits: list[float] = []
    made: list[ChatStreamUser] = []

    def spawn() -> None:
        made.extend(ChatStreamUser(env) for _ in range(users))

    def stream() -> None:
        while len(made) < users:
            t = time.perf_counter()
            gevent.sleep(0)
            waits.append(time.perf_counter() - t)

    gevent.joinall([gevent.spawn(stream), gevent.spawn(spawn)])
    return 1000 * max(waits)


def longest_wait(users: int, batch: int, rounds: int = 5) -> float:
    """`one_message` with the users created in batches of `batch`; the best of `rounds`."""
    plugin.install()
    host = "http://127.0.0.1:9"  # never contacted: the users are created, not started
    env = Environment(user_classes=[ChatStreamUser], host=host,
                      parsed_options=get_parser().parse_args(["--host", host]))
    ChatStreamUser.host = host
    kept, spawn_batches.BATCH = spawn_batches.BATCH, batch
    try:
        return min(one_message(env, users) for _ in range(rounds))
    finally:
        spawn_batches.BATCH = kept


def ladder_part(args: argparse.Namespace) -> None:
    """The Locust runs, before and after, per process count."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sim = launch(SimOptions.of(profile="bench-20ms", spec="off", port=free_port()),
                     folder / "sim.log")
        try:
            print(f"C = {args.users}, lag p99 per second (ms): the rung's first "
                  f"{START_S:g} s, then the rest; monitor reports over {args.blocking_ms:g} ms")
            print(f"{'variant':<12} {'start':>7} {'later':>7} {'reports':>8}")
            results = {}
            for processes in (int(p) for p in args.processes.split(",")):
                for before in (True, False):
                    got = run(folder, sim.url, args.users, processes, before, args.blocking_ms)
                    results[(processes, before)] = got
                    label = f"{'before' if before else 'after'} p={processes}"
                    print(f"{label:<12} {got['start']:>7.1f} {got['later']:>7.1f} "
                          f"{got['reports']:>8}", flush=True)
            for processes in sorted({p for p, _ in results}):
                ratio = results[(processes, False)]["start"] / results[(processes, True)]["start"]
                print(f"p={processes}: rung-start lag after / before = {ratio:.2f}")
        finally:
            sim.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=250)
    parser.add_argument("--processes", default="1,2",
                        help="comma-separated load-process counts")
    parser.add_argument("--blocking-ms", type=float, default=20.0,
                        help="the blocking monitor's threshold")
    parser.add_argument("--message-users", default="100,250",
                        help="users in one spawn message, for the in-process part "
                             "(comma-separated)")
    parser.add_argument("--parts", default="ladder,message",
                        help="which parts to run: ladder (the Locust runs), message")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if "ladder" in parts:
        ladder_part(args)
    for n in (int(u) for u in args.message_users.split(",") if "message" in parts):
        before = longest_wait(n, n)
        after = longest_wait(n, spawn_batches.BATCH)
        print(f"one spawn message of {n} users, longest wait of a ready greenlet (ms): "
              f"before {before:.2f}, after {after:.2f} (batches of {spawn_batches.BATCH}); "
              f"after / before = {after / before:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
