"""Workers' times put on the master's clock, and lost workers and doubtful clocks per rung."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.report import clock_align, quality
from specload.report.aggregate import RepJob, measure_rep
from specload.report.run_files import RepSource, read_rep, read_requests
from specload.report.windows import Window
from specload.runfiles.records import RequestRecord
from tests.support.run_files import steady_requests, write_prefix

T = 1_700_000_000.0
DRIFT = 1e-3  # c2's clock gains 1 ms a second on top of being 3 s ahead


def ahead(t: float) -> float:
    return 3.0 + DRIFT * (t - T)


def as_written_by(rec: RequestRecord, client: str) -> RequestRecord:
    """The record as a worker stamped it: c2's clock runs `ahead` of the master's."""
    rec.client_id = client
    if client == "c2":
        rec.start, rec.end = rec.start + ahead(rec.start), rec.end + ahead(rec.start)
    return rec


def two_workers(prefix: Path, **files: object) -> tuple[list[RequestRecord], Path]:
    truth = steady_requests(T, T + 20, 4, 1.0, 10, 2)
    written = [as_written_by(r, "c2" if i % 2 else "c1")
               for i, r in enumerate(steady_requests(T, T + 20, 4, 1.0, 10, 2))]
    rounds = [(T + s, "c2", "n2", ahead(T + s), 0.0004, 5) for s in (0, 10, 20)]
    rounds.append((T + 15, "c2", "n2", 3.5, 0.05, 5))  # a doubtful round: left out
    rounds.append((T + 1, "c1", "n1", 0.0, 0.0003, 5))
    return truth, write_prefix(prefix, written, clock=rounds, **files)  # type: ignore[arg-type]


def test_rows_move_to_the_master_clock_by_their_process(tmp_path: Path) -> None:
    truth, prefix = two_workers(tmp_path / "run")
    got = read_requests(prefix)
    assert list(got["client_id"].cat.categories) == ["c1", "c2"]
    # (the requests file keeps times to the ms) the 20 ms of drift are followed
    for col in ("start", "end"):
        want = np.array([getattr(r, col) for r in truth])
        assert np.abs(got[col].to_numpy() - want).max() < 6e-4, col


def test_without_clock_rounds_times_stay_as_written(tmp_path: Path) -> None:
    reqs = steady_requests(T, T + 5, 2, 1.0, 5, 1)
    prefix = write_prefix(tmp_path / "run", reqs)
    assert read_requests(prefix)["start"].tolist() == pytest.approx([r.start for r in reqs])


def test_client_stats_move_too(tmp_path: Path) -> None:
    stats = [(T + 5 + ahead(T + 5), "c2", 50.0, 1.0, 2.0, 2, 100, 0, 10, 2, 20),
             (T + 5, "c1", 40.0, 1.0, 2.0, 2, 100, 0, 10, 2, 20)]
    _truth, prefix = two_workers(tmp_path / "run", client=stats)
    client = read_rep(prefix).client
    assert client is not None
    assert client["ts"].tolist() == pytest.approx([T + 5, T + 5], abs=1e-5)


EVENTS = [
    (T + 14.0, "c2", "n2", "lost", T + 9.5, "lost: no heartbeat for 4.5 s"),
    (T + 40.0, "c1", "n1", "lost", T + 35.5, "lost: no heartbeat for 4.5 s"),
    (T + 21.0, "c2", "n2", "clock_jump", T + 11.0, "clock offset jumped by +20.0 ms"),
    (T + 60.0, "c1", "n1", "clock_uncertain", T + 60.0, "clock offset uncertain"),
]


def test_each_rung_gets_the_losses_and_clock_doubts_near_it() -> None:
    events = pd.DataFrame(EVENTS, columns=["ts", "client_id", "node", "event", "since",
                                           "detail"])
    rounds = pd.DataFrame([(T + 1, "c2", "n2", 3.0, 0.0004, 5),
                           (T + 11, "c2", "n2", -3.001, 0.012, 5)],
                          columns=["ts", "client_id", "node", "offset_s", "rtt_s",
                                   "exchanges"])
    row = clock_align.window_row(events, rounds, Window(0, 4, T + 5, T + 12))
    assert row["workers_lost"] == 1 and row["clock_problems"] == 1
    assert row["lost_detail"] == ("c2 last heard 4.5 s into the window, marked missing "
                                  "4.5 s later")
    assert row["clock_detail"] == "c2: clock offset jumped by +20.0 ms"
    # the round uncertain by 6 ms is left out: c2 has a sure one
    assert row["clock_offset_max_ms"] == pytest.approx(3000.0)
    assert row["clock_uncertainty_max_ms"] == pytest.approx(0.2)
    later = clock_align.window_row(events, None, Window(1, 8, T + 45, T + 48))
    assert (later["workers_lost"], later["clock_problems"]) == (0, 0)
    assert np.isnan(later["clock_offset_max_ms"])


def test_a_rung_that_lost_a_worker_is_flagged(tmp_path: Path) -> None:
    _truth, prefix = two_workers(tmp_path / "run", rungs=[(0, 4, T, T + 5, T + 15)],
                                 events=EVENTS[:1])
    table = measure_rep(RepJob("on", RepSource(1, prefix)))
    assert table["workers_lost"].tolist() == [1]
    kinds = [w["kind"] for w in quality.rung_warnings(table)]
    assert "worker_lost" in kinds
