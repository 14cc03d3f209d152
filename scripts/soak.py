#!/usr/bin/env python3
"""Soak test: many streaming users against the simulated server, under faults and churn.

Starts one `specload sim` process (writing its ground-truth trace) and a headless Locust
run (`locustfiles/chat.py`, per-request records on) with `--users` users for
`--duration` seconds: one process, or a master with `--processes` worker processes
started as load machines start theirs (`locust --worker`). Options add what real
clusters do to a long run:
- `--faults F`: the simulator fails a seeded share F of the requests, evenly over every
  fault kind it has (an HTTP 500, 400 or 429, an empty or cut stream, a stall before the
  first byte or between chunks longer than the users' request timeout, a malformed chunk,
  an error event);
- `--churn-every S`: every S seconds one worker is killed (SIGKILL) and a new one
  started in its place, which the master rebalances users onto.

It samples the resident memory (RSS) of every process twice a second once it has settled
(`--settle` seconds after it started) until the end (or its kill), and compares the
lowest RSS of its first and last `FLOOR_WINDOW_S` seconds: the simulator returns freed
heap pages every `TRIM_PERIOD_S`, so its RSS is a sawtooth whose floor is its live heap,
and a single sample at each end would compare points of that sawtooth instead. It prints
one row per process, then checks the records against the server's trace:
- lost: requests the server completed that are in no record, apart from those a kill
  can take (in flight at the kill, or ended within a row-shipping interval before it);
- duplicated: request ids recorded twice;
- every injected fault recorded as the failure its kind makes (`CLIENT_ERROR_KINDS`),
  every other request a success (or interrupted at the end).
PASS needs every process within `--max-growth` percent RSS growth, nothing lost or
duplicated, and every fault where it belongs. Exit status 0 on PASS, 1 on FAIL.

    python scripts/soak.py                                   # 250 users, 10 minutes
    python scripts/soak.py --duration 120 --faults 0.05 --churn-every 60   # what CI runs
    python scripts/soak.py --duration 3600 --faults 0.05 --churn-every 600
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from specload.loadgen.recorder import SHIP_INTERVAL_S
from specload.runner.processes import free_port
from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch
from specload.sim.faults import CLIENT_ERROR_KINDS
from specload.sim.heap_trim import TRIM_PERIOD_S

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
STALL_S = 6.0  # the stall faults' length, twice the users' request timeout
REQUEST_TIMEOUT_S = 3.0  # a busy machine's slowest chunk gap stays well inside it
KILL_MARGIN_S = 1.0  # clocks and scheduling around a kill
FLOOR_WINDOW_S = TRIM_PERIOD_S + 6.0  # holds one trim even when the loop runs late
SAMPLE_EVERY_S = 0.5


@dataclass
class Sample:
    """One process's RSS over its settled life: (seconds since it started, bytes)."""

    role: str
    proc: subprocess.Popen | psutil.Process
    born: float = field(default_factory=time.monotonic)
    rss: list[tuple[float, int]] = field(default_factory=list)
    killed: bool = False
    died: bool = False  # exited on its own before the end

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not (self.killed or self.died)

    def take(self, now: float) -> None:
        """One sample of a live process; one that has exited on its own has died."""
        value = rss(self.pid)
        if value is None:
            self.died = True
        else:
            self.rss.append((now - self.born, value))

    @property
    def start(self) -> int | None:
        return floor(self.rss, first=True)

    @property
    def end(self) -> int | None:
        return None if self.died else floor(self.rss, first=False)

    @property
    def growth_pct(self) -> float | None:
        if self.end is None or not self.start:
            return None
        return 100.0 * (self.end - self.start) / self.start


def floor(series: list[tuple[float, int]], first: bool) -> int | None:
    """The lowest RSS within `FLOOR_WINDOW_S` of the series' first (or last) sample."""
    if not series:
        return None
    edge = series[0][0] + FLOOR_WINDOW_S if first else series[-1][0] - FLOOR_WINDOW_S
    inside = [v for t, v in series if (t <= edge if first else t >= edge)]
    return min(inside)


@dataclass
class Fleet:
    """The Locust processes of the run and when each worker was killed."""

    master: subprocess.Popen
    port: int = 0  # the master's, for workers to join
    workers: list[subprocess.Popen] = field(default_factory=list)
    kills: list[float] = field(default_factory=list)  # epoch s


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=250)
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    p.add_argument("--processes", type=int, default=2,
                   help="Locust worker processes (1: a single process, no master)")
    p.add_argument("--profile", default="h100-llama8b-eagle3")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--faults", type=float, default=0.0,
                   help="share of requests the simulator fails, over every fault kind")
    p.add_argument("--churn-every", type=float, default=0.0, metavar="S",
                   help="kill a worker and start a new one every S seconds (0: never)")
    p.add_argument("--seed", type=int, default=0, help="the simulator's (faults) seed")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds after a process starts before its first sample "
                   "(default: 20%% of the duration, at most 60)")
    p.add_argument("--max-growth", type=float, default=10.0, help="allowed RSS growth, %%")
    p.add_argument("--out", default=None, help="folder for the Locust CSVs (default: temp)")
    args = p.parse_args(argv)
    if args.users < 1 or args.duration < 10 or args.processes < 1:
        p.error("need --users >= 1, --duration >= 10 and --processes >= 1")
    if not 0 <= args.faults <= 1:
        p.error("--faults is a share of the requests, from 0 to 1")
    if args.churn_every and (args.processes < 2 or args.churn_every < 10):
        p.error("--churn-every needs --processes 2 or more and at least 10 s")
    if args.settle is None:
        args.settle = min(60.0, 0.2 * args.duration)
    if args.settle >= args.duration - 5:
        p.error("--settle must end at least 5 s before --duration")
    return args


