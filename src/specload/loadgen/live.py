"""Which rungs are complete during a run, and how many requests have completed.

Runs in the process that writes the CSV files (the local runner, or the master). It
keeps, for the requests that can still matter, when each started and ended and whether
it succeeded; each load process's latest state (its watermark: the oldest request it
still has in flight, how many are in flight, which drain it has seen, and when it said
so); and the rung windows the ladder shape has closed. A rung is complete once every
load process has reported after the rung's window ended with a watermark past that
end: then no request that could add tokens or latencies to the window is still
running and every row is written. Complete rungs are appended to `<prefix>_live.jsonl`
(after the requests file is flushed), and the sweep computes each one's figures from
the files with the report's own code, in its own process: the load processes stay
free of that work and of pandas. The shape also asks how many requests that started at
or after a time have completed, and whether a drain is over.

Windows are on the master's clock, and a worker's rows and states on its own: the
master's worker watch (`worker_watch.py`) measures each worker's offset and the live
rungs subtract it. A worker whose offset is not measured yet counts as one that has
not reported (no rung completes without it) and its rows wait until the offset is
known, so a wrong clock can neither finalise a rung early nor hold it back. Workers that
Locust marks missing (a lost load machine) are left out, so a lost worker delays a rung
by the few seconds Locust takes to notice, not for ever.
Live views (the web UI's Tokens tab) `tap` the rows as they arrive (on their load
process's clock), whether or not a ladder runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import orjson
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner, WorkerRunner

from specload.loadgen import wall_clock
from specload.loadgen.inflight import IN_FLIGHT
from specload.runfiles.records import LIVE_SUFFIX, REQUEST_COLUMNS, rung_time

LOCAL = "local"
_START = REQUEST_COLUMNS.index("start")
_END = REQUEST_COLUMNS.index("end")
_ERROR_KIND = REQUEST_COLUMNS.index("error_kind")
_INTERRUPTED = REQUEST_COLUMNS.index("interrupted")


@dataclass(frozen=True, slots=True)
class Span:
    """A closed measure window (epoch s)."""

    rung: int
    users: int
    start: float
    end: float
    rate: float | None = None  # open loop: the rung's arrival rate
    speed: float | None = None  # trace replay: the trace's speed


@dataclass(frozen=True, slots=True)
class ProcessState:
    """What one load process last said about itself."""

    ts: float
    watermark: float
    in_flight: int
    drain_seq: int

    def as_message(self) -> dict[str, Any]:
        return {"ts": self.ts, "watermark": self.watermark, "in_flight": self.in_flight,
                "drain_seq": self.drain_seq}

    @classmethod
    def from_message(cls, data: dict[str, Any]) -> ProcessState:
        return cls(float(data["ts"]), float(data["watermark"]), int(data["in_flight"]),
                   int(data["drain_seq"]))

    def on_master_clock(self, offset: float) -> ProcessState:
        """The state with its times moved from a clock `offset` s ahead of the master's."""
        return replace(self, ts=self.ts - offset, watermark=self.watermark - offset)


def local_state() -> ProcessState:
    return ProcessState(wall_clock.now(), IN_FLIGHT.watermark(), IN_FLIGHT.count,
                        IN_FLIGHT.drain_seq)


