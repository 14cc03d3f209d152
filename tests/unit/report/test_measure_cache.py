"""A repeat is measured once: its table comes back from the per-user cache for the same
files and code, and is measured again when a file, the code or the cache entry changed.

The run is a small hand-made one: one arm at C = 1 and C = 4, its files dated a minute
back (a table is kept only once its files have settled)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from specload.report import aggregate, measure_cache, render, run_files
from specload.report.run_files import RepSource
from specload.runfiles import records
from tests.support import run_files as make

STEPS = [(0, 1, 95.0, 100.05, 130.05), (1, 4, 135.0, 140.05, 170.05)]


def _settle(folder: Path, age_s: float = 60.0) -> None:
    then = time.time() - age_s
    for path in folder.rglob("*"):
        os.utime(path, (then, then))


def _write(prefix: Path, period: float = 1.0) -> None:
    reqs = make.steady_requests(95.0, 132.0, 1, period, 10, 3)
    reqs += make.steady_requests(135.0, 172.0, 4, period, 10, 3)
    make.write_prefix(prefix, reqs, rungs=STEPS)


@pytest.fixture
def rep(tmp_path: Path, monkeypatch: Any) -> aggregate.RepJob:
    monkeypatch.setenv("SPECLOAD_CACHE", str(tmp_path / "cache"))
    prefix = tmp_path / "run" / "locust"
    _write(prefix)
    _settle(prefix.parent)
    return aggregate.RepJob("on", RepSource(1, prefix))


def _tables(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / measure_cache.FOLDER).glob("*.pkl"))


def _no_measuring(monkeypatch: Any) -> None:
    def refuse(prefix: Path) -> pd.DataFrame:
        raise AssertionError(f"{prefix} measured again")

    monkeypatch.setattr(aggregate, "rung_table", refuse)


def test_second_measurement_is_the_first_table(rep: aggregate.RepJob, tmp_path: Path,
                                               monkeypatch: Any) -> None:
    first = aggregate.measure_rep(rep)
    assert len(_tables(tmp_path)) == 1 and list(first["rung"]) == [0, 1]
    _no_measuring(monkeypatch)
    pd.testing.assert_frame_equal(aggregate.measure_rep(rep), first)
    # the arm's name and repeat are the caller's, not the kept table's
    again = aggregate.measure_rep(aggregate.RepJob("renamed", RepSource(7, rep.rep.prefix)))
    assert set(again["arm"]) == {"renamed"} and set(again["rep"]) == {7}


def test_a_changed_file_is_measured_again(rep: aggregate.RepJob, tmp_path: Path) -> None:
    before = aggregate.measure_rep(rep)
    _write(rep.rep.prefix, period=0.5)  # twice the requests per second
    _settle(rep.rep.prefix.parent, age_s=30.0)
    after = aggregate.measure_rep(rep)
    assert after["requests_per_s"].iloc[0] == pytest.approx(2 * before["requests_per_s"].iloc[0],
                                                            rel=0.1)
    assert len(_tables(tmp_path)) == 2


def test_a_file_added_beside_the_prefix_is_a_miss(rep: aggregate.RepJob, tmp_path: Path) -> None:
    aggregate.measure_rep(rep)
    trace = rep.rep.prefix.parent / records.SERVER_TRACE_NAME
    trace.write_text("")
    _settle(rep.rep.prefix.parent)
    aggregate.measure_rep(rep)
    assert len(_tables(tmp_path)) == 2


def test_files_still_being_written_are_not_kept(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECLOAD_CACHE", str(tmp_path / "cache"))
    prefix = tmp_path / "run" / "locust"
    _write(prefix)  # written just now: a file could change again within its clock's tick
    table = aggregate.measure_rep(aggregate.RepJob("on", RepSource(1, prefix)))
    assert len(table) == 2 and _tables(tmp_path) == []


def test_a_damaged_table_is_measured_again_and_replaced(rep: aggregate.RepJob, tmp_path: Path
                                                         ) -> None:
    first = aggregate.measure_rep(rep)
    (table,) = _tables(tmp_path)
    table.write_bytes(b"not a pickle")
    pd.testing.assert_frame_equal(aggregate.measure_rep(rep), first)
    assert table.read_bytes() != b"not a pickle"


def test_a_cache_that_cannot_be_written_is_only_slower(rep: aggregate.RepJob, tmp_path: Path,
                                                       monkeypatch: Any) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SPECLOAD_CACHE", str(blocker))  # its folder cannot be made
    assert list(aggregate.measure_rep(rep)["rung"]) == [0, 1]
    assert list(tmp_path.glob("a-file.*")) == []


def test_the_code_is_part_of_the_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "report").mkdir(parents=True)
    source = package / "report" / "client_metrics.py"
    source.write_text("X = 1\n")
    digest = measure_cache.code_digest.__wrapped__
    digests = [digest(package)]
    source.write_text("X = 2\n")
    digests.append(digest(package))
    (package / "new.py").write_text("")
    digests.append(digest(package))
    assert len(set(digests)) == 3


def test_least_recently_used_tables_go_first(tmp_path: Path) -> None:
    folder = tmp_path / "measured"
    folder.mkdir()
    for i in range(5):
        path = folder / f"{i}.pkl"
        path.write_bytes(b"")
        os.utime(path, (1000.0 + i, 1000.0 + i))
    os.utime(folder / "0.pkl")  # used just now
    measure_cache._prune(folder, keep=3)
    assert sorted(p.name for p in folder.glob("*.pkl")) == ["0.pkl", "3.pkl", "4.pkl"]


def _sweep(run: Path, rep_status: str) -> Path:
    for arm, period in (("on", 1.0), ("off", 0.5)):
        _write(run / arm / "locust", period)
    arms = [make.arm_entry("on", "spec_on"), make.arm_entry("off", "spec_off", k=None)]
    for arm in arms:
        arm["reps"][0]["status"] = rep_status
    make.write_manifest(run, arms)
    return run


def test_a_sweep_built_again_measures_nothing_and_says_the_same(tmp_path: Path,
                                                                monkeypatch: Any) -> None:
    """The sweep finished its repeats: their tables are kept at once, files just written."""
    monkeypatch.setenv("SPECLOAD_CACHE", str(tmp_path / "cache"))
    run = _sweep(tmp_path / "run", "done")
    first = render.summary_json(render.build(run))
    assert len(_tables(tmp_path)) == 2
    _no_measuring(monkeypatch)
    assert render.summary_json(render.build(run)) == first


def test_a_repeat_still_running_is_kept_only_once_settled(tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECLOAD_CACHE", str(tmp_path / "cache"))
    run = _sweep(tmp_path / "run", "running")
    render.build(run)
    assert _tables(tmp_path) == []
    _settle(run)
    render.build(run)
    assert len(_tables(tmp_path)) == 2


def test_only_repeats_not_kept_go_to_the_workers(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECLOAD_CACHE", str(tmp_path / "cache"))
    run = _sweep(tmp_path / "run", "done")
    aggregate.measure_all(run_files.discover(run))
    (run / "off" / "locust_requests.csv").touch()  # new times: measured again
    handed: list[list[str]] = []

    def recording(fn: Any, jobs: list[aggregate.RepJob], processes: int | None) -> list[Any]:
        handed.append([j.arm for j in jobs])
        return [fn(j) for j in jobs]

    monkeypatch.setattr(aggregate, "map_jobs", recording)
    table = aggregate.measure_all(run_files.discover(run))
    assert handed == [["off"]] and list(table["arm"]) == ["on", "on", "off", "off"]
