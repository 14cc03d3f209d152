"""LadderShape's tick sequence and rungs file, driven by a fake clock (no Locust run)."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from specload.loadgen.shape import LadderShape
from specload.records import RUNGS_COLUMNS

T0 = 1_700_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def make_shape(tmp_path: Path | None, ladder: str = "1,2,5", warmup: float = 2.0,
               measure: float = 3.0) -> tuple[LadderShape, FakeClock]:
    clock = FakeClock()
    shape = LadderShape(clock=clock)
    opts = SimpleNamespace(ladder=ladder, warmup=warmup, measure=measure,
                           csv_prefix=str(tmp_path / "run") if tmp_path else None)
    shape.runner = SimpleNamespace(environment=SimpleNamespace(parsed_options=opts))
    shape.reset_time()
    return shape, clock


def run_ticks(shape: LadderShape, clock: FakeClock, times: list[float]) -> list[object]:
    out = []
    for t in times:
        clock.now = T0 + t
        out.append(shape.tick())
    return out


def read_steps(tmp_path: Path) -> list[dict[str, str]]:
    with (tmp_path / "run_rungs.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_tick_sequence_holds_each_rung_and_stops(tmp_path: Path) -> None:
    shape, clock = make_shape(tmp_path)
    ticks = run_ticks(shape, clock, [0, 1, 4.9, 5, 9.99, 10, 14.5, 15, 16])
    # spawn rate is the largest jump (5 - 2 = 3), so every rung is reached at once
    assert ticks == [(1, 3.0), (1, 3.0), (1, 3.0), (2, 3.0), (2, 3.0), (5, 3.0), (5, 3.0),
                     None, None]


def test_steps_file_has_one_row_per_finished_rung_with_epoch_times(tmp_path: Path) -> None:
    shape, clock = make_shape(tmp_path)
    run_ticks(shape, clock, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10.5, 12, 15.2, 15.6])
    rows = read_steps(tmp_path)
    assert list(rows[0].keys()) == list(RUNGS_COLUMNS)
    assert [(int(r["rung"]), int(r["users"])) for r in rows] == [(0, 1), (1, 2), (2, 5)]
    got = [(float(r["warmup_start"]) - T0, float(r["measure_start"]) - T0,
            float(r["measure_end"]) - T0) for r in rows]
    # rung 2 was asked for only at t=10.5 (the tick came late): it keeps its full windows
    assert got == [pytest.approx(x) for x in [(0, 2, 5), (5, 7, 10), (10.5, 12.5, 15.5)]]


def test_late_tick_slides_the_rest_of_the_plan(tmp_path: Path) -> None:
    shape, clock = make_shape(tmp_path, ladder="1,4,8", warmup=1.0, measure=3.0)
    ticks = run_ticks(shape, clock, [0, 4.8, 6.1, 8.7, 8.9, 12.8, 12.95])
    # rung 1 starts 0.8 s late, so it ends at 8.8 instead of 8.0, and rung 2 at 12.9
    assert ticks == [(1, 4.0), (4, 4.0), (4, 4.0), (4, 4.0), (8, 4.0), (8, 4.0), None]
    rows = read_steps(tmp_path)
    got = [(float(r["warmup_start"]) - T0, float(r["measure_start"]) - T0,
            float(r["measure_end"]) - T0) for r in rows]
    assert got == [pytest.approx(x) for x in [(0, 1, 4), (4.8, 5.8, 8.8), (8.9, 9.9, 12.9)]]


def test_stop_mid_rung_keeps_only_finished_rungs(tmp_path: Path) -> None:
    shape, clock = make_shape(tmp_path)
    run_ticks(shape, clock, [0, 5.5, 8])  # stopped during rung 1
    assert [int(r["users"]) for r in read_steps(tmp_path)] == [1]


def test_reset_starts_a_new_steps_file_and_rereads_options(tmp_path: Path) -> None:
    shape, clock = make_shape(tmp_path)
    run_ticks(shape, clock, [0, 5.5])
    shape.runner.environment.parsed_options.ladder = "3,7"
    clock.now = T0 + 100
    shape.reset_time()
    ticks = run_ticks(shape, clock, [100, 105, 110.1])
    assert ticks == [(3, 4.0), (7, 4.0), None]
    assert [int(r["users"]) for r in read_steps(tmp_path)] == [3, 7]


def test_without_csv_prefix_no_file_is_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shape, clock = make_shape(None)
    assert run_ticks(shape, clock, [0, 5, 10, 15]) == [(1, 3.0), (2, 3.0), (5, 3.0), None]
    assert list(tmp_path.iterdir()) == []


def test_bad_ladder_from_the_ui_stops_the_test(tmp_path: Path, caplog) -> None:
    shape, _clock = make_shape(tmp_path, ladder="5,2")
    assert shape.tick() is None
    assert "must increase" in caplog.text


def test_defaults_without_runner_follow_the_default_ladder() -> None:
    clock = FakeClock()
    shape = LadderShape(clock=clock)
    shape.reset_time()
    assert shape.tick() == (1, 150.0)  # 250 - 100 is the largest jump of 1..250
