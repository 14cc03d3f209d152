"""Benchmark the crossover search (`ladder: auto`) against the fixed 8-rung ladder.

Virtual (default, seconds): each profile's curves come from `sim-curve` in virtual
time; the truth is the crossover on a fine ladder; the fixed ladder (1, 2, 5, 10, 30,
70, 100, 250) and the search (`search.coarse`, then `search.refine` on what the report's
analysis of the rungs so far says, noise-free) each give C* and its interval. Printed
per profile: rungs per arm, server starts per arm, C* against the truth, and whether
the interval holds it.

--real: the same comparison as live sweeps on the simulator (`specload sweep`, both
arms `command:` arms counting their server starts), adding wall time. Each sweep takes
minutes; the request shape and windows are the slow test's (tests/integration/runner/
test_sweep_search.py).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from specload.config.settings import Search
from specload.ladder.rungs import DEFAULT_LADDER
from specload.ladder.search import Found, coarse, refine
from specload.report.c_star_interval import c_star_interval
from specload.report.crossover import find_crossover
from specload.runner.processes import free_port
from specload.sim.curve import predict
from specload.sim.profile import load_profile

# (profile, prompt tokens, output tokens): None takes the profile's workload
CASES = (("seed-glm", None, None), ("seed-glm", 256, 64), ("h100-llama8b-eagle3", None, None))
MAX_C = 250


def _tok_s(profile: str, spec: str, ladder: list[int], shape: tuple) -> list[float]:
    points = predict(load_profile(profile), spec, None, ladder, prompt_tokens=shape[0],
                     output_tokens=shape[1])
    return [p.output_tok_s for p in points]


def _rows(levels: list[int], tok_s: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"rep": 1, "concurrency": levels, "output_tok_s": tok_s,
                         "output_tok_s_se": 0.0})


def _analyse(profile: str, levels: list[int], shape: tuple) -> tuple:
    on, off = (_tok_s(profile, s, levels, shape) for s in ("on", "off"))
    speedup = np.array(on) / np.array(off)
    cross = find_crossover(levels, speedup)
    interval = c_star_interval(np.array(levels), _rows(levels, on), _rows(levels, off))
    return cross, interval, speedup


def _truth(profile: str, shape: tuple) -> float | None:
    fine = sorted({round(x) for x in np.geomspace(1, MAX_C, 90)})
    return find_crossover(fine, _analyse(profile, fine, shape)[2]).c_star


def _search(profile: str, shape: tuple) -> tuple[list[int], int, object, object]:
    spec = Search(max_concurrency=MAX_C)
    measured = coarse(spec)
    passes = 1
    while True:
        cross, interval, speedup = _analyse(profile, sorted(measured), shape)
        ties = tuple(c for c, d in zip(sorted(measured), speedup, strict=True)
                     if abs(d - 1) <= 0.02)
        step = refine(spec, Found(tuple(sorted(measured)), cross.c_star, interval.lo,
                                  interval.hi, ties, 0.0, 1.0), passes - 1)
        if step.stop:
            return sorted(measured), passes, cross, interval
        measured += step.levels
        passes += 1


def _fmt(c: float | None) -> str:
    return "-" if c is None else f"{c:.1f}"


def virtual() -> None:
    print(f"{'profile':<34} {'ladder':<6} {'rungs':>5} {'starts':>6} {'C*':>6} "
          f"{'truth':>6} {'error':>6}  interval (holds truth)")
    for profile, *shape in CASES:
        truth = _truth(profile, tuple(shape))
        name = profile + (f" {shape[0]}/{shape[1]}" if shape[0] else "")
        fixed, fixed_iv, _ = _analyse(profile, list(DEFAULT_LADDER), tuple(shape))
        found = _search(profile, tuple(shape))
        for label, rungs, starts, cross, iv in (
                ("fixed", list(DEFAULT_LADDER), 1, fixed, fixed_iv), ("auto", *found)):
            err = (cross.c_star / truth - 1) if cross.c_star and truth else math.nan
            holds = iv.contains(truth) if truth else False
            print(f"{name:<34} {label:<6} {len(rungs):>5} {starts:>6} "
                  f"{_fmt(cross.c_star):>6} {_fmt(truth):>6} {err:>+6.1%}  "
                  f"{iv.words()} ({'yes' if holds else 'NO'})")


def _scenario(folder: Path, ladder: object, profile: str) -> tuple[Path, dict[str, Path]]:
    counters, arms = {}, []
    for spec in ("on", "off"):
        port, counter = free_port(), folder / f"{spec}-starts"
        counters[spec] = counter
        start = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
                 f"exec {sys.executable} -m specload.cli sim --profile {profile} "
                 f"--spec {spec} --port {port}")
        arms.append({"name": f"spec-{spec}", "spec": spec,
                     "command": {"start": start, "base_url": f"http://127.0.0.1:{port}"}})
    data = {"name": "bench-search", "verify": False, "warmup_s": 3, "measure_s": 8,
            "min_requests": 10, "drain_s": 5, "ladder": ladder,
            "request": {"prompt_tokens": 256, "max_tokens": 64, "ignore_eos": True},
            "arms": arms}
    if ladder == "auto":
        data["search"] = {"max_concurrency": MAX_C}
    path = folder / f"{'auto' if ladder == 'auto' else 'fixed'}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, counters


def real(profile: str, only: str | None = None) -> None:
    truth = _truth(profile, (256, 64))
    print(f"{profile} 256/64, live sweeps; sim-curve's C* = {_fmt(truth)}")
    ladders = {"fixed": list(DEFAULT_LADDER), "auto": "auto"}
    for ladder in [v for k, v in ladders.items() if only in (None, k)]:
        with tempfile.TemporaryDirectory() as tmp:
            scenario, counters = _scenario(Path(tmp), ladder, profile)
            began = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "specload.cli", "sweep",
                                   str(scenario), "--out", tmp], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"the sweep failed ({done.returncode}):\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
            wall = time.monotonic() - began
            summary = json.loads(next(Path(tmp).rglob("summary.json")).read_text())
            pair = summary["pairs"][0]
            rungs = len(pair["speedup"])
            search = summary["search"]
            per_arm = len([x for r in search["rounds"] for x in r["levels"]]) if search \
                else rungs
            starts = {k: int(v.read_text()) for k, v in counters.items()}
            print(f"  {'auto' if ladder == 'auto' else 'fixed':<5} rungs per arm {per_arm}, "
                  f"server starts {starts}, wall {wall:.0f} s, C* {_fmt(pair['c_star'])}, "
                  f"{pair['c_star_interval']['words']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", metavar="PROFILE", help="run live sweeps on this profile")
    parser.add_argument("--only", choices=("fixed", "auto"), help="--real: one of the two")
    args = parser.parse_args()
    if args.real:
        real(args.real, args.only)
    else:
        virtual()


if __name__ == "__main__":
    main()
