"""`specload sim-fit RUN_DIR --out my.yaml`: a simulator profile fitted to a measured sweep.

The glue between a run folder and the fitting math in `specload.sim.fit`, which cannot
read run folders itself (the simulator is an island). The report package reads the
sweep (`report.render.build`): per arm and concurrency the client output tok/s and,
where /metrics was sampled, the server's mean running requests and acceptance length.
The workload comes from the run: the mean `prompt_tokens` the requests reported and the
mean output tokens they received (or the scenario's `request.max_tokens`). The base
profile (`--base`) is fitted to that, the residual of every rung is printed, and the
fitted profile is written as YAML in which each parameter names its origin (measured,
fitted, or the base profile's value). Several run folders, repeats of one scenario on a
noisy machine, are fitted by each rung's mean; a rung whose repeats across runs
disagree counts for less. Within a run, a rung's repeats are a range: the fit is
charged only for falling outside it, since which repeat a busy moment slowed cannot be
told (the twin is judged against that range too); so is each concurrency's speedup,
every repeat's spec-on over the same repeat's spec-off, which were measured side by
side. The spec-on / spec-off speedup per concurrency is printed beside the twin's,
which C* is read from.
`specload sim --profile my.yaml` then serves it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from specload.engines.spec_command import parse_command
from specload.errors import UserError
from specload.host.pools import map_jobs
from specload.report.render import Report, build
from specload.runfiles import records
from specload.sim import SimConfigError
from specload.sim.core import SpecMode
from specload.sim.curve import check_lengths
from specload.sim.fit import FitResult, Observations, Rung, fit
from specload.sim.profile import Profile, load_profile, parameter_paths, to_yaml

MODES: dict[str, SpecMode] = {"spec_on": "on", "spec_off": "off"}


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _mean_prompt_tokens(report: Report) -> float | None:
    """Mean `prompt_tokens` over every request file of the run (None if none reported)."""
    values: list[pd.Series] = []
    for arm in report.source.arms:
        for rep in arm.reps:
            path = Path(f"{rep.prefix}{records.REQUESTS_SUFFIX}")
            frame = pd.read_csv(path, usecols=lambda c: c == "prompt_tokens")
            if "prompt_tokens" in frame:
                values.append(pd.to_numeric(frame["prompt_tokens"], errors="coerce").dropna())
    joined = pd.concat(values) if values else pd.Series(dtype=float)
    return float(joined.mean()) if len(joined) else None


def observations(report: Report, prompt_tokens: int | None = None,
                 output_tokens: int | None = None) -> tuple[Observations, list[str]]:
    """The run's spec-on and spec-off rungs and workload; notes say what was left out."""
    notes: list[str] = []
    modes = {a.name: MODES.get(a.role) for a in report.source.arms}
    # the arm's k, else the draft length its start command gives (`--spec-draft-n-max 4`)
    k = next((a.k or parse_command(a.command).k for a in report.source.arms
              if a.role == "spec_on" and (a.k or a.command)), None)
    ranges = _repeat_ranges(report.per_rep)
    speedups = _speedup_ranges(report.per_rep, modes)
    rungs: list[Rung] = []
    for row in report.summary.to_dict(orient="records"):
        mode = modes.get(str(row["arm"]))
        tok_s = _number(row.get("output_tok_s"))
        if mode is None:
            notes.append(f"arm {row['arm']}: neither spec-on nor spec-off, not fitted")
            continue
        if not tok_s:
            notes.append(f"arm {row['arm']} C={row['concurrency']}: no output tok/s, skipped")
            continue
        accept = _number(row.get("accept_len_mean")) if mode == "on" else None
        users = int(row["concurrency"])
        rungs.append(Rung(mode, users, tok_s, _number(row.get("server_running_mean")),
                          accept, within=ranges.get((str(row["arm"]), users))))
    if not rungs:
        raise UserError("the run has no spec-on or spec-off rung with output tok/s to fit")
    request = (report.source.manifest.scenario.get("request", {})
               if report.source.manifest else {})
    if prompt_tokens is None:
        measured = _mean_prompt_tokens(report)
        if measured is None:
            raise UserError("the run's requests report no prompt_tokens; give --prompt-tokens")
        prompt_tokens = round(measured)
    if output_tokens is None:
        means = [x for x in (_number(v) for v in report.summary.get("output_tokens_mean", []))
                 if x]
        fallback = _number(request.get("max_tokens"))
        if means:
            output_tokens = round(sum(means) / len(means))
        elif fallback:
            output_tokens = round(fallback)
        else:
            raise UserError("the run tells no output length; give --output-tokens")
    return (Observations(tuple(rungs), prompt_tokens, output_tokens, k, speedups),
            sorted(set(notes)))


def mean_observations(runs: Sequence[Observations]) -> Observations:
    """Repeated sweeps of one scenario as one: each arm and rung's mean over the runs that
    measured it. Runs of other workloads or draft lengths are an error."""
    first = runs[0]
    for other in runs[1:]:
        if (other.prompt_tokens, other.output_tokens, other.k) != (
                first.prompt_tokens, first.output_tokens, first.k):
            raise UserError("the runs differ in prompt or output length or k "
                            f"({first.prompt_tokens}/{first.output_tokens}/k={first.k} vs "
                            f"{other.prompt_tokens}/{other.output_tokens}/k={other.k}): "
                            "fit one at a time")
    groups: dict[tuple[str, int], list[Rung]] = {}
    for obs in runs:
        for rung in obs.rungs:
            groups.setdefault((rung.mode, rung.users), []).append(rung)
    rungs = [same[0] if len(same) == 1 else
             Rung(same[0].mode, same[0].users, sum(r.output_tok_s for r in same) / len(same),
                  _mean([r.running for r in same]), _mean([r.accept_len for r in same]),
                  _log_spread([r.output_tok_s for r in same]))
             for same in groups.values()]
    # a run's repeats pair its own arms; across runs only the means are fitted
    speedups = first.speedup_within if len(runs) == 1 else {}
    return dataclasses.replace(first, rungs=tuple(rungs), speedup_within=speedups)


