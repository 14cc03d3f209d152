"""`StepShape`: load steps as a Locust load shape, the user count jumping step to step.

`--steps 4,128,4` holds each user count for `--step-time` seconds, reached at once (the
spawn rate is the largest jump): the first half of a step is where the server settles
after the jump, the second half its steady window. The steps are handed to the live
rungs as they end (the web UI's Tokens tab), but written to the rungs file
(`records.STEP_RUNGS_COLUMNS`: the steady window, the jump as the warmup's start, the
count jumped from) only once the last step has ended: a step is measured from the one
before it, so a run stopped midway keeps no step and its repeat runs again whole. Then
the users drain (at most `--drain` seconds) and the shape stops.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from specload.config.settings import Windows, from_attributes
from specload.ladder.rungs import LadderError, Where, parse_ladder, validate_steps
from specload.loadgen.live import Span
from specload.loadgen.shape import LadderShape, RungsFile, where_in
from specload.loadgen.workload_options import WorkloadOptions
from specload.runfiles.records import RUNGS_SUFFIX, STEP_RUNGS_COLUMNS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Step:
    """One step, its times in epoch seconds."""

    index: int
    users: int
    from_users: int
    start: float  # the jump
    steady: float  # its steady window's start
    end: float


def plan_steps(users: list[int], step_s: float, t0: float) -> list[Step]:
    """The steps from `t0`, each `step_s` long; LadderError with every problem."""
    problems = validate_steps(users)
    if problems:
        raise LadderError("; ".join(problems))
    return [Step(i, u, users[i - 1] if i else 0, t0 + i * step_s, t0 + (i + 0.5) * step_s,
                 t0 + (i + 1) * step_s) for i, u in enumerate(users)]


class StepShape(LadderShape):
    """Step through the user counts (see the module docstring); stop after the drain."""

    def reset_time(self) -> None:
        super().reset_time()
        self._steps: list[Step] | None = None
        self._ended = 0

    def _begin(self) -> bool:
        env = self._environment
        opts = getattr(env, "parsed_options", None)
        try:
            workload = WorkloadOptions.from_env(env)
            users = parse_ladder(workload.steps) if workload.steps else []
            self._steps = plan_steps(users, workload.step_s, self._now())
        except (LadderError, ValueError) as exc:
            log.error("step shape: %s; stopping", exc)
            return False
        self._drain_s = from_attributes(Windows, opts).drain_s
        prefix = getattr(opts, "csv_prefix", None)
        self._rungs_file = RungsFile(Path(prefix + RUNGS_SUFFIX) if prefix else None,
                                     STEP_RUNGS_COLUMNS)
        self._rate = float(max(abs(s.users - s.from_users) for s in self._steps))
        log.info("step shape: %s users, %.0f s each (steady from half-way), spawn rate "
                 "%.0f", ",".join(str(s.users) for s in self._steps), workload.step_s,
                 self._rate)
        return True

    def where(self) -> Where | None:
        steps = getattr(self, "_steps", None)
        if not steps:
            return None
        return where_in([(s.users, s.steady, s.end) for s in steps], self._now())

    def tick(self) -> tuple[int, float] | None:
        if getattr(self, "_steps", None) is None and not self._begin():
            return None
        steps = self._steps
        assert steps is not None
        now = self._now()
        live = self._polled_live()
        while self._ended < len(steps) and now >= steps[self._ended].end:
            s = steps[self._ended]
            if live is not None:
                live.add_window(Span(s.index, s.users, s.steady, s.end))
            self._ended += 1
            if self._ended == len(steps):
                for done in steps:
                    self._rungs_file.append(done.index, done.users, done.start,
                                            done.steady, done.end, done.from_users)
        if self._ended < len(steps):
            return steps[self._ended].users, self._rate
        return self._drain_tick(now, live, (steps[-1].users, self._rate))
