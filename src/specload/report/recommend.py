"""The recommendation for one spec-on/spec-off pair: a policy in batch sizes, in each
engine's syntax, or the deployment-level alternative where the engine has none.

The pair's decision curve (SLO goodput when the scenario has an SLO, system tok/s
otherwise; see `crossover`) gives a policy: speculate everywhere, nowhere, or up to a
concurrency and not above. That concurrency becomes the batch size the switching server
runs there, read from the servers' running-requests gauge (spec-on's, or
spec-off's where spec-on sat at a cap of its own; `bound_at`); without the gauge the bound stays
in C and the text says so. For vLLM, SGLang and TensorRT-LLM (or when the engine is not
known) the policy is written as each engine's exact setting (`engine_settings`) into
`recommended/` files with a README of version notes and caveats; for llama.cpp,
Ollama and TGI, which cannot switch speculation by load, the README gives two
deployments routed by load instead. The text never says "always" or "never" while a
rung sits inside the noise band.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from specload import engine_metrics
from specload.engines import LOAD_AWARE, NAMES
from specload.report import engine_settings as es
from specload.report.crossover import (
    ALWAYS,
    CROSSES,
    INCONCLUSIVE,
    NEVER,
    SLO_UNMET,
    UNKNOWN,
    Crossover,
    PairResult,
)
from specload.report.run_files import ArmSource
from specload.report.slo import SloTarget
from specload.report.spec_command import SpecSettings, parse_command
from specload.sim import SimConfigError
from specload.sim.profile import load_profile

RECOMMENDED_DIR = "recommended"
VLLM_FILE = "vllm-speculative-config.json"
SGLANG_FILE = es.SGLANG_ADAPTIVE_CONFIG
SGLANG_FLAGS_FILE = "sglang-flags.txt"
TRTLLM_FILE = "trtllm.yaml"
README_FILE = "README.md"
ENGINE_FILES = (VLLM_FILE, SGLANG_FILE, SGLANG_FLAGS_FILE, TRTLLM_FILE, README_FILE)
# Below this occupancy (mean running requests / C) at the rung above the bound, the
# spec-on server queued requests instead of batching them: a running-request cap.
CAPPED_OCCUPANCY = 0.9

# Caveats per engine, each shown after the engine's name (see the module docstrings of
# engine_settings for where the formats come from).
VLLM_NOTES = (
    "needs a release with Dynamic SD in its list form (PR #32374; upstream since v0.25.1 "
    "according to vllm-project/vllm-ascend PR #12686): pin the version.",
    "the schedule keys on the requests scheduled in each engine step, prefills included "
    "(vllm/v1/core/sched/scheduler.py: dynamic_sd_lookup[len(num_scheduled_tokens)]), "
    "while these bounds come from the mean of vllm:num_requests_running: near a bound, "
    "steps switch between k and 0 (vLLM issue #49548).",
    "k = 0 is not free: the drafter still runs one forward per step to keep its KV in "
    "sync (+4-11% decode time, vLLM PR #53426), and on Model Runner V1 the schedule "
    "turns FULL CUDA graphs into PIECEWISE ones (about 14% single-stream cost in issue "
    "#49548). Measure the scheduled server against spec-off before relying on it.",
    "with --data-parallel-size > 1 the schedule is dropped silently and every batch size "
    "speculates at num_speculative_tokens (docs: dynamic_speculative_decoding.md).",
)
SGLANG_NOTES = (
    "needs batch-size slots in --speculative-adaptive-config (PR #24055), 0-step slots "
    "too. Adaptive mode takes only --speculative-algorithm EAGLE or EAGLE3 with "
    "--speculative-eagle-topk 1 and is off with attention data parallelism; otherwise "
    "SGLang warns and keeps static settings (adaptive_spec_params.py, "
    "adaptive_unsupported_reason).",
    "the batch is padded up to the next captured CUDA-graph size before the slot is "
    "picked: keep both batch sizes around each bound in --cuda-graph-bs-decode (the flags "
    "line does; older releases call it --cuda-graph-bs), else the cut moves down.",
)
TRTLLM_NOTES = (
    "the batch size is the number of active requests (tensorrt_llm/_torch/pyexecutor/"
    "py_executor.py: get_draft_len_for_batch_size(len(self.active_requests))).",
    f"the keys changed meaning in {es.TRTLLM_UPPER_BOUNDS_SINCE} (PR #10860): "
    "{1: k, T: 0} passes both validators but means 'speculate only at batch size 1' "
    "from then on. trtllm.yaml has the upper-bound form, the older one as a comment.",
)


@dataclass(frozen=True, slots=True)
class ArmSetup:
    """How the spec-on arm was served, as far as the run tells."""

    engine: str | None = None
    engine_source: str = "unknown"
    spec: SpecSettings = field(default_factory=SpecSettings)


@dataclass(frozen=True, slots=True)
class Bound:
    """Where speculation stops: in C, and in batch size when the gauge exists."""

    concurrency: float
    batch: float | None  # spec-on's mean running requests at that C
    last_on: int  # last batch size (or C without the gauge) that speculates
    capped: int | None = None  # spec-on's running requests stopped growing at about this
    through: str = "spec-on"  # whose running requests at C* the batch size is
    spec_on_batch: float | None = None  # spec-on's, when `through` is spec-off

    @property
    def axis(self) -> str:
        return "batch size" if self.batch is not None else "concurrency"

    def as_dict(self) -> dict[str, Any]:
        return {"concurrency": self.concurrency, "batch_size": self.batch,
                "axis": self.axis, "last_on": self.last_on, "first_off": self.last_on + 1,
                "capped_at": self.capped, "batch_of": self.through}


@dataclass(slots=True)
class Recommendation:
    verdict: str
    basis: str  # "system tok/s" or "SLO goodput (...)"
    summary: str
    bound: Bound | None = None
    tiers: tuple[es.Tier, ...] | None = None  # the schedule; None: nothing to write
    engine: str | None = None
    engine_source: str = "unknown"
    load_aware: bool = True
    files: dict[str, str] = field(default_factory=dict)  # name in recommended/ -> text
    lines: list[str] = field(default_factory=list)  # per-engine advice, one line each
    notes: list[str] = field(default_factory=list)
    vllm_config: dict[str, Any] | None = None
    sglang_config: dict[str, Any] | None = None

    def as_dict(self, folder: str = RECOMMENDED_DIR) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "basis": self.basis, "summary": self.summary,
            "bound": self.bound.as_dict() if self.bound else None,
            "schedule": ([[first, t.last, t.k] for first, t in
                          zip(es.starts(self.tiers), self.tiers, strict=True)]
                         if self.tiers else None),
            "engine": self.engine, "engine_source": self.engine_source,
            "load_aware_engine": self.load_aware,
            "vllm_speculative_config": self.vllm_config,
            "sglang_adaptive_config": self.sglang_config,
            "lines": self.lines, "notes": self.notes,
            "files": [f"{folder}/{name}" for name in self.files],
        }


def arm_setup(arm: ArmSource) -> ArmSetup:
    """Engine and speculative settings of an arm: from its command, else its sim profile."""
    spec = parse_command(arm.command)
    if arm.kind == "sim" and arm.profile and not spec.method:
        try:
            drafter = load_profile(arm.profile).speculative
        except SimConfigError:
            drafter = None
        if drafter is not None:
            spec = SpecSettings(method=drafter.method,
                                k=arm.k if arm.k is not None else drafter.k)
    return ArmSetup(arm.engine, arm.engine_source, spec)


def batch_at(table: pd.DataFrame, c: float, column: str = "batch_on") -> float | None:
    """A server's mean running requests at concurrency c (`column`: batch_on, the spec-on
    server's, or batch_off), interpolated in log C.

    Why C* is mapped through the measured C -> batch relation instead of finding the
    crossing on a batch-size axis: the speedup is a ratio at equal offered load (both
    arms ran the same C), but the two servers run different batch sizes at that C
    (a running-request cap or a full KV cache makes requests wait), so there is no
    common batch-size axis to divide on. It is interpolated in log C, the axis C* was
    found on, and so is the batch: where nothing queues the batch follows C, a straight
    line on log-log axes, which this interpolation keeps exact. A denser ladder around C*
    makes it exact elsewhere. None when the gauge does not bracket c.
    """
    part = table[["concurrency", column]].dropna()
    part = part[(part["concurrency"] > 0) & (part[column] > 0)]
    if part.empty or not part["concurrency"].min() <= c <= part["concurrency"].max():
        return None
    return float(np.exp(np.interp(math.log(c), np.log(part["concurrency"].to_numpy(float)),
                                  np.log(part[column].to_numpy(float)))))


def _capped(batch: float | None, c: float) -> bool:
    return batch is not None and batch < CAPPED_OCCUPANCY * c


def bound_at(table: pd.DataFrame, c: float) -> Bound:
    """The schedule's bound: the batch size the server that switches runs at C*.

    That server admits requests with its plain running-request cap (vLLM keeps
    max_num_seqs whatever the speculative config), so where the spec-on arm sat at a
    cap of its own at C* (SGLang lowers max_running_requests for speculation; the
    seed-glm profile models it) and the spec-off arm did not, the switching server's
    batch at C* is the spec-off server's: mapped through spec-on's capped batch, the
    bound would stop speculation at loads where the spec-on arm still led (the
    verification arm shows it: docs/benchmarks.md, "Recommendation bounds").
    """
    batch = batch_at(table, c)
    if batch is None:
        return Bound(c, None, max(1, math.floor(c)))
    off = batch_at(table, c, "batch_off") if "batch_off" in table else None
    if _capped(batch, c) and off is not None and not _capped(off, c):
        return Bound(c, off, max(1, math.floor(off)), capped=None, through="spec-off",
                     spec_on_batch=batch)
    last_on = max(1, math.floor(batch))
    above = table[(table["concurrency"] > c) & table["batch_on"].notna()]
    capped = None
    if len(above):
        first = above.iloc[0]
        reached = float(above["batch_on"].max())
        if first["batch_on"] < CAPPED_OCCUPANCY * first["concurrency"]:
            capped = round(reached)
        if last_on >= round(reached):  # the server never runs a batch above the bound
            last_on = max(1, round(reached) - 1)
    return Bound(c, batch, last_on, capped)


def _json(data: Any) -> str:
    """Indented JSON with each innermost list on one line ([1, 15, 3], not five lines)."""
    text = json.dumps(data, indent=2)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: json.dumps(json.loads(m.group(0))), text) + "\n"


def _cs(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values)


def _bound_words(bound: Bound) -> str:
    if bound.batch is None:
        return (f"speculate up to {bound.last_on} concurrent requests and turn it off "
                f"above (no running-requests gauge: the bound is in concurrency C, which "
                f"is the batch size only while nothing queues)")
    return (f"speculate up to batch size {bound.last_on} and turn it off from "
            f"{bound.last_on + 1}")


def _num(c: float) -> str:
    return f"{c:.0f}" if float(c).is_integer() else f"{c:.1f}"


def _at(c: float, batch: float | None, label: str = "C") -> str:
    return f"{label} = {_num(c)}" + (f", batch size {batch:.1f}" if batch is not None else "")


def _verdict_text(cross: Crossover, bound: Bound | None, top_batch: float | None) -> str:
    ties = f"within the noise band ({cross.band}) at C = {_cs(cross.ties)}"
    every = ("every concurrency where an arm meets the SLO" if cross.unmet else
             "every concurrency measured")
    if cross.verdict == ALWAYS:
        return (f"Speculation pays off at {every} (up to {_at(cross.below or 0, top_batch)}): "
                f"keep it on; extend the ladder to find where it stops.")
    if cross.verdict == NEVER:
        return f"Speculation is behind at {every} (from C = {cross.above}): turn it off."
    if cross.verdict == CROSSES and bound and cross.c_star is not None:
        text = f"Speculation pays off up to {_at(cross.c_star, bound.batch, 'C*')}: " \
               f"{_bound_words(bound)}."
        return text + (f" Neither setting is measurably better {ties}." if cross.ties else "")
    if cross.verdict == INCONCLUSIVE and bound and cross.off_above:
        return (f"Speculation pays off up to {_at(bound.concurrency, bound.batch)}; above, "
                f"the speedup is {ties}: {_bound_words(bound)}, or keep it on, as the noise "
                f"allows; re-measure with repeats to decide.")
    if cross.verdict == INCONCLUSIVE and cross.speculate_to is not None:
        below = _cs(sorted(set(cross.behind) | set(cross.ties)))
        return (f"Speculation pays off at the largest concurrency measured (C = "
                f"{cross.below}) but not at C = {below} (the curve is not monotone): keep "
                f"it on, and re-measure those rungs with repeats.")
    if cross.verdict == INCONCLUSIVE:
        behind = f", behind at C = {_cs(cross.behind)}" if cross.behind else ""
        return (f"Speculation never measurably pays off ({ties}{behind}): keep it off, or "
                f"re-measure with repeats.")
    if cross.verdict == SLO_UNMET:
        return "Neither arm meets the SLO at any concurrency measured: no recommendation."
    return "No concurrency was measured by both arms: no recommendation."


def _deployment_text(engine: str, cross: Crossover, bound: Bound | None) -> str:
    name = NAMES.get(engine, engine)
    head = f"{name} has no setting that turns speculation off by load."
    if bound is None or not cross.off_above:
        what = "keep speculation on" if cross.speculate_to is not None else \
            "run it without speculation (drop the draft-model flags)"
        return f"{head} Nothing to switch here: {what}."
    gate = (f"its running requests are below {bound.last_on + 1}" if bound.batch is not None
            else f"fewer than {bound.last_on + 1} requests are in flight to it")
    return (f"{head} Instead run two deployments, one with speculation for low load and one "
            f"without for high load, and route by load: send a request to the spec-on "
            f"deployment while {gate}, else to the spec-off one. If load changes slowly, "
            f"one deployment restarted with or without speculation by load level also "
            f"works: with it while concurrency stays below C = {_num(bound.concurrency)}.")


def _engine_lines(engine: str | None, vllm: dict[str, Any], flags: str,
                  tiers: Sequence[es.Tier], folder: str) -> list[str]:
    upper = es.trtllm_upper_bound_schedule(tiers)
    by_engine = {
        "vllm": f"vLLM --speculative-config (file {folder}/{VLLM_FILE}): {json.dumps(vllm)}",
        "sglang": f"SGLang (with {folder}/{SGLANG_FILE}): {flags}",
        "trtllm": f"TensorRT-LLM >= {es.TRTLLM_UPPER_BOUNDS_SINCE} (file {folder}/"
                  f"{TRTLLM_FILE}): draft_len_schedule {upper}",
    }
    if engine in by_engine:
        return [by_engine[engine]]
    return list(by_engine.values())


def readme(rec: Recommendation, title: str, folder: str) -> str:
    """The README.md of a recommendation's folder."""
    out = [f"# Recommended speculation setting: {title}", "",
           f"Verdict ({rec.verdict}, on {rec.basis}): {rec.summary}", ""]
    if rec.engine:
        out += [f"Engine: {NAMES.get(rec.engine, rec.engine)} ({rec.engine_source}).", ""]
    if rec.tiers:
        out += [f"Schedule: {es.describe(rec.tiers)}.", ""]
    if rec.files:
        out += ["| file | use |", "|---|---|"]
        uses = {VLLM_FILE: "`vllm serve <model> --speculative-config \"$(cat "
                           f"{folder}/{VLLM_FILE})\"`",
                SGLANG_FILE: f"`--speculative-adaptive-config {folder}/{SGLANG_FILE}`",
                SGLANG_FLAGS_FILE: "the `sglang.launch_server` speculative flags",
                TRTLLM_FILE: f"`trtllm-serve <model> --config {folder}/{TRTLLM_FILE}`"}
        out += [f"| {name} | {uses[name]} |" for name in rec.files if name in uses]
        out.append("")
    if rec.lines:
        out += [f"- {line}" for line in rec.lines] + [""]
    if rec.notes:
        out += ["Notes:", ""] + [f"- {note}" for note in rec.notes]
    return "\n".join(out).rstrip() + "\n"