def _log_spread(values: Sequence[float]) -> float | None:
    """The sample standard deviation of log(values); None for fewer than two."""
    logs = [math.log(v) for v in values if v > 0]
    if len(logs) < 2:
        return None
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))


def _repeat_ranges(per_rep: pd.DataFrame) -> dict[tuple[str, int], tuple[float, float]]:
    """Each arm and rung's lowest and highest output tok/s over the run's repeats, where
    repeated."""
    if per_rep.empty:
        return {}
    spans = _spans(per_rep.set_index(["arm", "concurrency"])["output_tok_s"])
    return {(str(arm), int(users)): span for (arm, users), span in spans.items()}


def _spans(values: pd.Series) -> dict[tuple, tuple[float, float]]:
    """Per key of the series' index, the lowest and highest of its positive finite
    values, where it has at least two."""
    values = values[(values > 0) & (values < math.inf)]
    return {key: (float(v.min()), float(v.max()))
            for key, v in values.groupby(level=list(range(values.index.nlevels)))
            if len(v) >= 2}


def _speedup_ranges(per_rep: pd.DataFrame, modes: dict[str, SpecMode | None]
                    ) -> dict[int, tuple[float, float]]:
    """Per concurrency, the lowest and highest of the repeats' speedups, each repeat's
    spec-on tok/s over its own spec-off's, where the run has one arm of each and
    repeated both."""
    on = [arm for arm, mode in modes.items() if mode == "on"]
    off = [arm for arm, mode in modes.items() if mode == "off"]
    if per_rep.empty or len(on) != 1 or len(off) != 1:
        return {}
    tok_s = per_rep.set_index(["arm", "rep", "concurrency"])["output_tok_s"]
    if not tok_s.index.is_unique:  # rungs told apart by something else (an open-loop rate)
        return {}
    ratios = tok_s.loc[on[0]] / tok_s.loc[off[0]]
    return {int(users): span for (users,), span in _spans(ratios.droplevel("rep")).items()}


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def residual_table(result: FitResult) -> str:
    """Every fitted figure against its measurement: each arm's tok/s per rung, then the
    speedup per concurrency (whose side of 1 a twin's C* is read from)."""
    head = f"{'arm':>8} {'C':>5} {'measured':>10} {'fitted':>10} {'residual':>9}"
    rows = [f"{f'spec-{r.mode}':>8} {r.users:>5} {r.observed:>10.1f} {r.predicted:>10.1f} "
            f"{r.rel:>+9.1%}" for r in result.residuals]
    rows += [f"{'speedup':>8} {r.users:>5} {r.observed:>10.3f} {r.predicted:>10.3f} "
             f"{r.rel:>+9.1%}" for r in result.speedups]
    return "\n".join([head, *rows])


def fitted_profile(result: FitResult, obs: Observations, base_name: str,
                   run_dir: str = "a sweep") -> Profile:
    """The fitted profile with the run's workload and an origin for every parameter."""
    data = result.profile.model_dump()
    data["description"] = f"fitted by sim-fit to {run_dir} (base: {base_name})"
    data["workload"].update(prompt_tokens=obs.prompt_tokens, output_tokens=obs.output_tokens)
    origins = dict(result.origins)
    origins.update({"workload.prompt_tokens": "measured (the run's mean prompt)",
                    "workload.output_tokens": "measured (the run's mean output)"})
    for path in parameter_paths():
        origins.setdefault(path, f"base profile {base_name}")
    data["origins"] = origins
    return Profile.model_validate(data)


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload sim-fit`."""
    try:
        base = load_profile(args.base)
        measured = [observations(build(run), args.prompt_tokens, args.output_tokens)
                    for run in args.run_dir]
        obs = mean_observations([o for o, _ in measured])
        notes = sorted({note for _, run_notes in measured for note in run_notes})
        if len(measured) > 1:
            notes.append(f"{len(measured)} runs: each rung's mean is fitted")
        check_lengths(base, obs.prompt_tokens, obs.output_tokens)
        free = args.free.split(",") if args.free else None
        result = fit(base, obs, free, seed=args.seed, max_evals=args.max_evals,
                     map_jobs=map_jobs)
    except SimConfigError as exc:
        print(f"specload: error: {exc}", file=sys.stderr)
        return 2
    runs = ", ".join(args.run_dir)
    profile = fitted_profile(result, obs, args.base, runs)
    header = [f"Fitted by `specload sim-fit` to {runs}, from base profile {args.base}.",
              f"Workload of the run: {obs.prompt_tokens}-token prompts, "
              f"{obs.output_tokens}-token outputs. Residual per rung (fitted / measured - 1):",
              *(f"  spec-{r.mode} C={r.users}: {r.rel:+.1%}" for r in result.residuals),
              *(f"  speedup C={r.users}: {r.predicted:.3f} against {r.observed:.3f}"
                for r in result.speedups),
              "Each parameter's comment says where its value comes from."]
    Path(args.out).write_text(to_yaml(profile, header), encoding="utf-8")
    for note in [*notes, *result.notes]:
        print(f"note: {note}")
    print(f"fitted {', '.join(p for p, o in result.origins.items() if o == 'fitted')} "
          f"({result.evaluations} evaluations); residual per rung:")
    print(residual_table(result))
    print(f"wrote {args.out}; serve it with: specload sim --profile {args.out}")
    return 0
