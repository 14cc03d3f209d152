"""The recommendation for one spec-on/spec-off pair as a decision: data, no words.

The pair's decision curve (SLO goodput when the scenario has an SLO, system tok/s
otherwise; see `crossover`) gives a policy: speculate everywhere, nowhere, or up to a
concurrency and not above. That concurrency becomes the batch size the switching server
runs there, read from the servers' running-requests gauge (spec-on's, or spec-off's
where spec-on sat at a cap of its own; `bound_at`); without the gauge the bound stays
in C. For an engine that switches speculation by load, or one not known, the policy is
a threshold schedule with every registered load switch's setting of it
(`engines.switches`); for one that cannot, two deployments routed by load. `recommend`
returns that `Decision` (a multi-k study's schedule is one too, `study_decision`);
`recommend_text` renders its words and files, and a `Schedule` is what a verification
arm runs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from specload import engines
from specload.engines import schedule as es
from specload.engines.spec_command import SpecSettings, parse_command
from specload.report.crossover import SLO_UNMET, UNKNOWN, Crossover, PairResult
from specload.report.run_files import ArmSource
from specload.report.slo import SloTarget

RECOMMENDED_DIR = "recommended"
README_FILE = "README.md"
# Below this occupancy (mean running requests / C) at the rung above the bound, the
# spec-on server queued requests instead of batching them: a running-request cap.
CAPPED_OCCUPANCY = 0.9
# schedule: a schedule in every load switch's syntax; route: deployments routed by load;
# keep_on / turn_off: speculation as configured / none; none: nothing to recommend
Action = Literal["schedule", "route", "keep_on", "turn_off", "none"]


def engine_files() -> tuple[str, ...]:
    """Every file a recommendation's folder may hold (a re-run removes the old ones)."""
    return (*(n for _, switch in engines.switches() for n in switch.writer.names),
            README_FILE)


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


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do about speculation, and with which schedule, as data."""

    verdict: str
    action: Action
    setup: ArmSetup  # the spec-on arm's engine and settings (k filled in from the arm)
    crossover: Crossover | None = None  # None: a multi-k study's schedule
    slo: SloTarget | None = None  # the SLO whose goodput decided; None: system tok/s
    bound: Bound | None = None
    top_batch: float | None = None  # spec-on's batch at the largest C it leads at
    tiers: tuple[es.Tier, ...] | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # engine id -> its setting

    @property
    def engine(self) -> str | None:
        return self.setup.engine

    @property
    def engine_source(self) -> str:
        return self.setup.engine_source

    @property
    def load_aware(self) -> bool:
        return engines.load_aware(self.engine)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A recommended schedule for the verification arm, and the files that carry it."""

    tiers: tuple[es.Tier, ...]
    spec: SpecSettings
    folder: str  # where the files go, relative to the run folder
    files: dict[str, str]  # name -> text

    def ranges(self) -> list[list[es.Draft]]:
        """vLLM's inclusive [start, end, k] ranges, the simulator's and manifest's form."""
        return es.ranges(self.tiers)


def arm_setup(arm: ArmSource) -> ArmSetup:
    """Engine and speculative settings of an arm: from its command (its shell variables
    from this process's environment, which ran it at sweep time), else its sim profile."""
    spec = parse_command(arm.command, os.environ)
    if arm.kind == "sim" and arm.profile and not spec.method:
        # only here: a run on real engines never loads the simulator (or YAML)
        from specload.sim import SimConfigError
        from specload.sim.profile import load_profile

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
    measured = table[table["batch_on"].notna() & (table["concurrency"] > 0)].sort_values(
        "concurrency")
    above = measured[measured["concurrency"] > c]
    capped = None
    if len(above):
        reached = float(above["batch_on"].max())
        if _stops_following_c(measured, c):
            capped = round(reached)
        if last_on >= round(reached):  # the server never runs a batch above the bound
            last_on = max(1, round(reached) - 1)
    return Bound(c, batch, last_on, capped)


def _stops_following_c(measured: pd.DataFrame, c: float) -> bool:
    """Whether spec-on's running requests stop growing with C above C*: its share of C at
    the top rung falls well below its share at the last rung up to C* (a running-request
    cap or a full KV cache). A share below 1 that holds from rung to rung is no cap: each
    user spends part of its turn outside the engine."""
    share = measured["batch_on"] / measured["concurrency"]
    upto = share[measured["concurrency"] <= c]
    reference = float(upto.iloc[-1] if len(upto) else share.iloc[0])
    return float(share.iloc[-1]) < CAPPED_OCCUPANCY * reference


def settings_of(tiers: tuple[es.Tier, ...] | None, spec: SpecSettings) -> dict[str, Any]:
    """Every load switch's setting of a schedule, by engine id (none without one)."""
    if not tiers:
        return {}
    return {e.id: switch.writer.setting(tiers, spec) for e, switch in engines.switches()}


def _action(cross: Crossover, bound: Bound | None, engine: str | None) -> Action:
    if cross.verdict in (UNKNOWN, SLO_UNMET):
        return "none"
    if engine is not None and not engines.load_aware(engine):
        return "route"
    if bound is not None:
        return "schedule"
    return "keep_on" if cross.speculate_to is not None else "turn_off"


def recommend(pair: PairResult, setup: ArmSetup, slo: SloTarget | None = None) -> Decision:
    """The decision for one pair; `slo` is the scenario's, if it has one."""
    cross = pair.decision
    table = pair.speedup
    bound = (bound_at(table, cross.speculate_to)
             if cross.off_above and cross.speculate_to is not None else None)
    top_batch = batch_at(table, float(cross.below)) if cross.below else None
    setup = replace(setup, spec=setup.spec.with_k(pair.on.k))
    action = _action(cross, bound, setup.engine)
    tiers = None
    if action == "schedule" and bound is not None:
        k: es.Draft = setup.spec.k if setup.spec.k is not None else es.K_PLACEHOLDER
        tiers = es.threshold_schedule(bound.last_on, k)
    return Decision(cross.verdict, action, setup, cross, slo if slo and pair.goodput else None,
                    bound, top_batch, tiers, settings_of(tiers, setup.spec))


def study_decision(tiers: tuple[es.Tier, ...], setup: ArmSetup) -> Decision:
    """A multi-k study's schedule as a decision (no k > 0 anywhere: serve without)."""
    if tiers == (es.Tier(None, 0),):
        return Decision("multi-k", "turn_off", setup)
    return Decision("multi-k", "schedule", setup, tiers=tiers,
                    settings=settings_of(tiers, setup.spec))