def add_schedule(rec: Recommendation, tiers: tuple[es.Tier, ...], spec: SpecSettings,
                 folder: str) -> None:
    """A schedule in every load-aware engine's syntax: files, one line each, caveats."""
    rec.tiers = tiers
    rec.vllm_config = es.vllm_speculative_config(tiers, spec)
    rec.sglang_config = es.sglang_adaptive_config(tiers)
    flags = es.sglang_flags(tiers, spec, f"{folder}/{SGLANG_FILE}")
    rec.files = {VLLM_FILE: _json(rec.vllm_config), SGLANG_FILE: _json(rec.sglang_config),
                 SGLANG_FLAGS_FILE: flags + "\n",
                 TRTLLM_FILE: es.trtllm_yaml(tiers, spec)}
    rec.lines += _engine_lines(rec.engine, rec.vllm_config, flags, tiers, folder)
    rec.notes += [f"The arm's start command: {problem}." for problem in spec.problems]
    ks = [t.k for t in tiers]
    unknown = [(es.K_PLACEHOLDER, "your draft length")] if es.K_PLACEHOLDER in ks else []
    if not (spec.model or spec.method in es.NO_DRAFT_MODEL):
        unknown.append((es.MODEL_PLACEHOLDER, "your draft model"))
    rec.notes += [f"Replace {mark} with {what}: the run does not record it."
                  for mark, what in unknown]
    if spec.method not in (None, "eagle", "eagle3") and rec.engine in (None, "sglang"):
        rec.notes.append(f"The arm ran method {spec.method}: SGLang's adaptive mode takes "
                         "only EAGLE or EAGLE3.")
    # Every engine's file is written, so every engine's caveats go along; its own first.
    by_engine = {"vllm": VLLM_NOTES, "sglang": SGLANG_NOTES, "trtllm": TRTLLM_NOTES}
    for name in sorted(by_engine, key=lambda e: e != rec.engine):
        rec.notes += [f"{NAMES[name]}: {note}" for note in by_engine[name]]


