"""`LadderShape`: the concurrency ladder as a Locust load shape, plus its rungs file.

The shape walks through the plan from `specload.ladder.rungs` with its pure `advance`: each
rung holds its user count through a warmup (until the closed loop has turned over once,
at most `--warmup` seconds) and a measure window (at least `--measure` seconds and until
`--min-requests` requests that started in it have completed, at most `--max-measure`
seconds); after the last rung it drains (users finish their request and start no new
one, at most `--drain` seconds), then stops. Every new user count is reached at once
(the spawn rate is the largest jump in the ladder). The options are Locust custom
arguments, so they show up as fields in the web UI and travel to workers in spawn
messages; the shape itself runs where Locust runs shapes (the master, or the single
process), and learns completions and in-flight counts from the live rungs (`live.py`).
`phases()` tells live views where the run has been so far, `where()` where it is.

Rung boundaries are written to `<csv prefix>_rungs.csv` (`records.RUNGS_COLUMNS`, UTC
epoch seconds), one row appended as each rung's measure window ends, with the times the
shape really changed the user count (Locust ticks shapes about once a second). Only
rungs whose measure window completed are written, so a run stopped mid-rung keeps
exactly its finished rungs. Without `--csv` (a plain web-UI session) there is no run
folder: no rungs file is written, and the report falls back to segmenting Locust's own
history by user count. A new start (e.g. pressing Start again in the web UI) begins a
fresh rungs file.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from locust import LoadTestShape, events
from locust.runners import MasterRunner

from specload.config.settings import Windows, from_attributes
from specload.ladder.rungs import (
    DEFAULT_DRAIN_S,
    DEFAULT_LADDER,
    LadderError,
    PhaseSpan,
    Position,
    Rung,
    RungPlan,
    Where,
    advance,
    parse_ladder,
    phase_spans,
    plan,
    spawn_rate,
    start,
)
from specload.loadgen import wall_clock
from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.live import LiveRungs, Span
from specload.loadgen.options import add_arguments
from specload.loadgen.recorder import MSG_DRAIN
from specload.runfiles.records import RUNGS_COLUMNS, RUNGS_SUFFIX, rung_time

log = logging.getLogger(__name__)


def add_ladder_arguments(parser: Any) -> None:
    """Register the ladder and its windows (`settings.Windows`); shown in the web UI."""
    # On the parser itself: argument groups bypass LocustArgumentParser.add_argument, and
    # with it the web-UI flag.
    parser.add_argument(
        "--ladder", type=str, default=",".join(map(str, DEFAULT_LADDER)),
        include_in_web_ui=True,
        help="ladder: comma-separated increasing user counts, one rung each")
    add_arguments(parser, Windows)


class RungsFile:
    """Appends one rungs row per finished rung; a new run starts a new file."""

    def __init__(self, path: Path | None, columns: Sequence[str] = RUNGS_COLUMNS) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", newline="") as fh:
                csv.writer(fh).writerow(columns)

    def append(self, rung: int, users: int, warmup: float, start: float, end: float,
               *more: float) -> None:
        if self.path is None:
            return
        with self.path.open("a", newline="") as fh:
            csv.writer(fh).writerow(
                [rung, users, rung_time(warmup), rung_time(start), rung_time(end),
                 *(f"{m:g}" for m in more)]
            )


def ladder_plan(opts: Any) -> tuple[list[RungPlan], float]:
    """The plan and the drain bound from Locust's parsed options (defaults if absent)."""
    ladder = getattr(opts, "ladder", None)
    users = parse_ladder(ladder) if isinstance(ladder, str) else list(DEFAULT_LADDER)
    w = from_attributes(Windows, opts)
    rungs = plan(users, w.warmup_s, w.measure_s, w.min_requests, w.max_measure_s or None)
    return rungs, w.drain_s


def where_in(windows: Sequence[tuple[float, float, float]], now: float) -> Where:
    """Where `now` falls among rungs given as (level, measure start, end) in order: the
    first not over, warming up before its measure window; after the last, the drain."""
    for level, measure_start, end in windows:
        if now < end:
            return Where(level, "warmup" if now < measure_start else "measure")
    return Where(None, "drain")


