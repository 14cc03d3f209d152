"""The recorder in a local runner: one CSV row per record, header from runfiles/records.py."""

from __future__ import annotations

import csv
from pathlib import Path

from locust.argument_parser import get_parser
from locust.env import Environment

from specload.loadgen import plugin
from specload.loadgen.recorder import Recorder
from specload.runfiles.records import REQUEST_COLUMNS, RequestRecord, decode_chunks, encode_chunks

plugin.install()  # as a locustfile does: specload's arguments and listeners


def make_env(*args: str) -> Environment:
    env = Environment(parsed_options=get_parser().parse_args(list(args)))
    env.create_local_runner()
    return env


def record(i: int) -> RequestRecord:
    gaps, tokens = encode_chunks(100.0, [100.02, 100.05], [1, 3])
    return RequestRecord(request_id=f"h-1-{i}", client_id="h-1", user_id=1, endpoint="chat",
                         category="code", start=100.0, end=100.06, status=200, ttft_ms=20.0,
                         e2e_ms=50.0, tpot_ms=10.0, output_tokens=4, tokens_source="usage",
                         num_chunks=2, chunk_gaps_us=gaps, chunk_tokens=tokens)


def test_rows_are_written_and_flushed_at_test_stop(tmp_path: Path) -> None:
    prefix = tmp_path / "sub" / "run"
    env = make_env("--csv", str(prefix))
    rec = Recorder.for_env(env)
    assert Recorder.for_env(env) is rec and rec.enabled
    env.events.test_start.fire(environment=env)
    for i in range(3):
        rec.add(record(i))
    env.events.test_stop.fire(environment=env)
    with open(f"{prefix}_requests.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == REQUEST_COLUMNS
    assert [r[0] for r in rows[1:]] == ["h-1-0", "h-1-1", "h-1-2"]
    row = dict(zip(REQUEST_COLUMNS, rows[1], strict=True))
    offsets, tokens = decode_chunks(row["chunk_gaps_us"], row["chunk_tokens"])
    assert offsets == [0.02, 0.05] and tokens == [1, 3]
    assert row["prompt_tokens"] == "" and row["interrupted"] == "0"
    env.events.quitting.fire(environment=env)


def test_no_csv_or_no_records_means_no_rows(tmp_path: Path) -> None:
    assert not Recorder.for_env(make_env()).enabled
    env = make_env("--csv", str(tmp_path / "x"), "--no-records")
    rec = Recorder.for_env(env)
    env.events.test_start.fire(environment=env)
    rec.add(record(1))
    assert not rec.enabled and rec.rows_written == 0
    assert not (tmp_path / "x_requests.csv").exists()
