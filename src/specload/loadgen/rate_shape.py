"""`RateShape`: the open-loop rate ladder as a Locust load shape.

The shape makes the arrival plan (`specload.traffic.arrivals`) from `--rates`, `--warmup`,
`--measure`, `--arrivals`, `--arrival-cv` and `--seed`, starts it a moment after the
first tick (`LEAD_S`: the pool spawns and each load process gets its share, its start
moved to the process's own clock by the offset the master measured) and keeps
the pool of `--max-in-flight` users running: the arrivals, not the user count, make
the load. Each rung runs its warmup and measure window exactly (arrivals do not wait
for the server); as each measure window ends it is appended to the rungs file
(`records.RATE_RUNGS_COLUMNS`, with the rung's rate) and handed to the live rungs, as
the ladder shape does. After the last rung the users drain (at most `--drain`
seconds), arrivals still queued are counted in the log, and the shape stops. A shape
with another plan (`trace_shape.TraceShape`) overrides `plan`, `describe` and `columns`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from locust.runners import STATE_MISSING, MasterRunner

from specload.config.settings import Windows, from_attributes
from specload.errors import UserError
from specload.ladder.rungs import Where
from specload.loadgen.live import Span
from specload.loadgen.open_loop import ARRIVALS, MSG_PLAN, Plan, load_share
from specload.loadgen.shape import LadderShape, RungsFile, where_in
from specload.loadgen.workload_options import WorkloadOptions
from specload.runfiles.records import RATE_RUNGS_COLUMNS, RUNGS_SUFFIX
from specload.traffic.arrivals import ArrivalPlan, RateError, RateWindow, plan_rates

log = logging.getLogger(__name__)
LEAD_S = 2.0


def rate_plan(environment: Any) -> tuple[ArrivalPlan, int, float]:
    """The plan, the pool size and the drain bound from Locust's parsed options."""
    try:
        workload = WorkloadOptions.from_env(environment)
    except ValueError as exc:
        raise RateError(str(exc)) from None
    if not workload.rates:
        raise RateError("--rates is empty: give the arrival rates, e.g. 1,2,5")
    opts = environment.parsed_options
    w = from_attributes(Windows, opts)
    plan = plan_rates(workload.rate_list(), w.warmup_s, w.measure_s, workload.arrivals,
                      workload.cv, int(getattr(opts, "seed", 0) or 0))
    return plan, workload.max_in_flight, w.drain_s


class RateShape(LadderShape):
    """Run the arrival plan (see the module docstring); stop after the drain."""

    columns: tuple[str, ...] = RATE_RUNGS_COLUMNS  # of the rungs file

    def plan(self) -> tuple[Plan, int, float]:
        """The plan, the pool size and the drain bound; raises `RateError`."""
        return rate_plan(self._environment)

    def describe(self, plan: Plan) -> str:
        """The plan in the log's words."""
        assert isinstance(plan, ArrivalPlan)
        return (f"{','.join(f'{r.rate:g}' for r in plan.rungs)} arrivals/s ("
                f"{plan.kind if plan.kind == 'poisson' else f'gamma cv {plan.cv:g}'}), "
                f"{plan.rungs[0].warmup_s:.0f} s warmup + {plan.rungs[0].measure_s:.0f} s "
                "measure each")

    def reset_time(self) -> None:
        super().reset_time()
        windows = getattr(self, "_windows", None)
        if windows and windows[0].warmup_start > self._now():
            return  # Locust's master resets again at its first spawn: keep the plan it sent
        self._windows: list[RateWindow] | None = None
        self._written = 0

    def _begin(self) -> bool:
        opts = getattr(self._environment, "parsed_options", None)
        try:
            plan, self._pool, self._drain_s = self.plan()
        except (RateError, UserError) as exc:
            log.error("rate shape: %s; stopping", exc)
            return False
        prefix = getattr(opts, "csv_prefix", None)
        self._rungs_file = RungsFile(Path(prefix + RUNGS_SUFFIX) if prefix else None,
                                     self.columns)
        t0 = self._now() + LEAD_S
        self._windows = plan.windows(t0)
        self._send_plan(plan, t0)
        log.info("rate shape: %s, at most %d in flight", self.describe(plan), self._pool)
        return True

    def _send_plan(self, plan: Plan, t0: float) -> None:
        runner = self.runner
        if not isinstance(runner, MasterRunner):
            load_share(plan, t0)
            return
        live = self._live()
        offsets = live.offsets if live is not None else {}
        workers = sorted(c.id for c in runner.clients.all if c.state != STATE_MISSING)
        for index, worker in enumerate(workers):
            # the worker keeps the schedule on its own clock
            start = t0 + offsets.get(worker, 0.0)
            runner.send_message(MSG_PLAN, {"plan": plan.as_message(), "t0": start,
                                           "share": [index, len(workers)]}, client_id=worker)

    def where(self) -> Where | None:
        windows = getattr(self, "_windows", None)
        if not windows:
            return None
        return where_in([(w.rate if w.speed is None else w.speed, w.measure_start,
                          w.measure_end) for w in windows], self._now())

    def tick(self) -> tuple[int, float] | None:
        if getattr(self, "_windows", None) is None and not self._begin():
            return None
        windows = self._windows
        assert windows is not None
        now = self._now()
        live = self._polled_live()
        while self._written < len(windows) and now >= windows[self._written].measure_end:
            w = windows[self._written]
            self._rungs_file.append(w.index, self._pool, w.warmup_start, w.measure_start,
                                    w.measure_end, w.rate,
                                    *(() if w.speed is None else (w.speed,)))
            if live is not None:
                live.add_window(Span(w.index, self._pool, w.measure_start, w.measure_end,
                                     w.rate, w.speed))
            self._written += 1
        if self._written < len(windows):
            return self._pool, float(self._pool)
        if self._drain_started is None and ARRIVALS.remaining:
            log.warning("rate shape: %d arrivals of the plan were never sent (every user was "
                        "busy)", ARRIVALS.remaining)
        return self._drain_tick(now, live, (self._pool, float(self._pool)))
