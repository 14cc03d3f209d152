"""Every load process's times on the master's clock, and what the master noticed per rung.

Rung windows are on the master's clock; each request row, client-stats row and chunk
time on the clock of the load process that wrote it (its `client_id`). A distributed
run's `<prefix>_clock.csv` (`records.CLOCK_COLUMNS`) holds every worker process's
offset from the master, measured about every 10 s (`specload.runfiles.clock_sync`). `align`
subtracts from each row's times the offset of its process, interpolated linearly in
time between the process's rounds (and held before the first and after the last), so
a clock that drifts is followed; chunk times are offsets from a request's start and
move with it. Rounds more uncertain than `clocks.UNCERTAINTY_LIMIT_S` are left out
where the process has better ones (`usable`). Processes without rounds (a
single-process run) keep their times.

`<prefix>_events.csv` (`records.EVENTS_COLUMNS`) lists what the master noticed: workers
lost and back, and doubtful clocks. `window_row` gives each rung the lost workers that
overlap its measure window and the clock problems within a round's interval of it,
which `quality` turns into warnings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from specload.report.windows import Window
from specload.runfiles.clock_sync import ROUND_EVERY_S, UNCERTAINTY_LIMIT_S

CLOCK_ROW_COLUMNS = ("workers_lost", "lost_detail", "clock_problems", "clock_detail",
                     "clock_offset_max_ms", "clock_uncertainty_max_ms")


def usable(clock: pd.DataFrame) -> pd.DataFrame:
    """The rounds to trust, sorted by time: per process its sure ones if it has any
    (`clocks.usable`, on a table)."""
    sure = clock["rtt_s"] / 2 <= UNCERTAINTY_LIMIT_S
    has_sure = sure.groupby(clock["client_id"]).transform("any")
    return clock[sure | ~has_sure].sort_values("ts")


def offsets(clock: pd.DataFrame | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per process (`client_id`): the times of its usable rounds and their offsets."""
    if clock is None or clock.empty:
        return {}
    return {str(client): (rounds["ts"].to_numpy(dtype=float),
                          rounds["offset_s"].to_numpy(dtype=float))
            for client, rounds in usable(clock).groupby("client_id", sort=False)}


def align(frame: pd.DataFrame, clock: pd.DataFrame | None,
          columns: Sequence[str]) -> pd.DataFrame:
    """`frame` with its time `columns` moved to the master's clock, by `client_id`."""
    per_client = offsets(clock)
    if not per_client or frame.empty or "client_id" not in frame:
        return frame
    ids = frame["client_id"].astype("category")
    code_of = {str(c): i for i, c in enumerate(ids.cat.categories)}
    codes = ids.cat.codes.to_numpy()
    anchor = frame[columns[0]].to_numpy(dtype=float)
    shift = np.zeros(len(frame))
    for client, (ts, off) in per_client.items():
        if client not in code_of:
            continue
        rows = codes == code_of[client]
        # the rounds are stamped on the master's clock: look them up at master time
        shift[rows] = np.interp(anchor[rows] - np.median(off), ts, off)
    out = frame.copy()
    for col in columns:
        out[col] = out[col].to_numpy(dtype=float) - shift
    return out


def window_row(events: pd.DataFrame | None, clock: pd.DataFrame | None,
               w: Window) -> dict[str, object]:
    """One rung's lost workers, clock problems and offsets (`CLOCK_ROW_COLUMNS`)."""
    near = (w.start - ROUND_EVERY_S, w.end + ROUND_EVERY_S)
    offset_ms = uncertainty_ms = float("nan")
    if clock is not None and not clock.empty:
        trusted = usable(clock)
        ts = trusted["ts"].to_numpy(dtype=float)
        rounds = trusted[(ts >= near[0]) & (ts <= near[1])]
        if len(rounds):
            offset_ms = float(rounds["offset_s"].abs().max() * 1e3)
            uncertainty_ms = float(rounds["rtt_s"].max() / 2 * 1e3)
    lost: list[str] = []
    doubts: list[str] = []
    for e in events.itertuples(index=False) if events is not None else ():
        since, ts = float(e.since), float(e.ts)
        if e.event == "lost" and since < w.end and ts > w.start:
            lost.append(f"{e.client_id} last heard {since - w.start:.1f} s into the window, "
                        f"marked missing {ts - since:.1f} s later")
        elif str(e.event).startswith("clock_") and since <= near[1] and ts >= near[0]:
            doubts.append(f"{e.client_id}: {e.detail}")
    return {"workers_lost": len(lost), "lost_detail": "; ".join(lost),
            "clock_problems": len(doubts), "clock_detail": "; ".join(dict.fromkeys(doubts)),
            "clock_offset_max_ms": offset_ms, "clock_uncertainty_max_ms": uncertainty_ms}
