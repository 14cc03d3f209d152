"""`LadderShape`: the concurrency ladder as a Locust load shape, plus its rungs file.

The shape walks through the plan from `specload.ladder`: each rung holds its user
count for a warmup window and then a measure window, and every new user count is
reached at once (the spawn rate is the largest jump in the ladder). The ladder and the
two windows are Locust custom arguments (`--ladder 1,2,5,10 --warmup 10 --measure 30`),
so they show up as fields in the web UI and travel to workers in spawn messages; the
shape itself runs only where Locust runs shapes (the master, or the single process).

Rung boundaries are written to `<csv prefix>_rungs.csv` (`records.RUNGS_COLUMNS`, UTC
epoch seconds), one row appended as each rung's measure window ends. Only rungs whose
measure window completed are written, so a run stopped mid-rung keeps exactly its
finished rungs. Locust ticks shapes about once a second, so a rung can begin up to a
second after the plan; the rest of the plan then shifts by that delay, so every rung
keeps its full warmup and measure windows: `warmup_start` is when the shape actually
asked for the rung's user count, `measure_start` = warmup_start + warmup and
`measure_end` = measure_start + measure, at which the users are still at its count.
Without `--csv` (a plain web-UI session) there is no run folder, so no rungs file is
written and the report falls back to segmenting Locust's own history by user count.
A new start (e.g. pressing Start again in the web UI) begins a fresh rungs file.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from locust import LoadTestShape, events

from specload.ladder import (
    DEFAULT_LADDER,
    DEFAULT_MEASURE_S,
    DEFAULT_WARMUP_S,
    LadderError,
    Rung,
    parse_ladder,
    plan,
    rung_at,
    spawn_rate,
)
from specload.records import RUNGS_COLUMNS, RUNGS_SUFFIX

log = logging.getLogger(__name__)


@events.init_command_line_parser.add_listener
def add_ladder_arguments(parser: Any) -> None:
    """Register the ladder options; shown in the web UI's custom parameters."""
    # On the parser itself: argument groups bypass LocustArgumentParser.add_argument, and
    # with it the web-UI flag.
    parser.add_argument(
        "--ladder",
        type=str,
        default=",".join(map(str, DEFAULT_LADDER)),
        include_in_web_ui=True,
        help="ladder: comma-separated increasing user counts, one rung each",
    )
    parser.add_argument(
        "--warmup", type=float, default=DEFAULT_WARMUP_S, include_in_web_ui=True,
        help="ladder: warmup seconds per rung (not measured)",
    )
    parser.add_argument(
        "--measure", type=float, default=DEFAULT_MEASURE_S, include_in_web_ui=True,
        help="ladder: measured seconds per rung",
    )


class RungsFile:
    """Appends one rungs row per finished rung; a new run starts a new file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", newline="") as fh:
                csv.writer(fh).writerow(RUNGS_COLUMNS)

    def append(self, rung: int, users: int, warmup: float, start: float, end: float) -> None:
        if self.path is None:
            return
        with self.path.open("a", newline="") as fh:
            csv.writer(fh).writerow(
                [rung, users, f"{warmup:.6f}", f"{start:.6f}", f"{end:.6f}"]
            )


class LadderShape(LoadTestShape):
    """Hold each ladder rung for warmup + measure seconds; stop after the last rung."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._now = clock
        self._rungs: list[Rung] | None = None
        self._rate = 1.0
        self._t0_epoch = clock()
        self._current: Rung | None = None
        self._shift = 0.0  # how far the plan has slipped behind the clock, seconds
        self._rungs_file = RungsFile(None)
        super().__init__()

    def reset_time(self) -> None:
        """Start the clock and re-read the options: called by Locust at each test start."""
        super().reset_time()
        self._t0_epoch = self._now()
        self._rungs = None
        self._current = None
        self._shift = 0.0

    def get_run_time(self) -> float:
        """Seconds since the test started, on the same clock as the rungs file."""
        return self._now() - self._t0_epoch

    def _options(self) -> tuple[list[int], float, float, Path | None]:
        opts = getattr(getattr(self.runner, "environment", None), "parsed_options", None)
        ladder = getattr(opts, "ladder", None)
        users = parse_ladder(ladder) if isinstance(ladder, str) else list(DEFAULT_LADDER)
        warmup = float(getattr(opts, "warmup", DEFAULT_WARMUP_S))
        measure = float(getattr(opts, "measure", DEFAULT_MEASURE_S))
        prefix = getattr(opts, "csv_prefix", None)
        return users, warmup, measure, Path(prefix + RUNGS_SUFFIX) if prefix else None

    def _begin(self) -> bool:
        try:
            users, warmup, measure, rungs_path = self._options()
            self._rungs = plan(users, warmup, measure)
        except LadderError as exc:
            log.error("ladder shape: %s; stopping", exc)
            return False
        self._rate = spawn_rate(self._rungs)
        self._rungs_file = RungsFile(rungs_path)
        log.info(
            "ladder shape: %s users, %.0f s warmup + %.0f s measure per rung, spawn rate %.0f",
            ",".join(str(s.users) for s in self._rungs), warmup, measure, self._rate,
        )
        return True

    def _finish_current(self, plan_time: float) -> None:
        rung = self._current
        if rung is None or plan_time < rung.measure_end:
            return
        origin = self._t0_epoch + self._shift
        self._rungs_file.append(rung.index, rung.users, origin + rung.warmup_start,
                                origin + rung.measure_start, origin + rung.measure_end)
        self._current = None

    def tick(self) -> tuple[int, float] | None:
        if self._rungs is None and not self._begin():
            return None
        assert self._rungs is not None
        plan_time = self.get_run_time() - self._shift
        self._finish_current(plan_time)
        rung = rung_at(self._rungs, plan_time)
        if rung is None:
            return None
        if self._current is None or rung.index != self._current.index:
            # the rung starts now, not when planned: slide the rest of the plan
            self._shift += plan_time - rung.warmup_start
            self._current = rung
        return rung.users, self._rate