class LiveRungs:
    """See the module docstring. One per Locust environment (`for_env`)."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.flush: Callable[[], None] = lambda: None  # the requests file's, by the recorder
        self.rows: list[tuple[float, float, bool]] = []  # start, end, succeeded
        # by Locust node id: each process's last state, as sent (on its own clock), and
        # each worker's clock offset (kept across tests: measured from its connection on)
        self.states: dict[str, ProcessState] = {}
        self.offsets: dict[str, float] = {}
        self.rounds: list[list[Any]] = []  # every clock round, as `<prefix>_clock.csv` rows
        self._unplaced: dict[str, list[list[Any]]] = {}  # rows of workers not measured yet
        self.pending: list[Span] = []
        self.final: list[dict[str, Any]] = []
        self.active = False  # a ladder shape runs: rows are kept (else never)
        self.taps: list[Callable[[Sequence[list[Any]]], None]] = []
        self._kept_from = 0.0  # rows ending before this time can no longer count
        self._path: Path | None = None

    @classmethod
    def for_env(cls, environment: Environment) -> LiveRungs:
        live = _instances.get(environment)
        if live is None:
            live = _instances[environment] = cls(environment)
        return live

    def reset(self, csv_prefix: str | None) -> None:
        """A new test: forget the previous one; final rungs go to `<prefix>_live.jsonl`."""
        # (not `active`: Locust ticks the shape, which sets it, before test_start fires)
        self.rows, self.states, self.pending, self.final = [], {}, [], []
        self._unplaced = {}
        self._kept_from = 0.0
        self._path = Path(csv_prefix + LIVE_SUFFIX) if csv_prefix else None
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._path.write_bytes(b"")

    # -- inputs ---------------------------------------------------------------------------

    def tap(self, listener: Callable[[Sequence[list[Any]]], None]) -> None:
        """Hand every row that arrives from now on to `listener` too."""
        self.taps.append(listener)

    def add_rows(self, rows: Sequence[list[Any]], node: str = LOCAL) -> None:
        """Request rows from one load process (`node`: its Locust node id)."""
        for listener in self.taps:
            listener(rows)
        self._place(rows, node)

    def _place(self, rows: Iterable[list[Any]], node: str) -> None:
        if not self.active:
            return
        if node == LOCAL:
            offset = 0.0
        elif node in self.offsets:
            offset = self.offsets[node]
        else:
            self._unplaced.setdefault(node, []).extend(rows)
            return
        kept = self._kept_from
        self.rows.extend((float(r[_START]) - offset, float(r[_END]) - offset,
                          not r[_ERROR_KIND] and not r[_INTERRUPTED])
                         for r in rows if float(r[_END]) - offset >= kept)

    def update(self, node: str, state: ProcessState) -> None:
        self.states[node] = state

    def set_offset(self, node: str, offset: float) -> None:
        """A worker's clock is `offset` s ahead of this process's (its latest measurement)."""
        self.offsets[node] = offset
        waiting = self._unplaced.pop(node, None)
        if waiting:
            self._place(waiting, node)

    def add_window(self, window: Span) -> None:
        """A rung's measure window has closed; its figures follow once it is complete.
        Its times are kept as the rungs file holds them (`records.rung_time`), so the
        progress line counts the chunks at its edges as the report does."""
        self.pending.append(replace(window, start=float(rung_time(window.start)),
                                    end=float(rung_time(window.end))))

    # -- questions -----------------------------------------------------------------------

    def _processes(self) -> list[ProcessState | None]:
        runner = self.env.runner
        if isinstance(runner, MasterRunner):
            ids = [c.id for c in runner.clients.all if c.state != STATE_MISSING]
            return [self._on_master_clock(i) for i in ids]
        self.states[LOCAL] = local_state()
        return [self.states[LOCAL]]

    def _on_master_clock(self, node: str) -> ProcessState | None:
        state, offset = self.states.get(node), self.offsets.get(node)
        if state is None or offset is None:
            return None
        return state.on_master_clock(offset)

    def complete_until(self) -> float:
        """Every request that started before this time has ended and been received."""
        states = self._processes()
        if not states or any(s is None for s in states):
            return 0.0
        return min(min(s.watermark, s.ts) for s in states if s is not None)

    def completed_since(self, t: float) -> int:
        """Successful requests received that started at or after `t`."""
        return sum(1 for start, _end, ok in self.rows if ok and start >= t)

    def first_end_since(self, t: float) -> float | None:
        """When the first request received that ended at or after `t` ended (with or
        without success); None while none has."""
        return min((end for _start, end, _ok in self.rows if end >= t), default=None)

    def drained(self, seq: int) -> bool:
        """Every load process has seen drain `seq` and has nothing in flight."""
        states = self._processes()
        return bool(states) and all(s is not None and s.drain_seq >= seq and s.in_flight == 0
                                    for s in states)

    # -- output ---------------------------------------------------------------------------

    def poll(self) -> list[dict[str, Any]]:
        """Finalise every pending rung that is complete; returns their lines."""
        done_until = self.complete_until()
        ready = [w for w in self.pending if w.end <= done_until]
        if not ready:
            return []
        self.pending = [w for w in self.pending if w.end > done_until]
        lines = [{"rung": w.rung, "users": w.users, "measure_start": w.start,
                  "measure_end": w.end} | ({"rate": w.rate} if w.rate is not None else {})
                 | ({"speed": w.speed} if w.speed is not None else {})
                 for w in ready]
        self.final += lines
        self._kept_from = min([w.start for w in self.pending] + [max(w.end for w in ready)])
        self.rows = [r for r in self.rows if r[1] >= self._kept_from]
        if self._path is not None:
            self.flush()  # every row of these rungs is on disk before they are announced
            with self._path.open("ab") as fh:
                fh.writelines(orjson.dumps(line) + b"\n" for line in lines)
        return lines


_instances: WeakKeyDictionary[Environment, LiveRungs] = WeakKeyDictionary()


def is_writer(environment: Environment) -> bool:
    """Whether this process writes the CSV files (and so keeps the live rungs)."""
    return not isinstance(environment.runner, WorkerRunner)
