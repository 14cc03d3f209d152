#!/usr/bin/env python3
"""Soak test: many streaming users against the simulated server; memory must stay flat.

Starts one `specload sim` process and one headless Locust run (`locustfiles/chat.py`,
`--processes N`, per-request records on) with `--users` users for `--duration` seconds,
samples the resident memory (RSS) of every process involved (the simulator, the Locust
master and each worker) once the users are spawned and the caches have filled (after
`--settle` seconds) and again just before the end, prints one table row per process and
PASS when no process grew by more than `--max-growth` percent (FAIL otherwise, or when a
process died or no request succeeded). Exit status 0 on PASS, 1 on FAIL.

    python scripts/soak.py                       # 250 users, 10 minutes
    python scripts/soak.py --duration 60         # what CI runs
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


@dataclass
class Sample:
    """One process's RSS at the start and end of the measured span."""

    role: str
    pid: int
    start: int
    end: int | None = None

    @property
    def growth_pct(self) -> float | None:
        if self.end is None or self.start <= 0:
            return None
        return 100.0 * (self.end - self.start) / self.start


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=250)
    p.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    p.add_argument("--processes", type=int, default=2, help="Locust worker processes")
    p.add_argument("--profile", default="h100-llama8b-eagle3")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--settle", type=float, default=None,
                   help="seconds after spawning before the first sample "
                   "(default: 20%% of the duration, at most 60)")
    p.add_argument("--max-growth", type=float, default=10.0, help="allowed RSS growth, %%")
    p.add_argument("--out", default=None, help="folder for the Locust CSVs (default: temp)")
    args = p.parse_args(argv)
    if args.users < 1 or args.duration < 10 or args.processes < 1:
        p.error("need --users >= 1, --duration >= 10 and --processes >= 1")
    if args.settle is None:
        args.settle = min(60.0, 0.2 * args.duration)
    if args.settle >= args.duration - 5:
        p.error("--settle must end at least 5 s before --duration")
    return args


def start_sim(profile: str, log: Path) -> SimProcess:
    try:
        return launch(SimOptions(profile=profile, spec="on"), log)
    except LaunchError as exc:
        sys.exit(f"soak: the simulated server did not start: {exc}")


def start_locust(args: argparse.Namespace, url: str, out: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "chat.py"),
           "--headless", "--only-summary", "--exit-code-on-error", "0",
           "-u", str(args.users), "-r", str(args.users), "-t", f"{args.duration:.0f}s",
           "--host", url, "--csv", str(out / "soak"), "--max-tokens", str(args.max_tokens),
           "--ignore-eos"]
    if args.processes > 1:
        cmd += ["--processes", str(args.processes), "--master-bind-host", "127.0.0.1"]
    with (out / "locust.log").open("wb") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)


def processes(sim: subprocess.Popen, locust: subprocess.Popen) -> dict[int, str]:
    """pid -> role of every process to watch."""
    try:
        children = psutil.Process(locust.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    found = {sim.pid: "sim", locust.pid: "locust master" if children else "locust"}
    for i, child in enumerate(sorted(children, key=lambda c: c.pid), start=1):
        found[child.pid] = f"locust worker {i}"
    return found


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


def request_totals(out: Path) -> tuple[int, int]:
    """(requests, failures) of the run, from Locust's aggregated stats row."""
    try:
        with (out / "soak_stats.csv").open(newline="") as fh:
            for row in csv.DictReader(fh):
                if row["Name"] == "Aggregated":
                    return int(row["Request Count"]), int(row["Failure Count"])
    except (OSError, KeyError, ValueError):
        pass
    return 0, 0


def table(samples: list[Sample]) -> str:
    lines = [f"{'process':<16} {'pid':>7} {'rss start MiB':>14} {'rss end MiB':>12} "
             f"{'growth':>8}"]
    for s in samples:
        end = "died" if s.end is None else f"{s.end / MIB:.1f}"
        growth = "-" if s.growth_pct is None else f"{s.growth_pct:+.1f}%"
        lines.append(f"{s.role:<16} {s.pid:>7} {s.start / MIB:>14.1f} {end:>12} {growth:>8}")
    return "\n".join(lines)


def run(args: argparse.Namespace, out: Path) -> int:
    sim = start_sim(args.profile, out / "sim.log")
    url = sim.url
    locust: subprocess.Popen | None = None
    try:
        t0 = time.monotonic()
        locust = start_locust(args, url, out)
        time.sleep(args.settle)
        watched = processes(sim.proc, locust)
        # a process listed a moment ago may already be gone (a forked helper): skip it
        samples = [Sample(role, pid, r) for pid, role in watched.items()
                   if (r := rss(pid)) is not None]
        time.sleep(max(0.0, t0 + args.duration - 3 - time.monotonic()))
        for s in samples:
            s.end = rss(s.pid)
        locust.wait(timeout=120)
    finally:
        if locust is not None:
            stop(locust)
        sim.stop(timeout=30)
    total, failures = request_totals(out)
    print(f"soak: {args.users} users, {args.duration:.0f} s, {args.processes} Locust "
          f"process(es), profile {args.profile}, max_tokens {args.max_tokens}; RSS sampled "
          f"at {args.settle:.0f} s and {args.duration - 3:.0f} s")
    print(table(samples))
    print(f"requests {total}, failures {failures}")
    problems = [f"{s.role} grew {s.growth_pct:.1f}%" for s in samples
                if s.growth_pct is not None and s.growth_pct > args.max_growth]
    problems += [f"{s.role} died" for s in samples if s.end is None]
    if not any(s.role == "sim" for s in samples) or len(samples) < 2:
        problems.append("the simulated server or Locust was not running when sampled")
    if total == 0 or failures > 0:
        problems.append(f"{failures} of {total} requests failed")
    print(f"FAIL: {'; '.join(problems)}" if problems
          else f"PASS: every process within {args.max_growth:g}% RSS growth")
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
