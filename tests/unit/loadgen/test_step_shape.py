"""StepShape: each user count held for a step, the steps written only once all ended."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.step_shape import StepShape
from specload.runfiles.records import STEP_RUNGS_COLUMNS
from tests.unit.loadgen.test_ladder_shape import T0, FakeClock, FakeLive


@pytest.fixture(autouse=True)
def _clean() -> None:
    yield
    IN_FLIGHT.reset()


def make(tmp_path: Path, **opts: object) -> tuple[StepShape, FakeClock, FakeLive]:
    clock, live = FakeClock(), FakeLive()
    shape = StepShape(clock=clock, live=live)  # type: ignore[arg-type]
    values = {"steps": "4,128,4", "step_s": 10.0, "drain_s": 5.0,
              "csv_prefix": str(tmp_path / "run"), **opts}
    shape.runner = SimpleNamespace(environment=SimpleNamespace(
        parsed_options=SimpleNamespace(**values)))
    shape.reset_time()
    return shape, clock, live


def _rows(tmp_path: Path) -> list[dict[str, str]]:
    with (tmp_path / "run_rungs.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_each_count_holds_a_step_and_the_steps_are_written_at_the_end(tmp_path: Path) -> None:
    shape, clock, live = make(tmp_path)
    assert shape.tick() == (4, 124.0)  # reached at once: the largest jump
    live.in_flight = 1
    ticks = []
    for t in (9.9, 10.0, 19.0, 21.0):
        clock.now = T0 + t
        ticks.append(shape.tick())
        if t == 19.0:  # one step over, one running: nothing written yet
            assert _rows(tmp_path) == [] and len(live.windows) == 1
    assert ticks == [(4, 124.0), (128, 124.0), (128, 124.0), (4, 124.0)]
    clock.now = T0 + 30.0
    assert shape.tick() == (4, 124.0)  # draining
    rows = _rows(tmp_path)
    assert list(rows[0]) == list(STEP_RUNGS_COLUMNS)
    got = [(int(r["users"]), int(r["from_users"]), float(r["warmup_start"]) - T0,
            float(r["measure_start"]) - T0, float(r["measure_end"]) - T0) for r in rows]
    assert got == [pytest.approx((4, 0, 0, 5, 10)), pytest.approx((128, 4, 10, 15, 20)),
                   pytest.approx((4, 128, 20, 25, 30))]
    assert [(w.users, w.start - T0) for w in live.windows] == [(4, 5), (128, 15), (4, 25)]
    assert IN_FLIGHT.draining
    clock.now = T0 + 35.5
    assert shape.tick() is None  # the drain bound


def test_a_run_stopped_midway_keeps_no_step(tmp_path: Path) -> None:
    shape, clock, _ = make(tmp_path)
    shape.tick()
    clock.now = T0 + 25.0
    shape.tick()
    assert _rows(tmp_path) == []


@pytest.mark.parametrize(("steps", "why"), [("4", "at least two user counts"),
                                            ("4,4", "a step must change the count"),
                                            ("4,x", "comma-separated whole numbers")])
def test_bad_steps_stop_the_run_with_the_reason(tmp_path: Path, steps: str, why: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    shape, _, _ = make(tmp_path, steps=steps)
    assert shape.tick() is None
    assert why in caplog.text