def _add_threshold(rec: Recommendation, cross: Crossover, bound: Bound, spec: SpecSettings,
                   folder: str) -> None:
    """The threshold schedule (k up to the bound, off above) and its files."""
    k: es.Draft = spec.k if spec.k is not None else es.K_PLACEHOLDER
    add_schedule(rec, es.threshold_schedule(bound.last_on, k), spec, folder)
    if rec.engine == "other":
        rec.notes.append(_deployment_text("other", cross, bound))


def recommend(pair: PairResult, setup: ArmSetup, slo: SloTarget | None = None,
              folder: str = RECOMMENDED_DIR) -> Recommendation:
    """The recommendation for one pair; `folder` is where `render` writes its files."""
    cross = pair.decision
    basis = f"SLO goodput ({slo.describe()})" if slo and pair.goodput else "system tok/s"
    table = pair.speedup
    bound = (bound_at(table, cross.speculate_to)
             if cross.off_above and cross.speculate_to is not None else None)
    top_batch = batch_at(table, float(cross.below)) if cross.below else None
    summary = _verdict_text(cross, bound, top_batch)
    if cross.unmet:
        summary += f" Neither arm meets the SLO at C = {_cs(cross.unmet)}."
    if slo and pair.goodput:
        summary = f"On SLO goodput ({slo.describe()}): {summary}"
    engine = setup.engine
    rec = Recommendation(cross.verdict, basis, summary, bound, engine=engine,
                         engine_source=setup.engine_source,
                         load_aware=engine is None or engine in LOAD_AWARE or engine == "other")
    if bound and bound.capped is not None:
        rec.notes.append(
            f"The spec-on server ran at most about {bound.capped} requests above C* (a "
            f"running-request cap or a full KV cache): there its batch size stops following "
            f"C, so a batch-size schedule cannot tell higher loads apart; the bound, batch "
            f"size {bound.last_on}, stays below that cap.")
    if bound and bound.batch is not None:
        rec.notes.append(
            f"Batch sizes are the {bound.through} server's mean running requests "
            f"({' / '.join(engine_metrics.names_of('running', engine))}) at C*, "
            "interpolated in log C between the rungs around it.")
    if bound and bound.spec_on_batch is not None:
        rec.notes.append(
            f"At C* the spec-on server ran only {bound.spec_on_batch:.1f} requests (a "
            f"running-request cap under speculation) while the spec-off server ran "
            f"{bound.batch:.1f}. A server that switches speculation by batch size admits "
            f"requests with its plain cap, as the spec-off server did, so the bound is "
            f"the spec-off server's batch size at C*. If your engine keeps the lower cap "
            f"while the schedule is on, it never sees a batch above "
            f"{round(bound.spec_on_batch)}: run the verification arm to check.")
    if cross.verdict in (UNKNOWN, SLO_UNMET):
        pass
    elif engine is not None and not rec.load_aware:
        rec.lines.append(_deployment_text(engine, cross, bound))
    elif bound is not None:
        _add_threshold(rec, cross, bound, setup.spec.with_k(pair.on.k), folder)
    elif cross.speculate_to is not None:
        rec.lines.append("Keep speculation on as configured: no per-batch-size schedule "
                         "is needed up to the largest concurrency measured.")
    else:
        rec.lines.append("Serve without speculation (no --speculative-config / "
                         "--speculative-algorithm / speculative_config).")
    if rec.lines or rec.notes:
        rec.files[README_FILE] = readme(rec, f"{pair.on.name} vs {pair.off.name}", folder)
    return rec
