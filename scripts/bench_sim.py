#!/usr/bin/env python3
"""Benchmark the simulated server: can one process serve C streams on schedule?

Starts `specload sim` (default profile h100-llama8b-eagle3, spec on), drives C
closed-loop streaming users from a separate client process (`specload.sim.bench_client`,
asyncio + aiohttp), and reads the engine's own lag counters from /metrics before and
after the measure window. Prints one row per concurrency: client-measured tok/s,
sim-curve's prediction, chunks/s, the engine lag ratio over the window (must stay
under 1%), and the server's CPU share of one core.

    python scripts/bench_sim.py --concurrency 250 --measure 20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch
from specload.sim.bench_client import closed_loop
from specload.sim.curve import predict
from specload.sim.profile import load_profile

LAG = "specload_sim_engine_lag_seconds_total"
BUSY = "specload_sim_engine_busy_seconds_total"


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(("specload_sim_engine_", "vllm:generation_tokens_total")):
            name, value = line.split("{")[0], float(line.rsplit(" ", 1)[1])
            out[name] = value
    return out


def start_server(profile: str, spec: str, log: Path) -> SimProcess:
    try:
        return launch(SimOptions.of(profile=profile, spec=spec), log)
    except LaunchError as exc:
        raise SystemExit(str(exc)) from None


def client_main(url: str, users: int, warmup: float, measure: float, prompt: int,
                output: int) -> None:
    """Runs in the client subprocess; prints 'tokens chunks requests errors'."""
    r = asyncio.run(closed_loop(url, users, warmup_s=warmup, measure_s=measure,
                                prompt_tokens=prompt, max_tokens=output))
    print(r.tokens, r.chunks, r.requests, r.errors, flush=True)


def bench_one(url: str, server: psutil.Process, users: int, args: argparse.Namespace,
              prompt: int, output: int) -> dict[str, float]:
    client = subprocess.Popen(
        [sys.executable, __file__, "--client", url, str(users), str(args.warmup),
         str(args.measure), str(prompt), str(output)], stdout=subprocess.PIPE, text=True)
    time.sleep(args.warmup)
    before = scrape(url)
    server.cpu_percent(None)
    time.sleep(args.measure)
    cpu = server.cpu_percent(None)
    after = scrape(url)
    out, _ = client.communicate(timeout=args.measure + 120)
    tokens, chunks, requests, errors = (int(x) for x in out.split())
    busy = after[BUSY] - before[BUSY]
    lag = after[LAG] - before[LAG]
    return {"tok_s": tokens / args.measure, "chunks_s": chunks / args.measure,
            "requests": requests, "errors": errors,
            "lag": lag / (busy + lag) if busy + lag else 0.0, "cpu": cpu}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, users, warmup, measure, prompt, output = sys.argv[2:8]
        client_main(url, int(users), float(warmup), float(measure), int(prompt), int(output))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h100-llama8b-eagle3")
    ap.add_argument("--spec", default="on", choices=("on", "off", "schedule"))
    ap.add_argument("--concurrency", default="50,250", help="comma-separated C values")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--measure", type=float, default=20.0)
    ap.add_argument("--max-tokens", type=int, default=None)
    args = ap.parse_args()
    profile = load_profile(args.profile)
    prompt = profile.workload.prompt_tokens
    output = args.max_tokens or profile.workload.output_tokens
    log = Path(tempfile.mkdtemp(prefix="bench-sim-")) / "sim.log"
    sim = start_server(args.profile, args.spec, log)
    url = sim.url
    server = psutil.Process(sim.proc.pid)
    print(f"# {args.profile} spec={args.spec} prompt={prompt} output={output} "
          f"warmup={args.warmup:g}s measure={args.measure:g}s cpus={os.cpu_count()}")
    print(f"{'C':>5} {'tok/s':>9} {'predicted':>9} {'ratio':>6} {'chunks/s':>9} "
          f"{'lag %':>6} {'srv CPU %':>9} {'errors':>6}")
    worst = 0.0
    try:
        for users in (int(c) for c in args.concurrency.split(",")):
            r = bench_one(url, server, users, args, prompt, output)
            pred = predict(profile, args.spec, None, [users], output_tokens=output)[0]
            worst = max(worst, r["lag"])
            print(f"{users:>5} {r['tok_s']:>9.1f} {pred.output_tok_s:>9.1f} "
                  f"{r['tok_s'] / pred.output_tok_s:>6.3f} {r['chunks_s']:>9.0f} "
                  f"{100 * r['lag']:>6.2f} {r['cpu']:>9.0f} {r['errors']:>6.0f}", flush=True)
    finally:
        sim.stop(timeout=30)
    print(f"# worst engine lag {100 * worst:.2f}% ({'OK' if worst < 0.01 else 'TOO SLOW'}: "
          "limit 1%)")
    return 0 if worst < 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
