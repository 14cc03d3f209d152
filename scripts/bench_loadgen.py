#!/usr/bin/env python3
"""Benchmark the load generator: CPU per chunk, capacity and accuracy against the sim.

Everything runs on loopback against one simulated server (`specload sim --profile
bench-20ms`: a fixed 20 ms engine step at any batch size, so C users receive C / 0.020
chunks/s) with `--trace`, the ground truth. Three parts, one run:

1. CPU per streamed chunk: one headless Locust process (`locustfiles/chat.py`, --csv so
   records are written) and a minimal asyncio + aiohttp client written here the way
   vLLM's and SGLang's benchmark scripts are, same users, server and duration, in two
   reading styles: `aiohttp` iterates `response.content` line by line and `json.loads`
   every `data:` line (SGLang's `bench_serving.py`, and vLLM's before its
   `StreamedResponseHandler`); `aiohttp-any` takes whatever has arrived
   (`iter_any`), decodes it incrementally and splits SSE messages at blank lines
   (vLLM's `vllm bench serve` now: vllm/benchmarks/lib/endpoint_request_func.py). Process
   CPU (psutil, user + system, children included) in a steady window / content chunks
   the sim emitted in that window. Prints the ratio specload / aiohttp (the reference the
   goal is set against) and specload / aiohttp-any. `--floor` adds the
   same Locust users with every per-chunk step but one stamped read taken out
   (`scripts/loadgen_floor/locustfile.py`): how low a gevent client with one read per
   chunk can go, with the same request path.
2. Capacity: Locust at rising C with 1 process, then `--processes 2`. Records are
   matched to the trace by request_id; a run passes when client TTFT is within 5 ms of
   the sim's (p99 of the per-request difference) and each content chunk's client arrival
   is within 2 ms of the sim's emit time (p99). Also shows the client's own CPU and
   event-loop lag (`_client_stats.csv`), how far chunks/s fall short of C / step, and
   the simulator's CPU and engine lag (a sim that falls behind stamps late too).
3. Accuracy at C = 1, 10, 100, 250: system output tok/s (tokens by arrival time in the
   window), TTFT p50/p99 and TPOT p50, client records vs trace.

    python scripts/bench_loadgen.py                      # ~4 minutes
    python scripts/bench_loadgen.py --seconds 40 --capacity 100,200,250,300 --cpu-users 50,100
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import csv
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from specload.runfiles.records import CLIENT_STATS_SUFFIX, REQUESTS_SUFFIX, decode_chunks
from specload.runner.processes import free_port
from specload.runner.sim_launcher import LaunchError, SimOptions, launch

REPO = Path(__file__).resolve().parents[1]
PROMPTS = REPO / "src/specload/data/prompts.jsonl"
CHAT = REPO / "locustfiles/chat.py"
FLOOR = REPO / "scripts/loadgen_floor/locustfile.py"  # `--floor`: see its docstring
TTFT_BOUND_MS = 5.0
ARRIVAL_BOUND_MS = 2.0
LAG_METRIC = "specload_sim_engine_lag_seconds_total"
BUSY_METRIC = "specload_sim_engine_busy_seconds_total"


# --- the simulated server ------------------------------------------------------------

class Sim:
    """One `specload sim` subprocess with a trace file."""

    def __init__(self, profile: str, spec: str, trace: Path,
                 extra_args: tuple[str, ...] = (), ca: Path | None = None) -> None:
        self.trace = trace
        self.context = ssl.create_default_context(cafile=str(ca)) if ca else None
        try:
            self.process = launch(SimOptions.of(profile=profile, spec=spec, trace_path=trace,
                                                extra_args=extra_args),
                                  trace.with_suffix(".log"))
        except LaunchError as exc:
            raise SystemExit(str(exc)) from None
        self.proc = self.process.proc
        self.url = self.process.url

    def lag_busy(self) -> tuple[float, float]:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10,
                                    context=self.context) as resp:
            text = resp.read().decode()
        values = {}
        for line in text.splitlines():
            if line.startswith((LAG_METRIC, BUSY_METRIC)):
                values[line.split("{")[0].split()[0]] = float(line.rsplit(" ", 1)[1])
        return values.get(LAG_METRIC, 0.0), values.get(BUSY_METRIC, 0.0)

    def records(self) -> dict[str, dict]:
        out = {}
        for line in self.trace.read_text().splitlines():
            if line.endswith("}"):
                rec = json.loads(line)
                out[rec["request_id"]] = rec
        return out

    def stop(self) -> None:
        self.process.stop(timeout=20)


# --- CPU sampling --------------------------------------------------------------------

def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds (user + system) of a process and its live children."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


@dataclass
class Run:
    """One client run: the measure window, its CPU, and where its files are."""

    users: int
    processes: int
    t0: float
    t1: float
    cpu_s: float
    sim_lag: float  # share of the sim's engine time given up as lag in the run
    prefix: Path | None = None
    extra: dict = field(default_factory=dict)


def run_client(cmd: list[str], sim: Sim, users: int, processes: int, args: argparse.Namespace,
               prefix: Path | None, src: Path | None = None) -> Run:
    """Start a client, sample CPU over [warmup, seconds - tail], wait for it to finish.

    With `src`, the client imports specload from that source tree (a baseline copy).
    """
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    lag0, busy0 = sim.lag_busy()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    ps = psutil.Process(proc.pid)
    launched = time.time()
    time.sleep(args.warmup)
    tree_cpu(ps)  # discover the children before the window opens
    server = psutil.Process(sim.proc.pid)
    t0, c0, s0 = time.time(), tree_cpu(ps), tree_cpu(server)
    time.sleep(max(1.0, args.seconds - args.warmup - args.tail - (t0 - launched - args.warmup)))
    t1, c1, s1 = time.time(), tree_cpu(ps), tree_cpu(server)
    try:
        _, err = proc.communicate(timeout=args.seconds + 60)
    except subprocess.TimeoutExpired:
        for p in [*ps.children(recursive=True), ps]:
            p.kill()
        raise SystemExit(f"client did not exit: {' '.join(cmd)}") from None
    if proc.returncode not in (0, 1):  # Locust exits 1 when some requests failed
        raise SystemExit(f"client failed ({proc.returncode}): {err[-2000:]}")
    lag1, busy1 = sim.lag_busy()
    lag, busy = lag1 - lag0, busy1 - busy0
    time.sleep(0.5)  # the sim writes trace lines of cancelled streams a moment later
    return Run(users, processes, t0, t1, c1 - c0, lag / (lag + busy) if lag + busy else 0.0,
               prefix, {"sim_cpu": 100 * (s1 - s0) / (t1 - t0)})


def locust_cmd(url: str, users: int, processes: int, prefix: Path,
               args: argparse.Namespace, locustfile: Path = CHAT) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile),
           "--headless", "-u", str(users), "-r", str(max(users, 1)), "-t", f"{args.seconds}s",
           "--csv", str(prefix), "--host", url, "--only-summary", "--stop-timeout", "5",
           "--max-tokens", str(args.max_tokens), "--ignore-eos", "--loglevel", "WARNING"]
    if processes > 1:
        port = str(free_port())  # not Locust's default 5557: other runs may hold it
        cmd += ["--processes", str(processes), "--master-bind-host", "127.0.0.1",
                "--master-bind-port", port, "--master-host", "127.0.0.1", "--master-port", port]
    return cmd


def run_locust(sim: Sim, users: int, processes: int, tmp: Path,
               args: argparse.Namespace, src: Path | None = None,
               extra: list[str] | None = None, locustfile: Path = CHAT) -> Run:
    prefix = tmp / f"locust-u{users}-p{processes}-{time.monotonic_ns()}"
    cmd = locust_cmd(sim.url, users, processes, prefix, args, locustfile) + (extra or [])
    return run_client(cmd, sim, users, processes, args, prefix, src)


def run_reference(sim: Sim, users: int, tmp: Path, args: argparse.Namespace,
                  client: str = "aiohttp") -> Run:
    out = tmp / f"reference-u{users}-{time.monotonic_ns()}.jsonl"
    cmd = [sys.executable, __file__, "--reference", sim.url, str(users), str(args.seconds),
           str(args.max_tokens), str(out), client]
    run = run_client(cmd, sim, users, 1, args, None)
    run.extra["outputs"] = out
    return run


def trace_chunks(trace: dict[str, dict], t0: float, t1: float) -> tuple[int, int]:
    """Content chunks and tokens the sim emitted in [t0, t1)."""
    chunks = tokens = 0
    for rec in trace.values():
        for ts, n in rec["chunks"]:
            if t0 <= ts < t1:
                chunks += 1
                tokens += n
    return chunks, tokens


# --- the aiohttp reference client ------------------------------------------------------

class RefOutput:
    """One request as the reference client records it (vLLM's `RequestFuncOutput`)."""

    def __init__(self, request_id: str, st: float, wall: float) -> None:
        self.request_id, self.st, self.wall = request_id, st, wall
        self.ttft, self.itl, self.text, self.output_len = 0.0, [], "", 0
        self.recent = st

    def on_message(self, chunk: str) -> None:
        """One `data:` payload, "data: " taken off."""
        if chunk == "[DONE]":
            return
        data = json.loads(chunk)
        if choices := data.get("choices"):
            content = choices[0]["delta"].get("content")
            if not content:  # vLLM's script also times the role-only chunk
                return
            timestamp = time.perf_counter()
            if self.ttft == 0.0:
                self.ttft = timestamp - self.st
            else:
                self.itl.append(timestamp - self.recent)
            self.recent = timestamp
            self.text += content or ""  # kept as vLLM's client keeps it (a cost), not written
        elif usage := data.get("usage"):
            self.output_len = usage.get("completion_tokens")

    def row(self) -> dict:
        return {"request_id": self.request_id, "start": self.wall, "ttft": self.ttft,
                "itl": self.itl, "latency": self.recent - self.st,
                "output_len": self.output_len}


async def read_lines(response: Any, out: RefOutput) -> None:
    """Line by line (SGLang's bench_serving.py; vLLM's before its message buffer)."""
    async for chunk_bytes in response.content:
        chunk_bytes = chunk_bytes.strip()
        if chunk_bytes:
            out.on_message(chunk_bytes.decode("utf-8").removeprefix("data: "))


async def read_any(response: Any, out: RefOutput) -> None:
    """Whatever has arrived, decoded incrementally and cut into messages at blank lines;
    a trailing `data:` message whose JSON parses counts as whole (vLLM's
    `StreamedResponseHandler`, vllm/benchmarks/lib/endpoint_request_func.py)."""
    decoder, buffer = codecs.getincrementaldecoder("utf-8")(), ""
    async for chunk_bytes in response.content.iter_any():
        chunk_bytes = chunk_bytes.strip()
        if not chunk_bytes:
            continue
        buffer += decoder.decode(chunk_bytes)
        messages = []
        while "\n\n" in buffer:
            message, buffer = buffer.split("\n\n", 1)
            if message := message.strip():
                messages.append(message)
        if buffer.startswith("data: "):
            rest = buffer.removeprefix("data: ").strip()
            try:
                if rest != "[DONE]":
                    json.loads(rest)
                messages.append(buffer.strip())
                buffer = ""
            except json.JSONDecodeError:
                pass  # the message's JSON is not all here yet
        for message in messages:
            if not message.startswith(":"):
                out.on_message(message.removeprefix("data: "))


# the reference clients of the CPU part's table, by name: how each reads a body
REFERENCE_CLIENTS = {"aiohttp": read_lines, "aiohttp-any": read_any}


def reference_main(url: str, users: int, seconds: float, max_tokens: int, out: str,
                   client: str = "aiohttp") -> None:
    """A vLLM/SGLang-benchmark-style client: aiohttp, json per `data:` message, timestamps,
    reading each body as `REFERENCE_CLIENTS[client]` does."""
    import aiohttp  # only the reference subprocess needs it

    read = REFERENCE_CLIENTS[client]
    prompts = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    bodies = [{"model": "", "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
               "stream_options": {"include_usage": True, "continuous_usage_stats": True},
               "messages": p.get("messages") or [{"role": "user", "content": p["prompt"]}]}
              for p in prompts]
    outputs: list[dict] = []

    async def one_user(session: aiohttp.ClientSession, api: str, index: int, end: float,
                       model: str) -> None:
        i = index
        while time.perf_counter() < end:
            body = {**bodies[i % len(bodies)], "model": model}
            request_id = f"ref-{os.getpid()}-{index}-{i}"
            i += users
            got = RefOutput(request_id, time.perf_counter(), time.time())
            async with session.post(api, json=body,
                                    headers={"X-Request-Id": request_id}) as response:
                await read(response, got)
            outputs.append(got.row())

    async def main() -> None:
        timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
        async with aiohttp.ClientSession(timeout=timeout,
                                         connector=aiohttp.TCPConnector(limit=0)) as session:
            async with session.get(url + "/v1/models") as resp:
                model = (await resp.json())["data"][0]["id"]
            end = time.perf_counter() + seconds
            tasks = [asyncio.create_task(one_user(session, url + "/v1/chat/completions", u,
                                                  end, model)) for u in range(users)]
            await asyncio.wait(tasks, timeout=seconds + 1)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    with open(out, "w") as fh:
        fh.writelines(json.dumps(o) + "\n" for o in outputs)


def reference_rows(path: Path) -> list[dict[str, str]]:
    """The reference client's outputs in the shape of specload's request rows."""
    rows = []
    for line in path.read_text().splitlines():
        o = json.loads(line)
        if not o["ttft"]:
            continue
        gaps = [round(o["ttft"] * 1e6)] + [round(g * 1e6) for g in o["itl"]]
        rows.append({"request_id": o["request_id"], "start": str(o["start"]),
                     "chunk_gaps_us": " ".join(map(str, gaps)), "chunk_tokens": "",
                     "error_kind": "", "ttft_ms": str(o["ttft"] * 1e3), "tpot_ms": ""})
    return rows


# --- reading Locust's files ------------------------------------------------------------

@dataclass
class Matched:
    """Client records of one run matched to the trace."""

    ttft_err_ms: np.ndarray  # client TTFT - sim TTFT, requests started in the window
    arrival_err_ms: np.ndarray  # client arrival - sim emit, every chunk in the window
    client_ttft_ms: np.ndarray
    sim_ttft_ms: np.ndarray
    client_tpot_ms: np.ndarray
    sim_tpot_ms: np.ndarray
    client_tokens: int  # tokens arriving in the window
    client_chunks: int
    unmatched: int
    failures: int


def read_requests(prefix: Path) -> list[dict[str, str]]:
    with open(str(prefix) + REQUESTS_SUFFIX, newline="") as fh:
        return list(csv.DictReader(fh))


def match(run: Run, trace: dict[str, dict]) -> Matched:
    ttft_err, arr_err, c_ttft, s_ttft, c_tpot, s_tpot = [], [], [], [], [], []
    tokens = chunks = unmatched = failures = 0
    rows = (read_requests(run.prefix) if run.prefix is not None
            else reference_rows(run.extra["outputs"]))
    for row in rows:
        start = float(row["start"])
        offsets, counts = decode_chunks(row["chunk_gaps_us"], row["chunk_tokens"])
        counts = counts or [1] * len(offsets)
        for off, n in zip(offsets, counts, strict=True):
            if run.t0 <= start + off < run.t1:
                tokens += n
                chunks += 1
        if row["error_kind"] and row["error_kind"] != "interrupted":
            failures += 1
        rec = trace.get(row["request_id"])
        if rec is None:
            unmatched += 1
            continue
        emits = [ts for ts, _ in rec["chunks"]]
        arr_err += [(start + off - ts) * 1e3 for off, ts in zip(offsets, emits, strict=False)
                    if run.t0 <= ts < run.t1]
        if row["error_kind"] or not (run.t0 <= start < run.t1) or not row["ttft_ms"]:
            continue
        sim_ttft = (rec["first_token"] - rec["arrival"]) * 1e3
        ttft_err.append(float(row["ttft_ms"]) - sim_ttft)
        c_ttft.append(float(row["ttft_ms"]))
        s_ttft.append(sim_ttft)
        if row["tpot_ms"] and rec["output_tokens"] > 1:
            c_tpot.append(float(row["tpot_ms"]))
            s_tpot.append((emits[-1] - rec["first_token"]) * 1e3 / (rec["output_tokens"] - 1))
    a = np.asarray
    return Matched(a(ttft_err), a(arr_err), a(c_ttft), a(s_ttft), a(c_tpot), a(s_tpot),
                   tokens, chunks, unmatched, failures)


def client_stats(run: Run) -> tuple[float, float]:
    """Highest per-process CPU % and lag p99 (ms) in the window, from `_client_stats.csv`."""
    path = Path(str(run.prefix) + CLIENT_STATS_SUFFIX)
    if not path.exists():
        return float("nan"), float("nan")
    cpu, lag = [0.0], [0.0]
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if run.t0 <= float(row["ts"]) <= run.t1:
                cpu.append(float(row["cpu_percent"]))
                lag.append(float(row["lag_p99_ms"]))
    return max(cpu), max(lag)


def pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else float("nan")


CPU_RATIO_GOAL = 0.50  # #26: a load process at half the aiohttp reference's CPU per chunk


# --- the three parts -------------------------------------------------------------------

def cpu_part(sim: Sim, tmp: Path, args: argparse.Namespace) -> list[str]:
    lines = ["## CPU per streamed chunk (one load process, user + records)",
             f"{'C':>5} {'client':>11} {'chunks/s':>9} {'CPU %':>6} {'us/chunk':>9} "
             f"{'TTFT err p50':>12} {'p99':>6} {'arrival err p50':>15} {'p99':>6}"]
    print("\n".join(lines), flush=True)
    clients = (["specload", *REFERENCE_CLIENTS] + (["baseline"] if args.baseline_src else [])
               + (["floor"] if args.floor else []))
    for users in args.cpu_users:
        rounds: list[dict[str, float]] = []
        for r in range(args.rounds):
            costs = {}
            # each round starts one client later: no client always runs first or last
            for name in clients[r % len(clients):] + clients[:r % len(clients)]:
                costs[name] = _cpu_run(sim, tmp, args, users, name, lines)
            rounds.append(costs)
        lines.append(_ratio_line(users, rounds))
        print(lines[-1], flush=True)
    return lines


def _cpu_run(sim: Sim, tmp: Path, args: argparse.Namespace, users: int, name: str,
             lines: list[str]) -> float:
    """One client's run at `users`: its row appended to `lines`; its CPU us per chunk."""
    run = (run_reference(sim, users, tmp, args, name) if name in REFERENCE_CLIENTS
           else run_locust(sim, users, 1, tmp, args,
                           args.baseline_src if name == "baseline" else None,
                           locustfile=FLOOR if name == "floor" else CHAT))
    trace = sim.records()
    chunks, _ = trace_chunks(trace, run.t0, run.t1)
    m = match(run, trace)
    span = run.t1 - run.t0
    cost = run.cpu_s * 1e6 / max(chunks, 1)
    lines.append(f"{users:>5} {name:>11} {chunks / span:>9.0f} "
                 f"{100 * run.cpu_s / span:>6.1f} {cost:>9.1f} "
                 f"{pct(m.ttft_err_ms, 50):>12.2f} {pct(m.ttft_err_ms, 99):>6.2f} "
                 f"{pct(m.arrival_err_ms, 50):>15.2f} {pct(m.arrival_err_ms, 99):>6.2f}")
    print(lines[-1], flush=True)
    return cost


def _ratio_line(users: int, rounds: list[dict[str, float]]) -> str:
    """The ratios of CPU per chunk, each the median over the rounds of one round's ratio
    (its runs back to back), with their range when there were several rounds."""
    def ratio(num: str, den: str) -> str:
        each = [costs[num] / costs[den] for costs in rounds]
        spread = f" ({min(each):.2f}-{max(each):.2f})" if len(each) > 1 else ""
        return f"{num}/{den} = {float(np.median(each)):.2f}{spread}"

    names = rounds[0]
    parts = [ratio("specload", "aiohttp") + f" (goal: {CPU_RATIO_GOAL:.2f})",
             ratio("specload", "aiohttp-any")]
    if "baseline" in names:
        parts.append(ratio("specload", "baseline"))
    if "floor" in names:
        parts.append(ratio("floor", "aiohttp"))
    median = f"median of {len(rounds)} rounds: " if len(rounds) > 1 else ""
    return f"{users:>5} ratio {median}" + ", ".join(parts)


def capacity_part(sim: Sim, tmp: Path, args: argparse.Namespace,
                  runs: dict[tuple[int, int], Run]) -> list[str]:
    lines = ["## Capacity (bounds: TTFT error p99 <= 5 ms, chunk arrival error p99 <= 2 ms)",
             f"{'proc':>4} {'C':>5} {'chunks/s':>9} {'of C/step':>9} {'TTFTerr p50':>11} "
             f"{'p99':>6} {'arrival p50':>11} {'p99':>6} {'max':>7} {'cli CPU%':>8} "
             f"{'lag p99':>7} {'sim CPU%':>8} {'sim lag%':>8} {'ok':>3}"]
    print("\n".join(lines), flush=True)
    plan = [(u, 1) for u in args.capacity] + [(u, 2) for u in args.capacity2]
    for users, processes in plan:
        run = runs[(users, processes)] = run_locust(sim, users, processes, tmp, args)
        m = match(run, sim.records())
        span = run.t1 - run.t0
        cpu, lag = client_stats(run)
        ok = (pct(m.ttft_err_ms, 99) <= TTFT_BOUND_MS
              and pct(m.arrival_err_ms, 99) <= ARRIVAL_BOUND_MS and m.failures == 0)
        ideal = users / args.step_s
        lines.append(
            f"{processes:>4} {users:>5} {m.client_chunks / span:>9.0f} "
            f"{m.client_chunks / span / ideal:>9.2f} {pct(m.ttft_err_ms, 50):>11.2f} "
            f"{pct(m.ttft_err_ms, 99):>6.2f} {pct(m.arrival_err_ms, 50):>11.2f} "
            f"{pct(m.arrival_err_ms, 99):>6.2f} {m.arrival_err_ms.max(initial=0):>7.1f} "
            f"{cpu:>8.0f} {lag:>7.1f} {run.extra['sim_cpu']:>8.0f} {100 * run.sim_lag:>8.2f} "
            f"{'yes' if ok else 'NO':>3}")
        print(lines[-1], flush=True)
    return lines


def accuracy_part(sim: Sim, tmp: Path, args: argparse.Namespace,
                  runs: dict[tuple[int, int], Run]) -> list[str]:
    lines = ["## Accuracy vs the sim's trace (client / sim)",
             f"{'C':>5} {'proc':>4} {'tok/s client':>12} {'sim':>9} {'diff %':>7} "
             f"{'TTFT p50 c/s ms':>16} {'diff':>6} {'TTFT p99 c/s ms':>16} "
             f"{'TPOT p50 c/s ms':>16} {'reqs':>5}"]
    print("\n".join(lines), flush=True)
    for users in args.accuracy:
        processes = 2 if users > args.one_process_max else 1
        run = runs.get((users, processes)) or run_locust(sim, users, processes, tmp, args)
        trace = sim.records()
        m = match(run, trace)
        _, sim_tokens = trace_chunks(trace, run.t0, run.t1)
        span = run.t1 - run.t0
        c_tok, s_tok = m.client_tokens / span, sim_tokens / span
        lines.append(
            f"{users:>5} {processes:>4} {c_tok:>12.1f} {s_tok:>9.1f} "
            f"{100 * (c_tok / s_tok - 1):>+7.2f} "
            f"{pct(m.client_ttft_ms, 50):>7.2f}/{pct(m.sim_ttft_ms, 50):<8.2f} "
            f"{pct(m.client_ttft_ms, 50) - pct(m.sim_ttft_ms, 50):>+6.2f} "
            f"{pct(m.client_ttft_ms, 99):>7.2f}/{pct(m.sim_ttft_ms, 99):<8.2f} "
            f"{pct(m.client_tpot_ms, 50):>7.2f}/{pct(m.sim_tpot_ms, 50):<8.2f} "
            f"{m.client_ttft_ms.size:>5}")
        print(lines[-1], flush=True)
    return lines


def tls_part(sim: Sim, tmp: Path, args: argparse.Namespace) -> list[str]:
    """The same load over plain HTTP and over HTTPS (a throwaway CA): timing errors."""
    import trustme  # a dev dependency, like this script

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca_path, cert_path, key_path = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    cert.private_key_pem.write_to_path(str(key_path))
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    lines = ["## HTTPS vs HTTP (same load; TLS in memory keeps the kernel's stamps)",
             f"{'C':>5} {'scheme':>6} {'TTFT err p50':>12} {'p99':>6} {'arrival p50':>11} "
             f"{'p99':>6} {'tok/s diff %':>12} {'reqs':>5}"]
    print("\n".join(lines), flush=True)
    tls_sim = Sim(args.profile, args.spec, tmp / "trace-tls.jsonl",
                  ("--tls-cert", str(cert_path), "--tls-key", str(key_path)), ca_path)
    try:
        for users in args.tls_users:
            for scheme, server, extra in (("http", sim, []),
                                          ("https", tls_sim, ["--ca-bundle", str(ca_path)])):
                run = run_locust(server, users, 1, tmp, args, extra=extra)
                trace = server.records()
                m = match(run, trace)
                _, sim_tokens = trace_chunks(trace, run.t0, run.t1)
                lines.append(
                    f"{users:>5} {scheme:>6} {pct(m.ttft_err_ms, 50):>12.2f} "
                    f"{pct(m.ttft_err_ms, 99):>6.2f} {pct(m.arrival_err_ms, 50):>11.2f} "
                    f"{pct(m.arrival_err_ms, 99):>6.2f} "
                    f"{100 * (m.client_tokens / sim_tokens - 1):>+12.2f} "
                    f"{m.client_ttft_ms.size:>5}")
                print(lines[-1], flush=True)
    finally:
        tls_sim.stop()
    return lines


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--reference":
        url, users, seconds, max_tokens, out, client = sys.argv[2:8]
        reference_main(url, int(users), float(seconds), int(max_tokens), out, client)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="bench-20ms")
    ap.add_argument("--spec", default="on", choices=("on", "off"))
    ap.add_argument("--step-s", type=float, default=0.020, help="the profile's step time")
    ap.add_argument("--seconds", type=int, default=15, help="length of each client run")
    ap.add_argument("--warmup", type=float, default=4.0, help="excluded at the start")
    ap.add_argument("--tail", type=float, default=1.5, help="excluded at the end")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--cpu-users", type=ints, default=ints("50,150"))
    ap.add_argument("--capacity", type=ints, default=ints("100,150,200,250"),
                    help="user counts for one load process")
    ap.add_argument("--capacity2", type=ints, default=ints("250"),
                    help="user counts for --processes 2")
    ap.add_argument("--accuracy", type=ints, default=ints("1,10,100,250"))
    ap.add_argument("--one-process-max", type=int, default=200,
                    help="accuracy runs above this many users use --processes 2")
    ap.add_argument("--tls-users", type=ints, default=ints("50"))
    ap.add_argument("--parts", default="cpu,capacity,accuracy,tls")
    ap.add_argument("--baseline-src", type=Path, default=None,
                    help="also measure CPU/chunk with specload imported from this source "
                    "tree (e.g. an older checkout's src/) for before/after ratios")
    ap.add_argument("--rounds", type=int, default=1,
                    help="CPU part: run every client this many times, each round in a "
                    "rotated order, and give each ratio as the median of the rounds' own")
    ap.add_argument("--floor", action="store_true",
                    help="also measure the CPU/chunk floor: Locust's users with every "
                    "per-chunk step but one stamped read taken out (scripts/loadgen_floor)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    parts = set(args.parts.split(","))
    out: list[str] = [f"# bench_loadgen: profile {args.profile} spec={args.spec}, "
                      f"max_tokens {args.max_tokens}, runs of {args.seconds} s "
                      f"(window {args.warmup:g} s .. end - {args.tail:g} s), "
                      f"{os.cpu_count()} CPUs"]
    print(out[0], flush=True)
    runs: dict[tuple[int, int], Run] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sim = Sim(args.profile, args.spec, tmp / "trace.jsonl")
        try:
            if "cpu" in parts:
                out += cpu_part(sim, tmp, args)
            if "capacity" in parts:
                out += capacity_part(sim, tmp, args, runs)
            if "accuracy" in parts:
                out += accuracy_part(sim, tmp, args, runs)
            if "tls" in parts:
                out += tls_part(sim, tmp, args)
        finally:
            sim.stop()
    print("\n# summary\n" + "\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
