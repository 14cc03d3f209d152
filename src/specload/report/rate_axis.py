"""Open-loop runs: speedup and the crossover as functions of the arrival rate.

Below saturation both arms serve every arrival, so their output tok/s are the same
(the offered load) and a throughput ratio says nothing; what speculation changes is
how long each request takes. The speedup at a rate is therefore the spec-off arm's
mean E2E over the spec-on arm's, both measured from the scheduled time (so a client
that held starts back is not flattered): by Little's law, the ratio of requests in
flight too. Its noise band, decisions and crossings come from `crossover.find_crossover`
on the rate axis; the rate where speculation stops paying off is rate*, given with the
requests in flight and the server's batch size there, and its bootstrap interval
(`c_star_interval`, on each rung's mean E2E and its standard error). A trace replay's
rungs are speeds of the trace, each rung's rate the speed times the trace's own: its
crossover is said in speed too, speed* (how much faster than logged the trace may come
before speculation stops paying). `workload_kind` tells which
kind of run (`traffic/kinds.py`) a report reads: the one its manifest names, guessed
from the summary's columns only where no manifest says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from specload.report.c_star_interval import Columns, Interval, c_star_interval
from specload.report.crossover import NOISE_BAND, Crossover, find_crossover, rung_decisions
from specload.report.run_files import ArmSource
from specload.runfiles.manifest import Manifest
from specload.traffic.kinds import KINDS, LOAD_STEPS, OPEN, SESSIONS, USERS, WorkloadKind

RATE_COLUMNS = ("rate", "speed", "speedup", "band_lo", "band_hi", "decision",
                "e2e_sched_mean_ms_on", "e2e_sched_mean_ms_off", "output_tok_s_on",
                "output_tok_s_off", "achieved_rate_on", "achieved_rate_off", "in_flight_on",
                "in_flight_off", "batch_on", "batch_off")
PACE = Columns(level="rate", value="pace", se="pace_se")
_ARM = {"e2e_sched_mean_ms": "e2e_sched_mean_ms", "output_tok_s": "output_tok_s",
        "achieved_rate": "achieved_rate", "achieved_concurrency": "in_flight",
        "server_running_mean": "batch"}


def workload_kind(manifest: Manifest | None, summary: pd.DataFrame) -> WorkloadKind:
    """The run's kind: its manifest's `workload.kind` (a scenario without `workload:` ran
    users); `guessed_kind` for a folder without a manifest, a Locust prefix, or a kind
    this version does not know."""
    if manifest is None:
        return guessed_kind(summary)
    workload = manifest.scenario.get("workload")
    name = workload.get("kind", USERS.name) if isinstance(workload, dict) else USERS.name
    return KINDS.get(str(name)) or guessed_kind(summary)


def guessed_kind(summary: pd.DataFrame) -> WorkloadKind:
    """The kind a summary's columns suggest: rates make an open-loop run, steps a
    load-step run, rungs with sessions a sessions run."""
    if "rate" in summary and summary["rate"].notna().any():
        return OPEN
    if "step" in summary and summary["step"].notna().any():
        return LOAD_STEPS
    if "sessions" in summary and (summary["sessions"].fillna(0) > 0).any():
        return SESSIONS
    return USERS


@dataclass(slots=True)
class RatePair:
    """One spec-on/spec-off pair of an open-loop run, on the rate axis."""

    on: ArmSource
    off: ArmSource
    table: pd.DataFrame  # RATE_COLUMNS, one row per rate both arms ran
    crossover: Crossover  # c_star is rate*
    interval: Interval | None = None  # on rate*

    @property
    def per_speed(self) -> float | None:
        """A trace replay's rate at speed 1 (the rate over the speed); None otherwise."""
        part = self.table[["rate", "speed"]].dropna()
        return float((part["rate"] / part["speed"]).mean()) if not part.empty else None

    @property
    def speed_star(self) -> float | None:
        base = self.per_speed
        return None if base is None or self.crossover.c_star is None else \
            self.crossover.c_star / base

    @property
    def speed_interval(self) -> Interval | None:
        """The interval in trace speed (a trace replay's)."""
        base, span = self.per_speed, self.interval
        if base is None or span is None:
            return None
        return replace(span, lo=span.lo / base, hi=span.hi / base, bottom=span.bottom / base,
                       top=span.top / base, name="speed*", at="{:g}x")

    def at_rate_star(self, column: str) -> float | None:
        """A table column (e.g. in_flight_on, batch_on) interpolated at rate*, in log rate."""
        rate = self.crossover.c_star
        part = self.table[["rate", column]].dropna()
        if rate is None or part.empty or not part["rate"].min() <= rate <= part["rate"].max():
            return None
        return float(np.interp(math.log(rate), np.log(part["rate"].to_numpy(float)),
                               part[column].to_numpy(float)))

    def as_dict(self) -> dict[str, object]:
        return {"spec_on": self.on.name, "spec_off": self.off.name,
                "speedup_basis": "spec-off mean E2E / spec-on mean E2E, from the schedule",
                "table": self.table.to_dict(orient="records"),
                "crossover": self.crossover.as_dict(), "rate_star": self.crossover.c_star,
                "in_flight_at_rate_star": self.at_rate_star("in_flight_on"),
                "batch_at_rate_star": self.at_rate_star("batch_on"),
                "rate_star_interval": self.interval.as_dict() if self.interval else None,
                "speed_star": self.speed_star,
                "speed_star_interval": (self.speed_interval.as_dict()
                                        if self.speed_interval else None)}


