"""RateShape: the plan queued for the users, fixed windows with their rates, the drain;
TraceShape: the same with a trace's plan, each arrival with the request it replays."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest

from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.open_loop import ARRIVALS
from specload.loadgen.rate_shape import LEAD_S, RateShape
from specload.loadgen.trace_shape import TraceShape
from specload.runfiles.records import RATE_RUNGS_COLUMNS, TRACE_RUNGS_COLUMNS
from specload.traffic.arrivals import plan_rates
from specload.traffic.trace_plan import Replay, plan_speeds
from specload.traffic.traces import load_trace
from tests.support.trace_files import synthetic, write_mooncake
from tests.unit.loadgen.test_ladder_shape import T0, FakeClock, FakeLive


@pytest.fixture(autouse=True)
def _clean() -> None:
    yield
    ARRIVALS.clear()
    IN_FLIGHT.reset()


def make(tmp_path: Path, **opts: object) -> tuple[RateShape, FakeClock, FakeLive]:
    clock, live = FakeClock(), FakeLive()
    shape = RateShape(clock=clock, live=live)  # type: ignore[arg-type]
    values = {"rates": "2,5", "warmup_s": 1.0, "measure_s": 4.0, "drain_s": 10.0, "seed": 3,
              "arrivals": "poisson", "cv": 1.0, "max_in_flight": 16,
              "csv_prefix": str(tmp_path / "run"), **opts}
    shape.runner = SimpleNamespace(environment=SimpleNamespace(
        parsed_options=SimpleNamespace(**values)))
    shape.reset_time()
    return shape, clock, live


def test_the_plan_is_queued_and_each_window_written_with_its_rate(tmp_path: Path) -> None:
    shape, clock, live = make(tmp_path)
    assert shape.tick() == (16, 16.0)
    plan = plan_rates([2, 5], 1.0, 4.0, seed=3)
    t0 = T0 + LEAD_S
    assert ARRIVALS.remaining == len(plan.offsets()) == 2 * 5 + 5 * 5
    assert ARRIVALS.take() == (pytest.approx(t0 + plan.offsets()[0]), None)
    live.in_flight = 1
    ticks = []
    for t in (3, 7.1, 11, 12.2, 15, 21.5):  # drain from 11, at most 10 s
        clock.now = t0 + t
        ticks.append(shape.tick())
    assert ticks[:4] == [(16, 16.0)] * 4
    with (tmp_path / "run_rungs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(RATE_RUNGS_COLUMNS)
    got = [(float(r["warmup_start"]) - t0, float(r["measure_start"]) - t0,
            float(r["measure_end"]) - t0, float(r["rate"])) for r in rows]
    assert got == [pytest.approx((0, 1, 5, 2)), pytest.approx((5, 6, 10, 5))]
    assert [w.rate for w in live.windows] == [2.0, 5.0]
    assert IN_FLIGHT.draining  # after the last window: finish what is in flight
    assert ticks[4] == (16, 16.0)  # still draining
    assert ticks[5] is None  # the drain bound


def test_a_bad_rate_ladder_stops_the_run(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                         ) -> None:
    shape, _, _ = make(tmp_path, rates="5,2")
    assert shape.tick() is None
    assert "the rates must increase" in caplog.text


def test_a_second_reset_before_the_plan_starts_keeps_the_plan(tmp_path: Path) -> None:
    shape, clock, _ = make(tmp_path)
    shape.tick()
    first = ARRIVALS.take()[0]
    shape.reset_time()  # what Locust's master does again at its first spawn
    shape.tick()
    assert ARRIVALS.remaining == 2 * 5 + 5 * 5 - 1 and ARRIVALS.take()[0] > first
    clock.now = T0 + 100  # long after: a new test in the web UI plans afresh
    shape.reset_time()
    shape.tick()
    assert ARRIVALS.remaining == 2 * 5 + 5 * 5


def make_trace(tmp_path: Path, trace: str, **opts: object
               ) -> tuple[TraceShape, FakeClock, FakeLive]:
    clock, live = FakeClock(), FakeLive()
    shape = TraceShape(clock=clock, live=live)  # type: ignore[arg-type]
    values = {"trace": trace, "trace_format": "auto", "speeds": "1,2", "start_s": 0.0,
              "duration_s": None, "block_tokens": 16, "warmup_s": 0.5, "measure_s": 4.0,
              "drain_s": 10.0, "max_in_flight": 8, "csv_prefix": str(tmp_path / "run"),
              **opts}
    shape.runner = SimpleNamespace(environment=SimpleNamespace(
        parsed_options=SimpleNamespace(**values)))
    shape.reset_time()
    return shape, clock, live


def test_a_trace_is_queued_with_what_each_arrival_replays(tmp_path: Path) -> None:
    path = write_mooncake(tmp_path / "t.jsonl", synthetic(6, rate=2.0, seed=4))
    shape, clock, live = make_trace(tmp_path, str(path))
    assert shape.tick() == (8, 8.0)
    plan = plan_speeds(load_trace(str(path)), [1, 2], 0.5)
    t0 = T0 + LEAD_S
    assert ARRIVALS.plan == plan and ARRIVALS.remaining == len(plan.arrivals())
    assert ARRIVALS.take() == (pytest.approx(t0), Replay(0, "1 warmup"))
    clock.now = t0 + plan.duration + 0.1
    shape.tick()
    with (tmp_path / "run_rungs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == list(TRACE_RUNGS_COLUMNS)
    assert [float(r["speed"]) for r in rows] == [1, 2] == [w.speed for w in live.windows]
    want = [6 / r.measure_s for r in plan.rungs]
    assert [float(r["rate"]) for r in rows] == pytest.approx(want, rel=1e-5)
    assert [w.rate for w in live.windows] == pytest.approx(want)


def test_a_trace_that_cannot_be_read_stops_the_run(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0}\n')
    shape, _, _ = make_trace(tmp_path, str(tmp_path / "t.jsonl"))
    assert shape.tick() is None
    assert "t.jsonl:1: not a JSON object with `timestamp`" in caplog.text
    shape, _, _ = make_trace(tmp_path, "", speeds="1")
    assert shape.tick() is None and "--trace is empty" in caplog.text
