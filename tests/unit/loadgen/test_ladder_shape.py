"""LadderShape's ticks, rungs file and drain, driven by a fake clock and fake live counts."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from specload.ladder.rungs import Where
from specload.loadgen.shape import LadderShape, where_in
from specload.runfiles.records import RUNGS_COLUMNS

T0 = 1_700_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class FakeLive:
    """What the shape asks the live rungs: completions since a time, when one first ended
    after a time, and drained."""

    def __init__(self) -> None:
        self.active = False
        self.completions: list[float] = []  # start times of completed requests
        self.in_flight = 0
        self.windows: list[Any] = []

    def poll(self) -> list[Any]:
        return []

    def completed_since(self, t: float) -> int:
        return sum(1 for s in self.completions if s >= t)

    def first_end_since(self, t: float) -> float | None:
        """Requests here end all the time: no window stretches (`ladder.window_cap`)."""
        return t

    def drained(self, seq: int) -> bool:
        return self.in_flight == 0

    def add_window(self, window: Any) -> None:
        self.windows.append(window)


def make_shape(tmp_path: Path | None, ladder: str = "1,2,5", warmup: float = 2.0,
               measure: float = 3.0, min_requests: int = 0, max_measure: float = 0.0,
               drain: float = 30.0) -> tuple[LadderShape, FakeClock, FakeLive]:
    clock, live = FakeClock(), FakeLive()
    shape = LadderShape(clock=clock, live=live)  # type: ignore[arg-type]
    opts = SimpleNamespace(ladder=ladder, warmup_s=warmup, measure_s=measure,
                           min_requests=min_requests, max_measure_s=max_measure, drain_s=drain,
                           csv_prefix=str(tmp_path / "run") if tmp_path else None)
    shape.runner = SimpleNamespace(environment=SimpleNamespace(parsed_options=opts))
    shape.reset_time()
    return shape, clock, live


def run_ticks(shape: LadderShape, clock: FakeClock, times: list[float]) -> list[object]:
    out = []
    for t in times:
        clock.now = T0 + t
        out.append(shape.tick())
    return out


def read_rungs(tmp_path: Path) -> list[tuple[float, float, float]]:
    with (tmp_path / "run_rungs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0].keys()) == list(RUNGS_COLUMNS)
    return [(float(r["warmup_start"]) - T0, float(r["measure_start"]) - T0,
             float(r["measure_end"]) - T0) for r in rows]


def test_ticks_hold_each_rung_then_drain_and_stop(tmp_path: Path) -> None:
    shape, clock, live = make_shape(tmp_path)
    live.in_flight = 1
    ticks = run_ticks(shape, clock, [0, 1, 2, 4.9, 5, 7, 10, 12, 15, 16, 20])
    # spawn rate is the largest jump (5 - 2 = 3), so every rung is reached at once;
    # after the last window users keep their count while in-flight requests finish
    assert ticks == [(1, 3.0), (1, 3.0), (1, 3.0), (1, 3.0), (2, 3.0), (2, 3.0), (5, 3.0),
                     (5, 3.0), (5, 3.0), (5, 3.0), (5, 3.0)]
    live.in_flight = 0
    assert run_ticks(shape, clock, [21]) == [None]
    assert read_rungs(tmp_path) == [pytest.approx(x) for x in
                                    [(0, 2, 5), (5, 7, 10), (10, 12, 15)]]
    assert [w.users for w in live.windows] == [1, 2, 5] and live.active


def test_windows_follow_the_real_ticks(tmp_path: Path) -> None:
    shape, clock, _live = make_shape(tmp_path, ladder="1,4", warmup=1.0, measure=3.0)
    run_ticks(shape, clock, [0, 1.4, 4.8, 6.1, 9.2, 9.9])
    # a capped warmup ends at its cap; a window ends at the tick that changes the users
    assert read_rungs(tmp_path) == [pytest.approx(x) for x in [(0, 1, 4.8), (4.8, 5.8, 9.2)]]


def test_warmup_ends_once_every_user_came_back(tmp_path: Path) -> None:
    shape, clock, live = make_shape(tmp_path, ladder="2", warmup=10.0, measure=3.0)
    run_ticks(shape, clock, [0, 1])
    live.completions = [T0 + 0.1, T0 + 0.2]
    run_ticks(shape, clock, [2, 5, 6])
    assert read_rungs(tmp_path) == [pytest.approx((0, 2, 5))]


def test_measure_waits_for_min_requests_up_to_its_cap(tmp_path: Path) -> None:
    shape, clock, live = make_shape(tmp_path, ladder="1,2", warmup=0.0, measure=2.0,
                                    min_requests=2, max_measure=6.0)
    run_ticks(shape, clock, [0, 1, 2, 3])  # the window is 3 s old, no completion yet
    live.completions = [T0 + 0.5, T0 + 1.5]
    run_ticks(shape, clock, [4])  # two requests that started in it completed
    run_ticks(shape, clock, [5, 8, 10, 10.5, 11])  # rung 2: none ever completes: cap
    assert read_rungs(tmp_path) == [pytest.approx(x) for x in [(0, 0, 4), (4, 4, 10)]]


def test_stop_mid_rung_keeps_only_finished_rungs(tmp_path: Path) -> None:
    shape, clock, _live = make_shape(tmp_path)
    run_ticks(shape, clock, [0, 5.5, 8])  # stopped during rung 1
    assert len(read_rungs(tmp_path)) == 1


def test_reset_starts_a_new_rungs_file_and_rereads_options(tmp_path: Path) -> None:
    shape, clock, _live = make_shape(tmp_path)
    run_ticks(shape, clock, [0, 5.5])
    shape.runner.environment.parsed_options.ladder = "3,7"
    clock.now = T0 + 100
    shape.reset_time()
    ticks = run_ticks(shape, clock, [100, 105, 110.1, 110.2])
    assert ticks == [(3, 4.0), (7, 4.0), (7, 4.0), None]
    assert len(read_rungs(tmp_path)) == 2


def test_without_csv_prefix_no_file_is_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shape, clock, _live = make_shape(None)
    assert run_ticks(shape, clock, [0, 5, 10, 15, 16]) == [(1, 3.0), (2, 3.0), (5, 3.0),
                                                           (5, 3.0), None]
    assert list(tmp_path.iterdir()) == []


def test_bad_ladder_from_the_ui_stops_the_test(tmp_path: Path, caplog) -> None:
    shape, _clock, _live = make_shape(tmp_path, ladder="5,2")
    assert shape.tick() is None
    assert "must increase" in caplog.text


def test_defaults_without_runner_follow_the_default_ladder() -> None:
    clock = FakeClock()
    shape = LadderShape(clock=clock, live=FakeLive())  # type: ignore[arg-type]
    shape.reset_time()
    # 250 - 100 is the largest jump of 1..250, but Locust warns above 100 users/s
    assert shape.tick() == (1, 100.0)


def test_phases_follow_the_run(tmp_path: Path) -> None:
    shape, clock, _live = make_shape(tmp_path, ladder="1,2", warmup=1.0, measure=3.0)
    assert shape.phases() == []
    run_ticks(shape, clock, [0, 1.5, 4.5])
    assert [(p.rung, p.phase, p.start - T0, p.end and p.end - T0) for p in shape.phases()] \
        == [(0, "warmup", 0, 1.0), (0, "measure", 1.0, 4.5), (1, "warmup", 4.5, None)]


def test_where_the_run_is_labels_its_live_figures(tmp_path: Path) -> None:
    shape, clock, live = make_shape(tmp_path, ladder="1,2", warmup=1.0, measure=3.0)
    assert shape.where() is None  # before the first tick
    run_ticks(shape, clock, [0])
    assert shape.where() == Where(1, "warmup") and shape.where().label == "1"
    run_ticks(shape, clock, [1.5, 4.5, 6])
    assert shape.where() == Where(2, "measure")
    live.in_flight = 1
    run_ticks(shape, clock, [8.6])
    assert shape.where() == Where(None, "drain") and shape.where().label == "drain"


def test_where_in_windows_of_a_fixed_plan() -> None:
    windows = [(2.5, 10.0, 20.0), (5.0, 25.0, 30.0)]  # (level, measure start, end)
    assert where_in(windows, 5.0) == Where(2.5, "warmup")
    assert where_in(windows, 10.0) == Where(2.5, "measure")
    assert where_in(windows, 20.0) == Where(5.0, "warmup")
    assert where_in(windows, 30.0) == Where(None, "drain")
