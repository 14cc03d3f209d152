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
or after a time have completed, and whether a drain is over. Live views (the web UI's
Tokens tab) `tap` the rows as they arrive, whether or not a ladder runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import orjson
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner, WorkerRunner

from specload.loadgen.inflight import IN_FLIGHT
from specload.records import LIVE_SUFFIX, REQUEST_COLUMNS

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


def local_state() -> ProcessState:
    return ProcessState(time.time(), IN_FLIGHT.watermark(), IN_FLIGHT.count,
                        IN_FLIGHT.drain_seq)


class LiveRungs:
    """See the module docstring. One per Locust environment (`for_env`)."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.flush: Callable[[], None] = lambda: None  # the requests file's, by the recorder
        self.rows: list[tuple[float, float, bool]] = []  # start, end, succeeded
        self.states: dict[str, ProcessState] = {}
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
        self._kept_from = 0.0
        self._path = Path(csv_prefix + LIVE_SUFFIX) if csv_prefix else None
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._path.write_bytes(b"")

    # -- inputs ---------------------------------------------------------------------------

    def tap(self, listener: Callable[[Sequence[list[Any]]], None]) -> None:
        """Hand every row that arrives from now on to `listener` too."""
        self.taps.append(listener)

    def add_rows(self, rows: Sequence[list[Any]]) -> None:
        for listener in self.taps:
            listener(rows)
        if not self.active:
            return
        kept = self._kept_from
        self.rows.extend((float(r[_START]), float(r[_END]),
                          not r[_ERROR_KIND] and not r[_INTERRUPTED])
                         for r in rows if float(r[_END]) >= kept)

    def update(self, client: str, state: ProcessState) -> None:
        self.states[client] = state

    def add_window(self, window: Span) -> None:
        """A rung's measure window has closed; its figures follow once it is complete."""
        self.pending.append(window)

    # -- questions -----------------------------------------------------------------------

    def _processes(self) -> list[ProcessState | None]:
        runner = self.env.runner
        if isinstance(runner, MasterRunner):
            ids = [c.id for c in runner.clients.all if c.state != STATE_MISSING]
            return [self.states.get(i) for i in ids]
        self.states[LOCAL] = local_state()
        return [self.states[LOCAL]]

    def complete_until(self) -> float:
        """Every request that started before this time has ended and been received."""
        states = self._processes()
        if not states or any(s is None for s in states):
            return 0.0
        return min(min(s.watermark, s.ts) for s in states if s is not None)

    def completed_since(self, t: float) -> int:
        """Successful requests received that started at or after `t`."""
        return sum(1 for start, _end, ok in self.rows if ok and start >= t)

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
                  "measure_end": w.end} for w in ready]
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
