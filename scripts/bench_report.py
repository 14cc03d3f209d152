"""Benchmark `specload report` on a synthetic sweep of 2 arms x 8 rungs x ~100,000 requests.

Generates a sweep folder shaped exactly like a real one (manifest.json, per-arm Locust
prefixes with requests, steps, server metrics, client stats and stats history) from a
simple batching model: per-step time grows with concurrency, spec-on carries 1-4 tokens
per chunk at a longer step, every request streams 100-300 chunks and users run requests
back to back. Then times one in-process pass phase by phase (reading, chunk parsing,
per-rung metrics), next to the previous reader (pandas, Python strings joined and parsed
by numpy) on the same files, and runs `specload report` on it a few times: first with an
empty cache each time (every repeat is measured from its files), then again with the
measured tables a first report kept (`report/measure_cache.py`), as a sweep's own
analysis of its run leaves them.

    python scripts/bench_report.py [--rows 100000] [--out DIR] [--runs 3] [--keep] [--limit 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from specload.report import chunk_arrays, client_metrics, measure_cache, run_files
from specload.report.windows import rung_windows
from specload.runfiles import records, reply_digest
from specload.sim.textgen import TokenStream

LADDER = (1, 2, 5, 10, 30, 70, 100, 250)
WARMUP_S = 5.0
T0 = 1_750_000_000.0
ARMS = {  # name: (role, step ms at C=0, step ms per concurrent request, mean tokens/chunk)
    "spec-on": ("spec_on", 14.0, 0.60, 2.5),
    "spec-off": ("spec_off", 10.0, 0.12, 1.0),
}
CHUNKS = (100, 300)
PROMPTS = 405  # the built-in set's size: each reply fingerprinted, as the load generator does
MAX_TOKENS = 1024


def _step_ms(arm: str, c: int) -> float:
    _, base, per_c, _ = ARMS[arm]
    return base + per_c * c


def _window_s(rows: int) -> float:
    """Measure window length that yields about `rows` requests over all arms and rungs."""
    per_second = sum(c / (np.mean(CHUNKS) * _step_ms(a, c) / 1e3) for a in ARMS for c in LADDER)
    return rows / per_second


def _rung(rng: np.random.Generator, arm: str, c: int, t0: float, measure_end: float
          ) -> dict[str, list]:
    step_s = _step_ms(arm, c) / 1e3
    tpc = ARMS[arm][3]
    cols: dict[str, list] = {k: [] for k in records.REQUEST_COLUMNS}
    for user in range(c):
        t = t0 + rng.uniform(0, step_s)
        while t < measure_end:
            n = int(rng.integers(*CHUNKS))
            gaps = rng.gamma(8.0, step_s / 8.0, n) * 1e6
            gaps[0] = 30_000 + rng.exponential(20_000)
            gaps = np.maximum(gaps.round(), 1).astype(np.int64)
            toks = rng.integers(1, 5, n) if tpc > 1 else np.ones(n, np.int64)
            offs = np.cumsum(gaps) / 1e6
            end = t + float(offs[-1]) + 0.0005
            out = int(toks.sum())
            ttft, e2e = offs[0] * 1e3, offs[-1] * 1e3
            prompt = int(rng.integers(PROMPTS))
            reply = reply_digest.fingerprint(TokenStream(prompt).take(out))
            rec = records.RequestRecord(
                request_id=f"{arm}-{c}-{user}-{t:.6f}", client_id="bench", user_id=user,
                endpoint="chat", category="chat", start=t, end=end, status=200,
                ttft_ms=ttft, e2e_ms=e2e, tpot_ms=(e2e - ttft) / (out - 1), output_tokens=out,
                prompt_tokens=200, tokens_source="usage", num_chunks=n, finish_reason="stop",
                chunk_gaps_us=" ".join(map(str, gaps.tolist())),
                chunk_tokens=" ".join(map(str, toks.tolist())), prompt_index=prompt,
                prompt_hash=f"{prompt:016x}", max_tokens=MAX_TOKENS, reply_bytes=reply.size,
                reply_hash=reply.digest, reply_blocks=reply.blocks)
            for name, value in zip(records.REQUEST_COLUMNS, rec.row(), strict=True):
                cols[name].append(value)
            t = end
    return cols


def _history(frame: pd.DataFrame, ticks: np.ndarray, users: int, done_n: int,
             done_tokens: float) -> list[tuple]:
    """Locust "Aggregated" history rows: cumulative count and mean response length."""
    order = np.argsort(frame["end"].to_numpy())
    ends = frame["end"].to_numpy()[order]
    tokens = np.concatenate(([0.0], np.cumsum(frame["output_tokens"].to_numpy()[order])))
    k = np.searchsorted(ends, ticks, side="right")
    n = done_n + k
    size = (done_tokens + tokens[k]) / np.maximum(n, 1)
    return [(int(ts), users, "", "Aggregated", 0, 0, int(a), 0, float(b))
            for ts, a, b in zip(ticks, n, size, strict=True)]


def generate(out: Path, rows: int, seed: int = 0) -> int:
    """Write the synthetic sweep folder; returns the number of request rows written."""
    rng = np.random.default_rng(seed)
    window = _window_s(rows)
    total = 0
    arms_manifest = []
    for arm, (role, *_rest) in ARMS.items():
        prefix = out / arm / "locust"
        prefix.parent.mkdir(parents=True, exist_ok=True)
        frames, steps, server, client, history = [], [], [], [], []
        t, generated, done_n, done_tokens = T0, 0.0, 0, 0.0
        for rung, c in enumerate(LADDER):
            ms, me = t + WARMUP_S, t + WARMUP_S + window
            frame = pd.DataFrame(_rung(rng, arm, c, t, me))
            frames.append(frame)
            steps.append((rung, c, t, ms, me))
            run_end = float(frame["end"].max())
            ticks = np.arange(t, run_end, 1.0)
            rate = float(frame["output_tokens"].sum()) / max(run_end - t, 1e-9)
            server += [(ts, "vllm:generation_tokens_total", generated + rate * (ts - t))
                       for ts in ticks]
            generated += rate * (run_end - t)
            # by name: a column added to the file later is left empty, not misplaced
            client += [{"ts": ts, "client_id": "bench", "cpu_percent": 40.0,
                        "lag_p50_ms": 0.2, "lag_p99_ms": 1.0, "users": c,
                        "lag_samples": 100, "lag_late": 0, "in_flight": c} for ts in ticks]
            history += _history(frame, ticks, c, done_n, done_tokens)
            done_n += len(frame)
            done_tokens += float(frame["output_tokens"].sum())
            t = float(frame["end"].max()) + 1.0
        requests = pd.concat(frames, ignore_index=True)
        total += len(requests)
        requests.to_csv(f"{prefix}{records.REQUESTS_SUFFIX}", index=False)
        pd.DataFrame(steps, columns=records.RUNGS_COLUMNS).to_csv(
            f"{prefix}{records.RUNGS_SUFFIX}", index=False)
        pd.DataFrame(server, columns=records.SERVER_METRICS_COLUMNS).to_csv(
            f"{prefix}{records.SERVER_METRICS_SUFFIX}", index=False)
        pd.DataFrame(client, columns=records.CLIENT_STATS_COLUMNS).to_csv(
            f"{prefix}{records.CLIENT_STATS_SUFFIX}", index=False)
        pd.DataFrame(history, columns=[
            "Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s",
            "Total Request Count", "Total Failure Count", "Total Average Content Size",
        ]).to_csv(f"{prefix}{records.LOCUST_HISTORY_SUFFIX}", index=False)
        arms_manifest.append({
            "name": arm, "kind": "sim", "spec": "on" if role == "spec_on" else "off",
            "role": role, "k": 3 if role == "spec_on" else None, "status": "done",
            "reps": [{"rep": 1, "dir": arm, "status": "done", "started": None,
                      "finished": None, "error": None}],
            "ladder": list(LADDER), "warmup_s": WARMUP_S, "measure_s": window})
    manifest = {"scenario": {"name": "bench"}, "scenario_name": "bench",
                "created": "synthetic", "arms": arms_manifest, "status": "done"}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return total


def _old_parse(texts: list[str]) -> np.ndarray:
    """The previous parser: one joined string, single digits read directly, else numpy."""
    joined = " ".join(t for t in texts if t)
    raw = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    if raw.size and (raw[1::2] == 32).all():
        return raw[0::2] - 48
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.fromstring(joined, dtype=np.int64, sep=" ")


def _old_read_and_parse(prefix: Path) -> tuple[np.ndarray, np.ndarray]:
    """The previous path: pandas reads the same columns as Python strings, then parses."""
    cols = ["start", "end", "ttft_ms", "e2e_ms", "tpot_ms", "status", "output_tokens",
            "num_chunks", "interrupted", "endpoint", "tokens_source", "finish_reason",
            "error_kind", "chunk_gaps_us", "chunk_tokens"]
    df = pd.read_csv(f"{prefix}{records.REQUESTS_SUFFIX}", usecols=cols, engine="c",
                     dtype={c: object for c in cols[9:]})
    return (_old_parse(df["chunk_gaps_us"].fillna("").tolist()),
            _old_parse(df["chunk_tokens"].fillna("").tolist()))


def _pass(prefix: Path) -> tuple[list[float], bool]:
    """Wall seconds of read, parse, rung metrics and the old read+parse for one prefix."""
    t0 = time.perf_counter()
    data = run_files.read_rep(prefix)
    t1 = time.perf_counter()
    ch = chunk_arrays.build(data.requests)
    t2 = time.perf_counter()
    windows, _ = rung_windows(data.rungs, data.history, data.requests)
    client_metrics.rung_metrics(data.requests, ch, windows)
    t3 = time.perf_counter()
    old_gaps, old_tokens = _old_read_and_parse(prefix)
    t4 = time.perf_counter()
    same = np.array_equal(old_gaps, ch.gap_us) and np.array_equal(old_tokens, ch.tokens)
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3], same


def phases(out: Path, repeats: int = 2) -> dict[str, float]:
    """Wall seconds per phase over every arm, one after another in this process; each
    phase's best of `repeats` passes (the machine may be shared)."""
    names = ("read", "parse", "rung metrics", "old read+parse")
    spent = dict.fromkeys(names, 0.0)
    for path in sorted(out.rglob(f"*{records.REQUESTS_SUFFIX}")):
        prefix = Path(str(path)[: -len(records.REQUESTS_SUFFIX)])
        passes = []
        for _ in range(repeats):
            times, same = _pass(prefix)
            if not same:
                raise SystemExit(f"{path}: old and new parsers disagree")
            passes.append(times)
        for name, best in zip(names, np.min(passes, axis=0), strict=True):
            spent[name] += float(best)
    return spent


