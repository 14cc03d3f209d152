"""Progress lines from the live rung file, and when an arm counts as failed."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from specload.config.scenario import parse_scenario
from specload.runner.attempt import Sweep
from specload.runner.locust_proc import LoadMode
from specload.runner.manifest_entries import new_manifest
from specload.runner.progress import (
    WorkerEvents,
    arm_failure,
    failure_text,
    fmt_s,
    live_lines,
    progress_line,
    rung_figures,
)
from tests.support import run_files as make

LINE = {"rung": 2, "users": 10, "measure_start": 0.0, "measure_end": 10.0,
        "output_tok_s": 214.53, "requests": 40, "failures": 0, "top_failure": "",
        "ttft_p50_ms": 123.4}


def test_fmt_s() -> None:
    assert [fmt_s(x) for x in (0, 9.9, 60, 75, 3599, -3)] == [
        "0s", "9s", "1m00s", "1m15s", "59m59s", "0s"]


def test_progress_line_shows_the_tables_figures() -> None:
    line = progress_line("spec-on rep 2", LINE, [1, 5, 10, 30], 75, 130)
    assert line == ("[spec-on rep 2] rung 3/4 C=10 | 214.5 tok/s, TTFT p50 123 ms, "
                    "40 requests, no failures | elapsed 1m15s, ETA ~2m10s")


def test_progress_line_shows_failures_and_their_top_reason() -> None:
    bad = {**LINE, "requests": 10, "failures": 30, "top_failure": "HTTP 400: (empty body)",
           "ttft_p50_ms": "inf"}
    line = progress_line("a", bad, [10], 1, 0)
    assert "TTFT p50 > timeout" in line
    assert "failures 30 of 40 (75%): HTTP 400: (empty body)" in line
    empty = progress_line("a", {"rung": 0, "users": 10}, [10], 1, 0)
    assert "no requests measured" in empty


def test_progress_line_says_when_no_request_started_in_the_window() -> None:
    none = {**LINE, "requests": 0, "requests_started": 0, "ttft_p50_ms": None}
    assert "TTFT p50 none sent, 0 requests" in progress_line("a", none, [10], 1, 0)


def test_failure_text() -> None:
    assert failure_text(0, 10, "x") == "no failures"
    assert failure_text(1, 8, "") == "failures 1 of 8 (12%)"


def test_live_lines_read_complete_lines_only(tmp_path: Path) -> None:
    prefix = tmp_path / "locust"
    assert live_lines(prefix) == []
    Path(f"{prefix}_live.jsonl").write_bytes(orjson.dumps(LINE) + b"\n" + b'{"rung": 3')
    assert live_lines(prefix) == [LINE]


def test_an_arm_fails_when_most_requests_failed_or_none_got_through(tmp_path: Path) -> None:
    prefix = tmp_path / "locust"
    ok = [LINE, {**LINE, "failures": 5, "top_failure": "boom"}]
    assert arm_failure(ok, prefix) is None
    bad = [{**LINE, "requests": 1, "failures": 30, "top_failure": "HTTP 400: (empty body)"}]
    assert arm_failure(bad, prefix) == ("failures 30 of 31 (97%): HTTP 400: (empty body) "
                                        "(more than 50% failed)")
    Path(f"{prefix}_failures.csv").write_text(
        "Method,Name,Error,Occurrences\nGET,/v1/models,GET /v1/models: HTTP 404,12\n")
    none = [{**LINE, "requests": 0, "failures": 0}]
    assert arm_failure(none, prefix) == ("no request completed in any rung: "
                                         "GET /v1/models: GET /v1/models: HTTP 404")


EVENTS_HEADER = "ts,client_id,node,event,since,detail\n"


def test_worker_events_are_told_once_per_worker_and_clock_problem(tmp_path: Path) -> None:
    events = WorkerEvents(tmp_path / "locust")
    assert events.new_lines("a") == []
    path = tmp_path / "locust_events.csv"
    path.write_text(EVENTS_HEADER
                    + "1.0,h-7,n7,clock_uncertain,1.0,clock offset +3.0 ms uncertain\n"
                    + "2.0,h-8,n8,lost,0.5,\"lost: no heartbeat for 4.5 s, Locust marked it")
    assert events.new_lines("a") == [
        "[a] warning: worker h-7: clock offset +3.0 ms uncertain"]  # not the half line
    with path.open("a") as fh:
        fh.write(" missing\"\n11.0,h-7,n7,clock_uncertain,11.0,again\n")
    assert events.new_lines("a") == [
        "[a] warning: worker h-8: lost: no heartbeat for 4.5 s, Locust marked it missing"]
    assert events.new_lines("a") == []


def test_a_rung_whose_requests_all_queue_says_how_long_they_waited(tmp_path: Path) -> None:
    """Both requests sent in [100, 110) were still queued at the end (waits 8 s and 6 s)."""
    reqs = [make.request(101.0, [], None, interrupted=True, end=109.0, rid="Q1"),
            make.request(103.0, [], None, interrupted=True, end=109.0, rid="Q2"),
            make.request(90.0, [100.5, 104.5, 112.0], [2, 3, 1], rid="S")]
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=[(0, 3, 95.0, 100.0, 110.0)])
    line = rung_figures(prefix, {"rung": 0, "users": 3, "measure_start": 100.0,
                                 "measure_end": 110.0})
    assert progress_line("on", line, [3], 60, 0) == (
        "[on] rung 1/1 C=3 | 0.5 tok/s, TTFT p50 > 7000 ms (still queued), 0 requests, "
        "no failures | elapsed 1m00s, ETA ~0s")


def test_progress_line_says_when_the_window_was_stretched() -> None:
    """A window that ran past its cap (`ladder.window_cap`: the rung's requests were
    long) says so; one within it says nothing more."""
    stretched = progress_line("a", {**LINE, "measure_end": 110.0}, [10], 1, 0, 45.0)
    assert ("40 requests, no failures, window stretched to 1m50s (max 45s): its requests "
            "are long, and every user's had to end and a new one start |") in stretched
    assert "stretched" not in progress_line("a", LINE, [10], 1, 0, 10.0)


def test_a_rung_of_users_short_of_c_says_so() -> None:
    """Achieved concurrency more than 10% under C is said on the rung's line; a sessions
    rung (`holds_c` False) and one within 10% say nothing of it."""
    short = {**LINE, "users": 4, "achieved_concurrency": 2.7}
    assert ("40 requests, no failures, SHORT OF C: achieved 2.7 of 4 |"
            in progress_line("a", short, [4], 1, 0, holds_c=True))
    assert "SHORT" not in progress_line("a", short, [4], 1, 0, holds_c=False)
    held = {**short, "achieved_concurrency": 3.7}
    assert "SHORT" not in progress_line("a", held, [4], 1, 0, holds_c=True)


def test_the_time_left_follows_the_pace_of_rungs_that_ran_long() -> None:
    """Rungs whose windows waited for `min_requests` make the rungs left count as long."""
    scenario = parse_scenario({"name": "t", "warmup_s": 2, "measure_s": 8, "arms": [
        {"name": "a", "sim": {"profile": "seed-glm", "spec": "on"}}]}, Path("."))
    sweep = Sweep(scenario, Path("."), new_manifest(scenario), LoadMode(), ["a"])
    assert sweep.rung_s == 10
    sweep.load_started, sweep.rungs_done = time.monotonic() - 100, 4
    assert 25 <= sweep.rung_s < 26
    sweep.load_started = time.monotonic() - 20
    assert sweep.rung_s == 10