def fault_specs(share: float) -> tuple[str, ...]:
    """`--fault` options failing `share` of the requests, evenly over every kind."""
    if not share:
        return ()
    each = share / len(CLIENT_ERROR_KINDS)
    params = {"stall_first_byte": STALL_S, "stall_between": STALL_S}
    return tuple(f"{kind}:{each:.6g}" + (f":{params[kind]:g}" if kind in params else "")
                 for kind in CLIENT_ERROR_KINDS)


def start_sim(args: argparse.Namespace, out: Path) -> SimProcess:
    options = SimOptions.of(profile=args.profile, spec="on", seed=args.seed,
                            faults=fault_specs(args.faults), trace_path=out / "trace.jsonl")
    try:
        return launch(options, out / "sim.log")
    except LaunchError as exc:
        sys.exit(f"soak: the simulated server did not start: {exc}")


def _locust(args: list[str], log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "chat.py"), *args]
    with log.open("ab") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)


def start_fleet(args: argparse.Namespace, url: str, out: Path) -> Fleet:
    run = ["--headless", "--only-summary", "--exit-code-on-error", "0",
           "-u", str(args.users), "-r", str(args.users), "-t", f"{args.duration:.0f}s",
           "--host", url, "--csv", str(out / "soak"), "--max-tokens", str(args.max_tokens),
           "--ignore-eos"]
    if args.faults:
        run += ["--request-timeout", f"{REQUEST_TIMEOUT_S:g}"]
    if args.processes == 1:
        return Fleet(_locust(run, out / "locust.log"))
    port = free_port()
    master = _locust([*run, "--master", "--master-bind-host", "127.0.0.1",
                      "--master-bind-port", str(port), "--expect-workers",
                      str(args.processes), "--enable-rebalancing"], out / "locust.log")
    fleet = Fleet(master, port)
    for _ in range(args.processes):
        fleet.workers.append(start_worker(port, out))
    return fleet


