"""The report for chat sessions and open-loop runs, on hand-made run files."""

from __future__ import annotations

from pathlib import Path

import pytest

from specload.report import render
from tests.support import run_files as make
from tests.support.run_files import request, write_prefix

T0 = 1_700_000_000.0


def _session_run(tmp_path: Path) -> Path:
    """Two rungs of 2 and 4 sessions: one turn every 2 s each, 0.5 s per reply, the
    context growing by 100 tokens a turn."""
    for arm in ("spec-on", "spec-off"):
        reqs, rungs = [], []
        for rung, (users, t_start) in enumerate(((2, T0), (4, T0 + 20))):
            rungs.append((rung, users, t_start, t_start, t_start + 20))
            for u in range(users):
                for turn in range(10):
                    s = t_start + 0.3 * u + 2 * turn
                    reqs.append(request(s, [s + 0.1, s + 0.5], [1, 9],
                                        rid=f"{arm}{rung}{u}{turn}", session_id=f"s{rung}{u}",
                                        turn=turn + 1, prompt_tokens=100 * (turn + 1)))
        write_prefix(tmp_path / arm / "locust", reqs, rungs=rungs)
    return tmp_path


def test_sessions_report_sessions_in_flight_and_context(tmp_path: Path) -> None:
    report = render.build(_session_run(tmp_path))
    assert report.workload == "sessions"
    rows = report.summary[report.summary["arm"] == "spec-on"].set_index("concurrency")
    assert list(rows["sessions"]) == [2, 4]
    assert rows.loc[4, "achieved_concurrency"] == pytest.approx(4 * 0.5 / 2, rel=0.05)
    assert rows.loc[2, "prompt_tokens_p50"] == pytest.approx(550)
    table = render._table(report)
    assert {"sessions", "in flight", "context p50", "context p90"} <= set(table.columns)
    # in flight far below the sessions is what think time does, not a shortfall
    assert not [w for w in report.warnings if w["kind"] == "concurrency_shortfall"]


@pytest.mark.parametrize("kind, table_has, shortfall", [
    ("sessions", "sessions", False), ("users", "C", True)])
def test_a_manifest_names_the_kind_the_report_reads(tmp_path: Path, kind: str,
                                                    table_has: str, shortfall: bool) -> None:
    run = _session_run(tmp_path)
    make.write_manifest(run, [make.arm_entry("spec-on", "spec_on"),
                              make.arm_entry("spec-off", "spec_off")], workload={"kind": kind})
    report = render.build(run)
    assert report.workload == kind and table_has in render._table(report).columns
    held = [w for w in report.warnings if w["kind"] == "concurrency_shortfall"]
    assert bool(held) is shortfall
    assert ("Requests in flight per number of chat sessions" in render._html(report)) is (
        kind == "sessions")


def _open_run(tmp_path: Path, speeds: tuple[float, float] | None = None,
              late_by: str = "cap") -> Path:
    """Rates 2/s and 4/s, 10 s windows. Spec-on takes 0.1 s then 0.3 s per request,
    spec-off 0.15 s then 0.2 s; at 4/s spec-off's cap holds 10 of 40 arrivals back and
    starts 10 more late (by `late_by`). With `speeds`, a trace replay's rungs at those
    speeds."""
    plan = {"spec-on": ((0.1, 0, 0), (0.3, 0, 0)), "spec-off": ((0.15, 0, 0), (0.2, 10, 10))}
    for arm, rungs_plan in plan.items():
        reqs, rungs = [], []
        for rung, (rate, (e2e, unsent, late)) in enumerate(zip((2.0, 4.0), rungs_plan,
                                                               strict=True)):
            w0 = T0 + 20 * rung
            rungs.append((rung, 64, w0 - 5, w0, w0 + 10, rate,
                          *((speeds[rung],) if speeds else ())))
            n = round(rate * 10)
            for i in range(n - unsent):
                due = w0 + i / rate
                lag = 0.05 if i < late else 0.0
                s = due + lag
                reqs.append(request(s, [s + e2e / 2, s + e2e], [1, 9], rid=f"{arm}{rung}{i}",
                                    scheduled=due, late_ms=lag * 1e3,
                                    late_by=late_by if lag else ""))
        write_prefix(tmp_path / arm / "locust", reqs, rungs=rungs)
    return tmp_path


