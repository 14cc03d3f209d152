"""`TraceShape`: a trace replayed at the speeds of a speed ladder, as a Locust load shape.

`rate_shape.RateShape` with another plan: `traffic/trace_plan.py`'s, made from
`--trace` (read here, on the master's machine: the plan carries the window's requests to
every load process), `--trace-format`, `--trace-start`, `--trace-duration`, `--speeds`
and `--warmup`. Each rung's measure window is the whole window at its speed; the rungs
file (`records.TRACE_RUNGS_COLUMNS`) has each rung's planned rate and its speed.
"""

from __future__ import annotations

from specload.config.settings import Windows, from_attributes
from specload.loadgen.open_loop import Plan
from specload.loadgen.rate_shape import RateShape
from specload.loadgen.workload_options import WorkloadOptions
from specload.runfiles.records import TRACE_RUNGS_COLUMNS
from specload.traffic.arrivals import RateError
from specload.traffic.trace_plan import TracePlan, plan_speeds
from specload.traffic.traces import load_trace


class TraceShape(RateShape):
    """Replay the trace's window at each speed (see the module docstring)."""

    columns = TRACE_RUNGS_COLUMNS

    def plan(self) -> tuple[Plan, int, float]:
        try:
            workload = WorkloadOptions.from_env(self._environment)
        except ValueError as exc:
            raise RateError(str(exc)) from None
        if not workload.trace:
            raise RateError("--trace is empty: give the trace file to replay")
        if not workload.speeds:
            raise RateError("--speeds is empty: give the speeds to replay it at, e.g. 1,2,4")
        trace = load_trace(workload.trace, workload.trace_format).window(
            workload.start_s, workload.duration_s or None)
        w = from_attributes(Windows, self._environment.parsed_options)
        return (plan_speeds(trace, workload.speed_list(), w.warmup_s), workload.max_in_flight,
                w.drain_s)

    def describe(self, plan: Plan) -> str:
        assert isinstance(plan, TracePlan)
        trace = plan.trace
        return (f"{trace.source} ({trace.format}): {len(trace.requests)} requests over "
                f"{trace.length_s:.0f} s at speeds {','.join(f'{x:g}' for x in plan.speeds)}"
                f", {plan.rungs[0].warmup_s:.0f} s warmup each")
