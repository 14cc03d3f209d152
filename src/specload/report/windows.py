"""The measure window of every rung: which seconds of a run count, and at what concurrency.

A sweep's ladder shape writes `_rungs.csv` with each rung's measure window in epoch
seconds; that is the authority. A web-UI or plain Locust run has no rungs file, so each
stretch of constant user count in `_stats_history.csv` becomes a rung, minus a warmup
at its start; without either file the whole run is one rung.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

# A constant-user stretch of a web-UI run: drop this share of it (at most the cap) as
# warmup, and ignore stretches shorter than the minimum (ramps while users spawn).
SEGMENT_WARMUP_FRACTION = 0.2
SEGMENT_WARMUP_CAP_S = 10.0
SEGMENT_MIN_S = 5.0
# Locust's history timestamps are whole seconds written somewhere inside that second.
HISTORY_TS_OFFSET_S = 0.5


@dataclass(frozen=True, slots=True)
class Window:
    """One rung's measure window (epoch seconds), its target concurrency and, for an
    open-loop rung, its target arrival rate (then `users` is the pool's size; a trace
    replay's also its speed); for a load step, the count it jumped from and when."""

    rung: int
    users: int
    start: float
    end: float
    rate: float | None = None
    # a load step's: the count it jumped from, and when (its steady window starts later)
    from_users: int | None = None
    since: float | None = None
    speed: float | None = None  # a trace replay's: the trace's speed

    @property
    def length(self) -> float:
        return self.end - self.start


def from_rungs_file(rungs: pd.DataFrame) -> list[Window]:
    """Windows from a `_rungs.csv` (records.RUNGS_COLUMNS)."""
    rows = rungs.dropna(subset=["measure_start", "measure_end"])
    rows = rows[rows["measure_end"] > rows["measure_start"]].sort_values("measure_start")
    nan = pd.Series(float("nan"), index=rows.index)
    rates, jumps = rows.get("rate", nan), rows.get("from_users", nan)
    speeds = rows.get("speed", nan)
    return [
        Window(int(r.rung), int(r.users), float(r.measure_start), float(r.measure_end),
               float(rate) if pd.notna(rate) else None,
               int(jump) if pd.notna(jump) else None,
               float(r.warmup_start) if pd.notna(jump) else None,
               float(speed) if pd.notna(speed) else None)
        for r, rate, jump, speed in zip(rows.itertuples(index=False), rates, jumps, speeds,
                                        strict=True)
    ]


def aggregated_history(history: pd.DataFrame) -> pd.DataFrame:
    """The "Aggregated" rows of a Locust `_stats_history.csv`, sorted by time."""
    if "Name" in history.columns:
        history = history[history["Name"].astype(str) == "Aggregated"]
    return history.sort_values("Timestamp", kind="stable")


def from_history(history: pd.DataFrame) -> list[Window]:
    """One window per stretch of constant, non-zero user count, warmup removed."""
    agg = aggregated_history(history)
    if agg.empty or "User Count" not in agg.columns:
        return []
    ts = agg["Timestamp"].to_numpy(dtype=float) + HISTORY_TS_OFFSET_S
    users = agg["User Count"].to_numpy(dtype=float)
    change = np.flatnonzero(np.diff(users) != 0) + 1
    bounds = np.concatenate(([0], change, [len(users)]))
    best: dict[int, tuple[float, float]] = {}
    for a, b in itertools.pairwise(bounds):
        u = int(users[a])
        # The stretch lasts until the next sample that shows a different count.
        start, end = ts[a], ts[b] if b < len(ts) else ts[b - 1]
        length = end - start
        if u <= 0 or length < SEGMENT_MIN_S:
            continue
        if u not in best or length > best[u][1] - best[u][0]:
            best[u] = (start, end)
    windows = []
    for rung, u in enumerate(sorted(best)):
        start, end = best[u]
        warm = min(SEGMENT_WARMUP_CAP_S, SEGMENT_WARMUP_FRACTION * (end - start))
        windows.append(Window(rung, u, start + warm, end))
    return windows


def whole_run(requests: pd.DataFrame) -> list[Window]:
    """One window spanning every request; its concurrency is the mean in-flight count."""
    start, end = float(requests["start"].min()), float(requests["end"].max())
    if not end > start:
        return []
    busy = float((requests["end"] - requests["start"]).clip(lower=0).sum())
    return [Window(0, max(1, round(busy / (end - start))), start, end)]


def ordered(windows: list[Window]) -> list[Window]:
    """Windows sorted by start; one that runs into the next is cut at the next's start."""
    windows = sorted(windows, key=lambda w: w.start)
    out = []
    for w, nxt in zip(windows, [*windows[1:], None], strict=True):
        end = min(w.end, nxt.start) if nxt is not None else w.end
        if end > w.start:
            out.append(replace(w, end=end))
    return out


def rung_windows(
    rungs: pd.DataFrame | None, history: pd.DataFrame | None, requests: pd.DataFrame
) -> tuple[list[Window], str]:
    """The windows for one repeat and where they came from ("rungs", "history", "run")."""
    if rungs is not None:
        found = ordered(from_rungs_file(rungs))
        if found:
            return found, "rungs"
    if history is not None:
        found = ordered(from_history(history))
        if found:
            return found, "history"
    return whole_run(requests), "run"
