"""Rung windows from the rungs file, from Locust's history segments, or the whole run."""

from __future__ import annotations

import pandas as pd
import pytest

from specload.report import windows
from specload.report.windows import Window
from specload.runfiles import records


def _history(rows: list[tuple[int, int]]) -> pd.DataFrame:
    return pd.DataFrame([{"Timestamp": ts, "User Count": u, "Name": "Aggregated"}
                         for ts, u in rows])


def test_from_rungs_file_uses_measure_windows() -> None:
    steps = pd.DataFrame([(0, 1, 100.0, 110.0, 140.0), (1, 5, 140.0, 150.0, 180.0)],
                         columns=list(records.RUNGS_COLUMNS))
    got = windows.from_rungs_file(steps)
    assert got == [Window(0, 1, 110.0, 140.0), Window(1, 5, 150.0, 180.0)]


def test_history_segments_become_rungs_with_warmup_and_ramps_ignored() -> None:
    rows = [(1000 + i, 1) for i in range(20)]  # 20 s at 1 user
    rows += [(1020, 3), (1021, 4)]  # a ramp: too short to be a rung
    rows += [(1022 + i, 5) for i in range(100)]  # 100 s at 5 users
    rows += [(1122, 0)]
    got = windows.from_history(_history(rows))
    assert [w.users for w in got] == [1, 5]
    # 1 user: 1000.5 .. 1020.5 (20 s), warmup 20% = 4 s
    assert got[0].start == pytest.approx(1004.5) and got[0].end == pytest.approx(1020.5)
    # 5 users: 1022.5 .. 1122.5 (100 s), warmup capped at 10 s
    assert got[1].start == pytest.approx(1032.5) and got[1].end == pytest.approx(1122.5)


def test_history_keeps_the_longest_stretch_of_a_user_count() -> None:
    rows = [(i, 2) for i in range(10)] + [(10 + i, 4) for i in range(10)]
    rows += [(20 + i, 2) for i in range(30)]
    got = windows.from_history(_history(rows))
    assert [w.users for w in got] == [2, 4]
    assert got[0].end == pytest.approx(49.5)  # the later, longer stretch at 2 users


def test_whole_run_is_one_rung_at_mean_concurrency() -> None:
    req = pd.DataFrame({"start": [0.0, 0.0, 4.0], "end": [10.0, 10.0, 10.0]})  # 2.6 busy
    assert windows.whole_run(req) == [Window(0, 3, 0.0, 10.0)]


def test_rung_windows_prefers_steps_then_history_then_run() -> None:
    req = pd.DataFrame({"start": [0.0], "end": [10.0]})
    steps = pd.DataFrame([(0, 2, 0.0, 1.0, 9.0)], columns=list(records.RUNGS_COLUMNS))
    hist = _history([(i, 3) for i in range(10)])
    assert windows.rung_windows(steps, hist, req)[1] == "rungs"
    assert windows.rung_windows(None, hist, req)[1] == "history"
    assert windows.rung_windows(None, None, req)[1] == "run"


def test_ordered_cuts_an_overlapping_window() -> None:
    got = windows.ordered([Window(1, 2, 20.0, 40.0), Window(0, 1, 0.0, 25.0)])
    assert got == [Window(0, 1, 0.0, 20.0), Window(1, 2, 20.0, 40.0)]