def _report(out: Path, cache: Path, src: Path | None = None) -> float:
    """Wall seconds of one `specload report` keeping measured tables in `cache`, with
    specload imported from `src` if given."""
    env = os.environ | {"SPECLOAD_CACHE": str(cache)}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "specload.cli", "report", str(out)], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def _settled(out: Path) -> None:
    """Wait until the newest file is old enough for the report to keep its tables."""
    newest = max(p.stat().st_mtime for p in out.rglob("*") if p.is_file())
    time.sleep(max(0.0, newest + measure_cache.SETTLE_S + 0.1 - time.time()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None, help="folder (default: a temp dir)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    parser.add_argument("--limit", type=float, default=5.0,
                        help="seconds `specload report` may take at best (0: no limit)")
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="also time `specload report` imported from this source tree "
                        "(e.g. an older checkout's src/) for before/after ratios")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="specload-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    rows = generate(out, args.rows)
    size_mb = sum(p.stat().st_size for p in out.rglob("*.csv")) / 1e6
    chunks = sum(int(pd.read_csv(p, usecols=["num_chunks"])["num_chunks"].sum())
                 for p in out.rglob(f"*{records.REQUESTS_SUFFIX}"))
    print(f"generated {rows} requests, {chunks} chunks, {size_mb:.0f} MB of CSV "
          f"in {time.perf_counter() - t:.1f} s: {out}")
    spent = phases(out)
    new = spent["read"] + spent["parse"]
    print("in-process, all arms in turn (best of 2): " + ", ".join(
        f"{k} {v:.2f} s" for k, v in spent.items()))
    print(f"read+parse old/new: {spent['old read+parse']:.2f} / {new:.2f} s = "
          f"{spent['old read+parse'] / new:.1f}x (same arrays)")
    caches = Path(tempfile.mkdtemp(prefix="specload-bench-cache-"))
    first = [_report(out, caches / f"empty-{i}") for i in range(args.runs)]
    _settled(out)
    _report(out, caches / "kept")  # as the sweep's own analysis of its run leaves it
    if not list((caches / "kept").rglob("*.pkl")):
        raise SystemExit("the report kept no measured table")
    again = [_report(out, caches / "kept") for _ in range(args.runs)]
    base = [_report(out, caches / f"base-{i}", args.baseline_src)
            for i in range(args.runs if args.baseline_src else 0)]
    shutil.rmtree(caches)
    read = spent["read"]
    for label, times in (("first on these files (measures every repeat)", first),
                         ("again (the run's sweep or an earlier report measured it)", again),
                         (f"from {args.baseline_src}", base)):
        if times:
            print(f"specload report, {label}: {' '.join(f'{x:.2f}' for x in times)} s "
                  f"(best {min(times):.2f} s = {min(times) / read:.1f}x the read)")
    print(f"end to end / read ({read:.2f} s): first {min(first) / read:.1f}x, "
          f"again {min(again) / read:.1f}x (goal: 3x; limit {args.limit:g} s on the first)")
    if not args.keep and args.out is None:
        shutil.rmtree(out)
    return 0 if not args.limit or min(first) < args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
