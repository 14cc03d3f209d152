"""The web UI's Tokens tab figures, computed with the report's code in a process of their own.

The Locust process that serves the web UI starts `python -m specload.report.live_figures`
(`loadgen/tokens_tab.py`) and writes it JSON lines about once a second: the request rows
that arrived, the load processes' client-stats rows, the user count, the ladder's phases,
the rungs that are complete and `settled_until`, before which every request that could
count has ended (the watermark of `loadgen/live.py`). Each complete rung is measured once
and each `BIN_S` time bin once it is settled, both with `client_metrics.measure` on rows
typed by `run_files.frame_from_rows` as the file reader types them, so the tab's table
has the report's numbers and its charts trail the run by its oldest request in flight;
the one possible difference is a request cut before its usage arrived whose rung has no
request with usage (the report then uses the whole run's tokens per chunk, unknown yet).
Every batch of lines is answered with `live <JSON of GET /specload/live>` and `table
<rows of the tab's table>`; pandas and chunk parsing thus never run on the event loop of
a process that runs users, and this process runs at a lower priority.
"""

from __future__ import annotations

import math
import os
import select
import sys
import traceback
from collections.abc import Sequence
from typing import IO, Any

import orjson
import pandas as pd

from specload.report import clock_align
from specload.report.client_metrics import measure
from specload.report.load_health import client_row
from specload.report.quality import CLIENT_CPU_LIMIT
from specload.report.run_files import clock_from_rows, frame_from_rows
from specload.report.rung_columns import View, headings, names
from specload.report.table import text
from specload.report.windows import Window
from specload.runfiles.records import (
    CLIENT_LAG_LIMIT_MS,
    CLIENT_STATS_COLUMNS,
    REQUEST_COLUMNS,
    rung_time,
)

BIN_S = 2.0  # the charts' time step
LOAD_WINDOW_S = 5.0  # the saturation indicator judges the load processes' last seconds
NICENESS = 10  # below the load processes: on a busy machine they keep their cores
LIVE_TAG, TABLE_TAG = b"live", b"table"
LOAD_LIMITS = {"cpu_limit": CLIENT_CPU_LIMIT, "lag_limit_ms": CLIENT_LAG_LIMIT_MS}
_END = REQUEST_COLUMNS.index("end")
_TS, _CLIENT, _CPU, _LAG_P99, _IN_FLIGHT = (CLIENT_STATS_COLUMNS.index(c) for c in (
    "ts", "client_id", "cpu_percent", "lag_p99_ms", "in_flight"))


def _number(value: Any) -> Any:
    """JSON-safe: numpy scalars as plain numbers, NaN as null, +inf (censored) as "inf"."""
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else None
    return value


def load_status(cpu_max: float, lag_p99_max_ms: float) -> tuple[str, str]:
    """The saturation indicator: a status word and a sentence, by the report's limits."""
    if cpu_max > CLIENT_CPU_LIMIT:
        return "saturated", (f"a load process uses {cpu_max:.0f}% of a core: add --processes "
                             "or workers, or its timestamps run late")
    if lag_p99_max_ms > CLIENT_LAG_LIMIT_MS:
        return "lagging", (f"event-loop lag p99 {lag_p99_max_ms:.1f} ms (over "
                           f"{CLIENT_LAG_LIMIT_MS:g} ms): chunk timestamps run late; the "
                           "machine is short of CPU")
    return "ok", (f"CPU up to {cpu_max:.0f}% of a core, event-loop lag p99 up to "
                  f"{lag_p99_max_ms:.1f} ms")