def test_open_loop_report_reads_rates_late_starts_and_rate_star(tmp_path: Path) -> None:
    report = render.build(_open_run(tmp_path))
    assert report.workload == "open" and report.pairs == [] and report.recommendations == []
    s = report.summary.set_index(["arm", "rate"])
    assert s.loc[("spec-on", 2.0), "achieved_rate"] == pytest.approx(2.0)
    assert s.loc[("spec-off", 4.0), "achieved_rate"] == pytest.approx(3.0)
    assert s.loc[("spec-off", 4.0), "arrivals_planned"] == 40
    assert s.loc[("spec-off", 4.0), "arrivals_sent"] == 30
    assert s.loc[("spec-off", 4.0), "late_cap_share"] == pytest.approx(10 / 30)
    assert s.loc[("spec-off", 4.0), "late_client_share"] == 0
    # latency from the schedule holds the time a start waited; from the send it does not
    assert s.loc[("spec-off", 4.0), "e2e_sched_mean_ms"] == pytest.approx(200 + 50 / 3)
    assert s.loc[("spec-off", 4.0), "e2e_p50_ms"] == pytest.approx(200)
    (pair,) = report.rate_pairs
    assert list(pair.table["speedup"]) == pytest.approx([1.5, (200 + 50 / 3) / 300])
    assert pair.crossover.verdict == "crosses" and 2 < pair.crossover.c_star < 4
    held = [w for w in report.warnings if w["kind"] == "rate_held"]
    assert len(held) == 1 and held[0]["rate"] == 4.0
    assert "cap on requests in flight" in held[0]["message"]
    assert "10 planned arrivals never started" in held[0]["message"]
    lines = render._crossover_lines(report)
    assert lines[0].startswith("spec-on vs spec-off (open loop") and "rate* = " in lines[0]
    assert {"rate/s", "achieved/s", "late", "E2E mean sched ms"} <= set(
        render._table(report).columns)
    page = render.write(report).read_text()
    assert "Crossover rate*" in page and "Speedup of speculative decoding per arrival" in page


def test_a_trace_replay_reads_its_crossover_in_speed(tmp_path: Path) -> None:
    run = _open_run(tmp_path, speeds=(1.0, 2.0))  # the trace's own rate: 2/s
    make.write_manifest(run, [make.arm_entry("spec-on", "spec_on"),
                              make.arm_entry("spec-off", "spec_off")], workload={"kind": "trace"})
    report = render.build(run)
    assert report.workload == "trace"
    (pair,) = report.rate_pairs
    assert list(pair.table["speed"]) == [1.0, 2.0] and pair.per_speed == 2.0
    assert pair.speed_star == pytest.approx(pair.crossover.c_star / 2)
    assert pair.speed_interval is not None and pair.speed_interval.name == "speed*"
    (line,) = render._crossover_lines(report)[:1]
    assert line.startswith("spec-on vs spec-off (trace replay")
    assert f"speculation pays up to {pair.speed_star:.2g}x this trace's rate" in line
    assert "between speeds 1x and 2x" in line and "95% interval" in line
    table = render._table(report)
    assert list(table.columns[:3]) == ["arm", "speed", "rate/s"] and "late p99 ms" in table
    page = render.write(report).read_text()
    assert "Crossover speed*" in page and "Speedup of speculative decoding per trace" in page
    assert "speed* = " in page


@pytest.mark.parametrize("late_by, warned", [("cap", False), ("client", True)])
def test_a_trace_replay_behind_its_schedule_is_warned_about(tmp_path: Path, late_by: str,
                                                            warned: bool) -> None:
    run = _open_run(tmp_path, speeds=(1.0, 2.0), late_by=late_by)
    make.write_manifest(run, [make.arm_entry("spec-on", "spec_on"),
                              make.arm_entry("spec-off", "spec_off")], workload={"kind": "trace"})
    found = [w for w in render.build(run).warnings if w["kind"] == "schedule_late"]
    assert bool(found) is warned
    if warned:  # 10 of 30 arrivals 50 ms late, none held by the cap
        (w,) = found
        assert w["speed"] == 2.0 and "started up to 50.0 ms after their scheduled" in w["message"]
