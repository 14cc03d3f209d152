"""Per-chunk CPU cost of the streaming user, with and without per-request records.

Starts the simulated server (`specload sim`, its speculative profile, so chunks carry
several tokens), runs one headless Locust process (`locustfiles/chat.py`, --csv) twice —
`--records` and `--no-records` — and samples that process's CPU time with psutil
inside a steady-state window, dividing by the content chunks the server emitted in the
same window (from its `--trace`). Modes alternate `--repeats` times (the machine is
noisy); it prints every run, the median per mode and their ratio, and, as a noise-free
cross-check, the in-process cost of building and writing one record row per chunk.
Run: python scripts/bench_user_cpu.py [--users 20] [--seconds 12] [--repeats 2]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from specload.runfiles.records import RequestRecord, encode_chunks
from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch

REPO = Path(__file__).resolve().parents[1]


def start_sim(trace: Path) -> SimProcess:
    options = SimOptions.of(profile="h100-llama8b-eagle3", spec="on", trace_path=trace)
    try:
        return launch(options, trace.with_suffix(".log"))
    except LaunchError as exc:
        raise SystemExit(str(exc)) from None


def chunks_between(trace: Path, t0: float, t1: float) -> int:
    n = 0
    for line in trace.read_text().splitlines():
        n += sum(1 for ts, _ in json.loads(line)["chunks"] if t0 <= ts < t1)
    return n


def measure(url: str, trace: Path, out: Path, records: bool, args: argparse.Namespace) -> float:
    """Microseconds of Locust-process CPU per content chunk in the steady-state window."""
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles/chat.py"),
           "--headless", "-u", str(args.users), "-r", str(args.users), "-t", f"{args.seconds}s",
           "--csv", str(out), "--host", url, "--only-summary", "--max-tokens",
           str(args.max_tokens), "--ignore-eos", "--records" if records else "--no-records"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ps = psutil.Process(proc.pid)
    time.sleep(args.warmup)
    t0, c0 = time.time(), sum(ps.cpu_times()[:2])
    time.sleep(args.seconds - args.warmup - 2)
    t1, c1 = time.time(), sum(ps.cpu_times()[:2])
    proc.wait()
    time.sleep(0.5)
    chunks = chunks_between(trace, t0, t1)
    cpu_us = (c1 - c0) * 1e6 / chunks
    print(f"records={'on ' if records else 'off'}  chunks/s={chunks / (t1 - t0):7.0f}  "
          f"cpu={100 * (c1 - c0) / (t1 - t0):5.1f}%  cpu/chunk={cpu_us:6.1f} us")
    return cpu_us


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--seconds", type=int, default=12)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    results: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for records in (True, False):
                trace = Path(tmp) / f"trace-{i}-{records}.jsonl"
                sim = start_sim(trace)
                try:
                    run = Path(tmp) / f"run-{i}-{records}"
                    results[records].append(measure(sim.url, trace, run, records, args))
                finally:
                    sim.stop()
    on, off = statistics.median(results[True]), statistics.median(results[False])
    print(f"median cpu/chunk: records on {on:.1f} us, off {off:.1f} us, ratio {on / off:.3f}")
    print(f"record row alone: {record_cost_us():.2f} us per chunk (85-chunk requests)")


def record_cost_us(chunks: int = 85, n: int = 2000) -> float:
    """In-process CPU of encoding chunk timings and writing one CSV row, per chunk."""
    start = time.time()
    arrivals = [start + 0.01 * i for i in range(chunks)]
    writer = csv.writer(io.StringIO())
    t0 = time.process_time()
    for _ in range(n):
        gaps, tokens = encode_chunks(start, arrivals, [3] * chunks)
        writer.writerow(RequestRecord(
            request_id="h-1-1", client_id="h-1", user_id=1, endpoint="chat",
            category="chat", start=start, end=start + 1, status=200, ttft_ms=10.0,
            e2e_ms=900.0, tpot_ms=3.5, output_tokens=3 * chunks, prompt_tokens=20,
            tokens_source="usage", num_chunks=chunks, chunk_gaps_us=gaps,
            chunk_tokens=tokens).row())
    return (time.process_time() - t0) * 1e6 / (n * chunks)


if __name__ == "__main__":
    main()
