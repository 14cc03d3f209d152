"""The Tokens tab's figures: the report's numbers per rung, settled bins, bounded memory.

A hand-made run is replayed as the Locust process feeds it: once a second, the rows of
the requests that ended since, the watermark (the oldest start still in flight), the
ladder's phases and the rungs complete by then. Rung 0 is 1 user from 95 s (measure
[100.05, 130.05)), rung 1 is 4 users from 135 s (measure [140.05, 170.05)), as in
test_report_render.py.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from specload.report import aggregate, client_metrics, run_files
from specload.report.live_figures import BIN_S, LiveFigures, load_status, serve
from specload.report.run_files import RepSource
from specload.report.rung_columns import View, names
from specload.report.windows import Window
from specload.runfiles.records import CLIENT_LAG_LIMIT_MS, CLIENT_STATS_COLUMNS, RequestRecord
from tests.support import run_files as make

STEPS = [(0, 1, 95.0, 100.05, 130.05), (1, 4, 135.0, 140.05, 170.05)]
T0 = 95.0


def _requests() -> list[RequestRecord]:
    reqs = make.steady_requests(95.0, 132.0, 1, 2.0, 10, 3)
    return reqs + make.steady_requests(135.0, 172.0, 4, 2.5, 10, 3)


def _client_row(ts: float, cpu: float = 20.0, lag: float = 1.0) -> list[Any]:
    values = {"ts": ts, "client_id": "c1", "cpu_percent": cpu, "lag_p50_ms": 0.2,
              "lag_p99_ms": lag, "users": 1, "lag_samples": 95, "lag_late": 0,
              "chunks": 10, "in_flight": 1, "tokens": 20}
    return [values[c] for c in CLIENT_STATS_COLUMNS]


def _phases(now: float) -> list[dict[str, Any]]:
    spans = []
    for rung, users, warm, start, end in STEPS:
        if warm <= now:
            spans.append({"rung": rung, "users": users, "phase": "warmup", "start": warm,
                          "end": start if start <= now else None})
        if start <= now:
            spans.append({"rung": rung, "users": users, "phase": "measure", "start": start,
                          "end": end if end <= now else None})
    return spans


def replay(figures: LiveFigures, reqs: list[RequestRecord], until: float) -> None:
    """Feed the run second by second as the Locust process would, up to `until`."""
    figures.feed({"reset": T0})
    sent: set[int] = set()
    announced: set[int] = set()
    now = T0
    while now < until:
        now += 1.0
        ended = [i for i, r in enumerate(reqs) if r.end <= now and i not in sent]
        sent.update(ended)
        in_flight = [r.start for r in reqs if r.start <= now < r.end]
        settled = min(in_flight, default=now)
        rungs = [{"rung": s[0], "users": s[1], "measure_start": s[3], "measure_end": s[4]}
                 for s in STEPS if s[4] <= settled and s[0] not in announced]
        announced.update(r["rung"] for r in rungs)
        figures.feed({"now": now, "settled_until": settled, "stopped_at": None,
                      "state": "running", "users": 1, "rows": [reqs[i].row() for i in ended],
                      "client": [_client_row(now)], "phases": _phases(now), "rungs": rungs})
        figures.update()


def test_each_rung_has_the_reports_numbers(tmp_path: Path) -> None:
    reqs = _requests()
    figures = LiveFigures()
    replay(figures, reqs, 175.0)
    prefix = make.write_prefix(tmp_path / "run", reqs, rungs=STEPS,
                               client=[_client_row(float(t)) for t in range(96, 176)])
    report = aggregate.measure_rep(aggregate.RepJob("arm", RepSource(1, prefix)))
    assert [r["concurrency"] for r in figures.rungs] == [1, 4]
    for live, (_, expected) in zip(figures.rungs, report.iterrows(), strict=True):
        for column in names(View.LIVE):
            assert live[column] == expected[column], column
    assert figures.rungs[0]["output_tok_s"] == pytest.approx(15.0)  # 30 tokens / 2 s
    table = figures.table_rows()
    assert list(table[1]) == list(names(View.LIVE))
    assert table[1]["concurrency"] == "4" and table[0]["output_tok_s"] == "15"


def test_bins_are_measured_once_settled_and_never_change() -> None:
    reqs = _requests()
    figures = LiveFigures()
    replay(figures, reqs, 120.0)
    first = {k: list(v) for k, v in figures.series.items()}
    # every bin ends before the watermark: requests in flight could still add to later ones
    assert first["t"] == pytest.approx([BIN_S * (i + 1) for i in range(len(first["t"]))])
    assert T0 + first["t"][-1] <= figures.settled < T0 + first["t"][-1] + BIN_S
    replay_more = LiveFigures()
    replay(replay_more, reqs, 175.0)
    later = replay_more.series
    assert all(later[k][: len(v)] == v for k, v in first.items())
    frame = run_files.frame_from_rows([r.row() for r in reqs])
    bins = [Window(i, 1, T0 + t - BIN_S, T0 + t) for i, t in enumerate(later["t"])]
    expected = client_metrics.measure(frame, bins)
    assert later["output_tok_s"] == expected["output_tok_s"].tolist()
    assert later["ttft_p50_ms"][:3] == pytest.approx(expected["ttft_p50_ms"][:3].tolist())


def test_rows_are_forgotten_once_no_bin_or_rung_needs_them() -> None:
    figures = LiveFigures()
    replay(figures, _requests(), 150.0)
    # rung 1 is still running: every row since its warmup began is kept, none before
    ends = [float(r[5]) for r in figures.rows]  # column 5: end
    assert min(ends) >= 135.0 and len(ends) > 10
    replay(figures, _requests(), 175.0)
    assert figures.rows == []  # every bin and rung measured


def test_users_and_load_processes() -> None:
    figures = LiveFigures()
    replay(figures, _requests(), 140.0)
    payload = figures.payload()
    assert payload["users"]["users"][:2] == [1, 4]  # the ladder's phases, exactly
    assert payload["users"]["t"][:2] == [0.0, 40.0]
    assert payload["client"]["in_flight"][-1] == 1
    assert payload["load"]["status"] == "ok" and payload["load"]["processes"] == 1
    assert load_status(95.0, 1.0)[0] == "saturated"
    assert load_status(30.0, CLIENT_LAG_LIMIT_MS + 1)[0] == "lagging"


def test_serve_answers_every_batch_with_the_live_json_and_the_table() -> None:
    read_end, write_end = os.pipe()
    lines = [{"reset": T0}, {"rows": [_requests()[0].row()]},
             {"now": 100.0, "settled_until": 99.0, "users": 1, "state": "running"}]
    os.write(write_end, b"".join(orjson.dumps(m) + b"\n" for m in lines))
    os.close(write_end)
    out = io.BytesIO()
    with os.fdopen(read_end, "rb") as stdin:
        serve(stdin, out)
    answers = out.getvalue().splitlines()
    assert {a.split(b" ")[0] for a in answers} == {b"live", b"table"}
    live = orjson.loads(answers[-2].partition(b" ")[2])
    assert live["ready"] and live["state"] == "running"
    assert live["series"]["t"] == [2.0, 4.0]  # the bins before the watermark, 99 s
    assert orjson.loads(answers[-1].partition(b" ")[2]) == []


def test_a_bad_line_is_reported_not_fatal() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"reset": 95.0}\n{"now": "soon", "settled_until": 1}\n')
    os.close(write_end)
    out = io.BytesIO()
    with os.fdopen(read_end, "rb") as stdin:
        serve(stdin, out)
    live = orjson.loads(out.getvalue().splitlines()[-2].partition(b" ")[2])
    assert "ValueError" in live["error"]