def _arm(summary: pd.DataFrame, arm: str) -> pd.DataFrame:
    rows = summary.loc[summary["arm"] == arm].rename(columns=_ARM)
    return rows.reindex(columns=["rate", "speed", *_ARM.values()])


def _paces(per_rep: pd.DataFrame, arm: str) -> pd.DataFrame:
    """An arm's per-repeat rows with its pace, 1 / mean E2E (per second), and its
    standard error: their ratio is the speedup."""
    rows = per_rep.loc[per_rep["arm"] == arm].reindex(
        columns=["rep", "rate", "e2e_sched_mean_ms", "e2e_sched_mean_ms_se"])
    e2e = rows["e2e_sched_mean_ms"] / 1e3
    return rows.assign(pace=1.0 / e2e, pace_se=rows["e2e_sched_mean_ms_se"] / 1e3 / e2e**2)


def analyse_rates(on: ArmSource, off: ArmSource, summary: pd.DataFrame,
                  per_rep: pd.DataFrame | None = None) -> RatePair:
    """Latency speedup per rate with a ±2% band, its decisions, rate* and, from the
    per-repeat rows, its interval."""
    table = _arm(summary, on.name).merge(_arm(summary, off.name), on=["rate", "speed"],
                                         suffixes=("_on", "_off")).sort_values("rate")
    table["speedup"] = table["e2e_sched_mean_ms_off"] / table["e2e_sched_mean_ms_on"]
    table["band_lo"] = table["speedup"] - NOISE_BAND
    table["band_hi"] = table["speedup"] + NOISE_BAND
    table["decision"] = rung_decisions(table["band_lo"], table["band_hi"])
    table = table.reindex(columns=list(RATE_COLUMNS)).reset_index(drop=True)
    crossover = find_crossover(table["rate"], table["speedup"], table["band_lo"],
                               table["band_hi"])
    interval = None
    if per_rep is not None and "e2e_sched_mean_ms_se" in per_rep:
        both = table.loc[np.isfinite(table["speedup"]), "rate"].to_numpy()
        interval = c_star_interval(both, _paces(per_rep, on.name), _paces(per_rep, off.name),
                                   cols=PACE, name="rate*", at="{:g}/s")
    return RatePair(on, off, table, crossover, interval)


def rate_lines(pair: RatePair) -> list[str]:
    """The pair's verdict on the rate axis (a trace replay's: in trace speed), in words."""
    cross, speed = pair.crossover, pair.speed_star
    replay = pair.per_speed is not None
    head = (f"{pair.on.name} vs {pair.off.name} ("
            f"{'trace replay' if replay else 'open loop'}, speedup on mean E2E): ")
    if cross.c_star is None:
        return [head + f"{'speed*' if replay else 'rate*'}: none ({cross.verdict})"]
    at = [f"{what} {value:.1f}" for what, value in
          (("in flight", pair.at_rate_star("in_flight_on")),
           ("batch size", pair.at_rate_star("batch_on"))) if value is not None]
    span = pair.speed_interval if replay else pair.interval
    tail = f"; {span.words()}" if span is not None else ""
    if speed is not None:
        return [head + f"speculation pays up to {speed:.2g}x this trace's rate (speed* = "
                f"{speed:.3g}, rate* = {cross.c_star:.3g}/s{'; ' if at else ''}"
                f"{', '.join(at)}), between speeds {_speed(pair, cross.below)} and "
                f"{_speed(pair, cross.above)}{tail}"]
    return [head + f"rate* = {cross.c_star:.3g}/s" + (f" ({', '.join(at)})" if at else "")
            + f", between {cross.below}/s and {cross.above}/s{tail}"]


def _speed(pair: RatePair, rate: float | None) -> str:
    """The speed of the rung at `rate`, as the rungs say it: 2x."""
    at = pair.table.loc[pair.table["rate"] == rate, "speed"]
    return "-" if at.empty else f"{float(at.iloc[0]):g}x"