def start_worker(port: int, out: Path) -> subprocess.Popen:
    return _locust(["--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                   out / "workers.log")


def rss(pid: int) -> int | None:
    """Resident memory of a live process; None once it has exited (or is a zombie)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.memory_info().rss or None
    except psutil.NoSuchProcess:
        return None


def stop(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def drive(args: argparse.Namespace, fleet: Fleet, samples: list[Sample], out: Path) -> None:
    """Run until the end: sample each settled process's RSS, churn the workers."""
    t0 = time.monotonic()
    end = t0 + args.duration - 3
    next_churn = t0 + args.churn_every if args.churn_every else float("inf")
    churned = 0
    while (now := time.monotonic()) < end:
        for s in samples:
            if s.alive and now - s.born >= args.settle:
                s.take(now)
        if now >= next_churn and now < end - args.settle:  # its successor can settle
            next_churn += args.churn_every
            victim = next(s for s in samples if s.role.startswith("locust worker")
                          and not s.killed and s.proc in fleet.workers)
            victim.take(time.monotonic())
            fleet.kills.append(time.time())
            os.killpg(victim.pid, signal.SIGKILL)
            victim.killed = True
            fleet.workers.remove(victim.proc)
            churned += 1
            new = start_worker(fleet.port, out)
            fleet.workers.append(new)
            samples.append(Sample(f"locust worker {args.processes + churned}", new))
        time.sleep(SAMPLE_EVERY_S)
    for s in samples:
        if s.alive:
            s.take(time.monotonic())


def table(samples: list[Sample]) -> str:
    lines = [f"{'process':<17} {'pid':>7} {'rss start MiB':>14} {'rss end MiB':>12} "
             f"{'growth':>8}"]
    for s in samples:
        start = "-" if s.start is None else f"{s.start / MIB:.1f}"
        end = "died" if s.end is None else f"{s.end / MIB:.1f}" + (" k" if s.killed else "")
        growth = "-" if s.growth_pct is None else f"{s.growth_pct:+.1f}%"
        lines.append(f"{s.role:<17} {s.pid:>7} {start:>14} {end:>12} {growth:>8}")
    return "\n".join(lines)


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError:
        return []


def _trace(path: Path) -> list[dict]:
    with path.open("rb") as fh:
        return [json.loads(line) for line in fh if line.endswith(b"\n")]


@dataclass
class Truth:
    """The records held against the server's trace."""

    requests: int
    lost: list[str]
    excused: int  # not recorded, but within a kill's reach
    duplicated: list[str]
    faults: Counter  # injected fault kind -> requests
    misrecorded: list[str]  # "<id>: <fault> recorded as <kind>"
    kinds: Counter  # recorded error kinds


def check(out: Path, kills: list[float]) -> Truth:
    rows = _rows(out / "soak_requests.csv")
    trace = _trace(out / "trace.jsonl")
    ids = Counter(r["request_id"] for r in rows)
    by_id = {r["request_id"]: r for r in rows}
    reach = SHIP_INTERVAL_S + KILL_MARGIN_S

    def near_a_kill(t: dict) -> bool:
        return any(t["arrival"] - KILL_MARGIN_S <= k and t["end"] >= k - reach for k in kills)

    lost, excused, misrecorded = [], 0, []
    for t in trace:
        row = by_id.get(t["request_id"])
        if row is None:
            if near_a_kill(t):
                excused += 1
            else:
                lost.append(t["request_id"])
            continue
        if row["interrupted"] != "0" or row["error_kind"] == "interrupted":
            continue
        want = CLIENT_ERROR_KINDS.get(t["fault"] or "", "")
        if row["error_kind"] != want:
            misrecorded.append(f"{t['request_id']}: {t['fault'] or 'no fault'} recorded as "
                               f"{row['error_kind'] or 'a success'}")
    return Truth(len(trace), lost, excused, [i for i, n in ids.items() if n > 1],
                 Counter(t["fault"] for t in trace if t["fault"]), misrecorded,
                 Counter(r["error_kind"] for r in rows if r["error_kind"]))


def verdict(args: argparse.Namespace, samples: list[Sample], truth: Truth) -> list[str]:
    problems = [f"{s.role} grew {s.growth_pct:.1f}%" for s in samples
                if s.growth_pct is not None and s.growth_pct > args.max_growth]
    problems += [f"{s.role} died" for s in samples if s.end is None and not s.killed]
    if not any(s.role == "sim" and s.start for s in samples):
        problems.append("the simulated server was not running when sampled")
    if truth.requests == 0:
        problems.append("the server completed no request")
    if truth.lost:
        problems.append(f"{len(truth.lost)} request(s) lost, e.g. {truth.lost[:3]}")
    if truth.duplicated:
        problems.append(f"{len(truth.duplicated)} request(s) recorded twice")
    if truth.misrecorded:
        problems.append(f"{len(truth.misrecorded)} request(s) misrecorded, e.g. "
                        f"{truth.misrecorded[:3]}")
    missing = {k for k in truth.faults if CLIENT_ERROR_KINDS[k] not in truth.kinds}
    if missing:
        problems.append(f"fault kind(s) injected but never recorded: {sorted(missing)}")
    return problems


def run(args: argparse.Namespace, out: Path) -> int:
    sim = start_sim(args, out)
    fleet: Fleet | None = None
    samples: list[Sample] = []
    try:
        fleet = start_fleet(args, sim.url, out)
        samples = [Sample("sim", sim.proc),
                   Sample("locust master" if fleet.workers else "locust", fleet.master)]
        samples += [Sample(f"locust worker {i}", w) for i, w in enumerate(fleet.workers, 1)]
        drive(args, fleet, samples, out)
        fleet.master.wait(timeout=120)
    finally:
        if fleet is not None:
            for proc in [fleet.master, *fleet.workers]:
                stop(proc)
        sim.stop(timeout=30)
    truth = check(out, fleet.kills if fleet else [])
    print(f"soak: {args.users} users, {args.duration:.0f} s, {args.processes} Locust "
          f"process(es), profile {args.profile}, max_tokens {args.max_tokens}, faults "
          f"{args.faults:g}, churn every {args.churn_every:g} s; RSS: each process's lowest "
          f"in its first and last {FLOOR_WINDOW_S:.0f} s from {args.settle:.0f} s after it "
          f"started to {args.duration - 3:.0f} s (k: to its kill)")
    print(table(samples))
    span = args.duration - 3 - args.settle
    if span < 2 * FLOOR_WINDOW_S:
        print(f"note: {span:.0f} s of settled samples hold less than two {FLOOR_WINDOW_S:.0f} s "
              "windows, so the memory check compares overlapping ones (a longer --duration "
              "tells growth apart)")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(truth.kinds.items())) or "none"
    print(f"requests {truth.requests} (server trace), lost {len(truth.lost)}, excused "
          f"{truth.excused} (at {len(fleet.kills if fleet else [])} kill(s)), duplicated "
          f"{len(truth.duplicated)}; faults injected {sum(truth.faults.values())}, "
          f"misrecorded {len(truth.misrecorded)}; failures by kind: {kinds}")
    problems = verdict(args, samples, truth)
    print(f"FAIL: {'; '.join(problems)}" if problems
          else f"PASS: every process within {args.max_growth:g}% RSS growth, nothing lost "
               "or duplicated, every fault recorded as its kind")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        return run(args, out)
    with tempfile.TemporaryDirectory(prefix="specload-soak-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