class LiveFigures:
    """Everything the tab shows, updated from the Locust process's lines (module docstring)."""

    def __init__(self) -> None:
        # workers' clock rounds (`records.CLOCK_COLUMNS`), measured from their connection
        # on, so kept across tests
        self.rounds: list[list[Any]] = []
        self.reset(None)

    def reset(self, t0: float | None) -> None:
        """A new test started at `t0` (None: no test yet)."""
        self.t0 = t0
        self.rows: list[list[Any]] = []  # request rows that can still count somewhere
        self.series: dict[str, list[float]] = {k: [] for k in ("t", *names(View.SERIES))}
        self.next_bin = t0 or 0.0
        self.pending: list[Window] = []  # complete rungs not measured yet
        self.rungs: list[dict[str, Any]] = []
        self.client: list[list[Any]] = []
        # whole second -> [latest sample time, requests in flight in all processes,
        # worst CPU and worst lag p99 of the load processes in that second]
        self.per_second: dict[int, list[float]] = {}
        self._in_flight_by_client: dict[str, int] = {}
        self.users: list[tuple[float, int]] = []  # changes of the user count, and the latest
        self.phases: list[dict[str, Any]] = []
        self.state = "ready"
        self.now = self.settled = t0 or 0.0
        self.stopped_at: float | None = None
        self.error = ""
        self.notice = ""
        self.shares_loop = False  # the web UI runs in the process that runs the users

    # -- input ----------------------------------------------------------------------------

    def feed(self, msg: dict[str, Any]) -> None:
        """Take one line from the Locust process."""
        if "reset" in msg:
            self.reset(float(msg["reset"]))
            return
        self.rounds += msg.get("clock", [])
        if self.t0 is not None:
            self.rows += msg.get("rows", [])
        if "now" not in msg:  # rows only: the tick that follows says the rest
            return
        self.state = str(msg.get("state", self.state))
        if self.t0 is None:
            return
        self.now = float(msg["now"])
        self.settled = max(self.settled, float(msg["settled_until"]))
        self.stopped_at = msg.get("stopped_at")
        self.notice = str(msg.get("notice", ""))
        self.shares_loop = bool(msg.get("shares_loop", False))
        for row in msg.get("client", []):
            self._add_client(row)
        users = int(msg.get("users", 0))
        if len(self.users) >= 2 and self.users[-1][1] == users == self.users[-2][1]:
            self.users[-1] = (self.now, users)  # only changes, and the latest sample
        else:
            self.users.append((self.now, users))
        self.phases = list(msg.get("phases", self.phases))
        # rounded as the rungs file holds them: the report's windows, to the bit
        self.pending += [Window(int(r["rung"]), int(r["users"]),
                                float(rung_time(r["measure_start"])),
                                float(rung_time(r["measure_end"]))) for r in msg.get("rungs", [])]

    def _add_client(self, row: Sequence[Any]) -> None:
        self.client.append(list(row))
        ts, cpu, lag = float(row[_TS]), float(row[_CPU]), float(row[_LAG_P99])
        self._in_flight_by_client[str(row[_CLIENT])] = int(row[_IN_FLIGHT])
        in_flight = sum(self._in_flight_by_client.values())
        second = self.per_second.setdefault(int(ts), [ts, in_flight, cpu, lag])
        second[:] = [max(second[0], ts), in_flight, max(second[2], cpu), max(second[3], lag)]

    # -- computation ----------------------------------------------------------------------

    def _complete_bins(self) -> list[Window]:
        until = self.settled if self.stopped_at is None else min(self.settled,
                                                                  float(self.stopped_at))
        bins: list[Window] = []
        while self.t0 is not None and self.next_bin + BIN_S <= until:
            start = self.next_bin
            bins.append(Window(len(self.series["t"]) + len(bins), self._users_at(start),
                               start, start + BIN_S))
            self.next_bin = start + BIN_S
        return bins

    def _users_at(self, t: float) -> int:
        """The user count at `t` (at least 1: a window's share of backoff divides by it)."""
        users = [u for ts, u in self._user_steps() if ts <= t]
        return max(1, users[-1] if users else 1)

    def _user_steps(self) -> list[tuple[float, int]]:
        """When the user count changed: as the ladder's phases say (exact), else sampled."""
        steps = [(float(p["start"]), int(p["users"])) for p in self.phases
                 if p["phase"] == "warmup"]
        if not steps:
            return self.users
        end = self.now if self.stopped_at is None else float(self.stopped_at)
        return [*steps, (max(end, steps[-1][0]), steps[-1][1])]

    def update(self) -> None:
        """Measure every bin and rung that is now complete; forget rows no longer needed."""
        bins = self._complete_bins()
        if bins or self.pending:
            rounds = clock_from_rows(self.rounds)
            frame = frame_from_rows(self.rows, rounds)
            if bins:
                got = measure(frame, bins)
                assert self.t0 is not None
                self.series["t"] += [w.end - self.t0 for w in bins]
                for name in names(View.SERIES):
                    self.series[name] += [_number(v) for v in got[name]]
            if self.pending:
                client = clock_align.align(pd.DataFrame(self.client,
                                                  columns=list(CLIENT_STATS_COLUMNS)),
                                     rounds, ("ts",)) if self.client else None
                self.rungs += [self._rung_row(frame, client, w) for w in self.pending]
            self.pending = []
        self._forget_rows()

    def _rung_row(self, frame: pd.DataFrame, client: pd.DataFrame | None,
                  window: Window) -> dict[str, Any]:
        row = measure(frame, [window]).iloc[0].to_dict()
        row |= client_row(client, window)
        assert self.t0 is not None
        return {"measure_start": window.start - self.t0, "measure_end": window.end - self.t0,
                **{k: _number(row[k]) for k in names(View.LIVE_RUNG) if k in row}}

    def _forget_rows(self) -> None:
        """Keep the rows that end at or after the earliest bin or rung still to measure."""
        done = {r["rung"] for r in self.rungs}
        open_starts = [float(p["start"]) for p in self.phases
                       if p["rung"] not in done and p["phase"] in ("warmup", "measure")]
        keep_from = min([self.next_bin, *open_starts])
        self.rows = [r for r in self.rows if float(r[_END]) >= keep_from]

    # -- output ---------------------------------------------------------------------------

    def load(self) -> dict[str, Any]:
        """The saturation indicator from the load processes' last `LOAD_WINDOW_S`."""
        if not self.client:
            return {"status": "unknown", "message": "no load process has reported yet",
                    "processes": 0, "cpu_max": None, "lag_p99_max_ms": None, **LOAD_LIMITS}
        latest = float(self.client[-1][_TS])
        recent = []
        for row in reversed(self.client):
            if float(row[_TS]) < latest - LOAD_WINDOW_S:
                break
            recent.append(row)
        cpu = max(float(r[_CPU]) for r in recent)
        lag = max(float(r[_LAG_P99]) for r in recent)
        status, message = load_status(cpu, lag)
        return {"status": status, "message": message, "cpu_max": cpu, "lag_p99_max_ms": lag,
                "processes": len({r[_CLIENT] for r in recent}), **LOAD_LIMITS}

    def payload(self) -> dict[str, Any]:
        """The JSON of `GET /specload/live` (times in seconds since the test started)."""
        t0 = self.t0 or 0.0
        seconds = [self.per_second[s] for s in sorted(self.per_second)]
        users = self._user_steps()
        return {
            "ready": self.t0 is not None, "state": self.state, "error": self.error,
            "notice": self.notice, "shares_loop": self.shares_loop,
            "t0": self.t0, "now": self.now - t0, "settled": self.settled - t0,
            "bin_s": BIN_S, "series": self.series,
            "users": {"t": [t - t0 for t, _ in users], "users": [u for _, u in users]},
            "client": {"t": [s[0] - t0 for s in seconds], "in_flight": [s[1] for s in seconds],
                       "cpu_max": [s[2] for s in seconds],
                       "lag_p99_max_ms": [s[3] for s in seconds]},
            "phases": [{**p, "start": p["start"] - t0,
                        "end": None if p["end"] is None else p["end"] - t0}
                       for p in self.phases],
            "rungs": self.rungs,
            "load": self.load(),
            "columns": headings(View.LIVE),
        }

    def table_rows(self) -> list[dict[str, str]]:
        """The tab's per-rung table as Locust's extended table shows it: text cells."""
        return [{k: text(float("inf") if r.get(k) == "inf" else r.get(k))
                 for k in names(View.LIVE)} for r in self.rungs]


def _lines(stdin: IO[bytes]) -> list[bytes] | None:
    """The next line (waiting for it), and every further one already there; None at EOF."""
    first = stdin.readline()
    if not first:
        return None
    lines = [first]
    while select.select([stdin], [], [], 0)[0]:
        more = stdin.readline()
        if not more:
            break
        lines.append(more)
    return lines


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """Answer batches of input lines until the Locust process closes the pipe."""
    figures = LiveFigures()
    while (lines := _lines(stdin)) is not None:
        try:
            for line in lines:
                figures.feed(orjson.loads(line))
            figures.update()
            figures.error = ""
        except Exception:  # a live view must not die of one bad line; the report will tell
            figures.error = traceback.format_exc(limit=3).strip().splitlines()[-1]
            traceback.print_exc(file=sys.stderr)
        stdout.write(LIVE_TAG + b" " + orjson.dumps(figures.payload(),
                                                    option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        stdout.write(TABLE_TAG + b" " + orjson.dumps(figures.table_rows()) + b"\n")
        stdout.flush()


def main() -> int:
    os.nice(NICENESS)
    serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