class LadderShape(LoadTestShape):
    """Walk the ladder (see the module docstring); stop after the drain."""

    def __init__(self, clock: Callable[[], float] = wall_clock.now,
                 live: LiveRungs | None = None) -> None:
        self._now = clock
        self._live_given = live
        self._rungs: list[RungPlan] | None = None
        self._drain_s = DEFAULT_DRAIN_S
        self._rate = 1.0
        self._t0_epoch = clock()
        self._pos: Position | None = None
        self._finished: list[Rung] = []
        self._drain_seq = 0
        self._rungs_file = RungsFile(None)
        super().__init__()

    def reset_time(self) -> None:
        """Start the clock and re-read the options: called by Locust at each test start."""
        super().reset_time()
        self._t0_epoch = self._now()
        self._rungs = None
        self._pos = None
        self._finished = []
        self._drain_started: float | None = None

    def get_run_time(self) -> float:
        """Seconds since the test started, on the same clock as the rungs file."""
        return self._now() - self._t0_epoch

    @property
    def _environment(self) -> Any:
        return getattr(self.runner, "environment", None)

    def _live(self) -> LiveRungs | None:
        if self._live_given is not None:
            return self._live_given
        env = self._environment
        return LiveRungs.for_env(env) if env is not None else None

    def _begin(self) -> bool:
        opts = getattr(self._environment, "parsed_options", None)
        try:
            self._rungs, self._drain_s = ladder_plan(opts)
        except LadderError as exc:
            log.error("ladder shape: %s; stopping", exc)
            return False
        prefix = getattr(opts, "csv_prefix", None)
        self._rungs_file = RungsFile(Path(prefix + RUNGS_SUFFIX) if prefix else None)
        self._rate = spawn_rate(self._rungs, self._processes())
        self._pos = start(self._now())
        log.info("ladder shape: %s users, warmup <= %.0f s, measure >= %.0f s (until %d "
                 "requests completed, <= %.0f s), spawn rate %.0f",
                 ",".join(str(r.users) for r in self._rungs), self._rungs[0].warmup_s,
                 self._rungs[0].measure_s, self._rungs[0].min_requests,
                 self._rungs[0].max_measure_s, self._rate)
        return True

    def _polled_live(self) -> LiveRungs | None:
        """The live rungs, kept (a run is under way) and read up to now."""
        live = self._live()
        if live is not None:
            live.active = True
            live.poll()
        return live

    def _drain_tick(self, now: float, live: LiveRungs | None, hold: tuple[int, float]
                    ) -> tuple[int, float] | None:
        """After a fixed-time plan's last rung: start the drain once, then keep `hold`
        until nothing is in flight or the drain bound has passed (None: stop)."""
        if self._drain_started is None:
            self._drain_started = now
            self._start_drain()
        drained = live.drained(self._drain_seq) if live is not None else True
        if drained or now - self._drain_started >= self._drain_s:
            return None
        return hold

    def _processes(self) -> int:
        """Load processes the users are spread over (a master's workers, else this one)."""
        runner = self.runner
        return max(1, runner.worker_count) if isinstance(runner, MasterRunner) else 1

    def phases(self) -> list[PhaseSpan]:
        """The warmup and measure windows so far and the phase in progress."""
        return phase_spans(self._rungs or [], self._finished, self._pos)

    def where(self) -> Where | None:
        """The rung in progress and its phase (None before the first tick and after the
        end), for the live figures' labels."""
        pos, rungs = self._pos, self._rungs
        if pos is None or rungs is None or pos.phase == "done":
            return None
        if pos.phase == "drain":
            return Where(None, "drain")
        return Where(rungs[pos.rung].users, pos.phase)

    def tick(self) -> tuple[int, float] | None:
        if self._rungs is None and not self._begin():
            return None
        assert self._rungs is not None and self._pos is not None
        now = self._now()
        live = self._polled_live()
        completed = live.completed_since if live is not None else (lambda t: 0)
        first_end = live.first_end_since if live is not None else (lambda t: t)
        drained = live.drained(self._drain_seq) if live is not None else True
        pos, finished = advance(self._rungs, self._pos, now, completed, self._drain_s,
                                drained, first_end)
        if finished is not None:
            self._finished.append(finished)
            self._rungs_file.append(finished.index, finished.users, finished.warmup_start,
                                    finished.measure_start, finished.measure_end)
            live = self._live()
            if live is not None:
                live.add_window(Span(finished.index, finished.users,
                                     finished.measure_start, finished.measure_end))
        if pos.phase == "drain" and self._pos.phase != "drain":
            self._start_drain()
        if pos.phase == "done" and not drained:
            log.warning("ladder shape: drain bound of %.0f s reached; requests still in "
                        "flight are cut", self._drain_s)
        self._pos = pos
        if pos.phase == "done":
            return None
        users = self._rungs[min(pos.rung, len(self._rungs) - 1)].users
        return users, self._rate

    def _start_drain(self) -> None:
        """Users finish their requests and start no new ones (on every load process)."""
        self._drain_seq += 1
        runner = self.runner
        if isinstance(runner, MasterRunner):
            # Locust hints `data` as a dict; it sends any msgpack value, and drain's is its seq
            runner.send_message(MSG_DRAIN, self._drain_seq)  # type: ignore[arg-type]
        else:
            IN_FLIGHT.drain(self._drain_seq)


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(add_ladder_arguments)
