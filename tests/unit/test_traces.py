"""Trace files by format: Mooncake's JSON lines and Azure's CSV read into one `Trace`,
detected by name and first line, cut to a window, and a malformed line named by number
in a one-line error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specload.traffic.traces import Trace, TraceError, load_trace
from tests.support.trace_files import Row, azure_time, write_azure, write_mooncake

ROWS = [Row(27482, 6955, 52, (46, 47)), Row(27482 + 1500, 700, 40, (46, 9)),
        Row(27482 + 4000, 512, 3, (10,))]


def test_a_mooncake_trace_keeps_times_lengths_and_blocks(tmp_path: Path) -> None:
    trace = load_trace(str(write_mooncake(tmp_path / "t.jsonl", ROWS)))
    assert trace.format == "mooncake"
    assert [r.t_s for r in trace.requests] == [0.0, 1.5, 4.0]  # ms from the first arrival
    assert [(r.input_tokens, r.output_tokens) for r in trace.requests] == \
        [(6955, 52), (700, 40), (512, 3)]
    assert trace.requests[1].blocks == (46, 9)
    # the span plus one mean gap: 3 arrivals in 6 s is its rate
    assert trace.length_s == pytest.approx(6.0) and trace.rate == pytest.approx(0.5)


def test_an_azure_trace_reads_both_years_timestamps(tmp_path: Path) -> None:
    trace = load_trace(str(write_azure(tmp_path / "code.csv", ROWS)))
    assert trace.format == "azure" and azure_time(0) == "2023-11-16 18:15:46.0000000"
    assert [round(r.t_s, 6) for r in trace.requests] == [0.0, 1.5, 4.0]
    assert all(r.blocks == () for r in trace.requests)
    # the 2024 files: a zone, six digits or none
    path = tmp_path / "AzureLLMInferenceTrace_conv_1week.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2024-05-12 00:00:00+00:00,374,44\n"
                    "2024-05-12 00:00:00.250000+00:00,396,109\n")
    assert [r.t_s for r in load_trace(str(path)).requests] == [0.0, 0.25]


def test_out_of_order_lines_are_sorted_by_time(tmp_path: Path) -> None:
    path = write_mooncake(tmp_path / "t.jsonl", [ROWS[1], ROWS[0], ROWS[2]])
    assert [r.input_tokens for r in load_trace(str(path)).requests] == [6955, 700, 512]


def test_the_format_is_detected_or_given(tmp_path: Path) -> None:
    csv_named_txt = write_azure(tmp_path / "azure.txt", ROWS)
    assert load_trace(str(csv_named_txt)).format == "azure"  # by its first line
    with pytest.raises(TraceError, match=r"azure.txt:1: not valid JSON.*timestamp"):
        load_trace(str(csv_named_txt), "mooncake")
    with pytest.raises(TraceError, match=r"one of auto, mooncake, azure"):
        load_trace(str(csv_named_txt), "alibaba")


@pytest.mark.parametrize("line, says", [
    ('{"timestamp": 5, "input_length": 10}', "not a JSON object with `timestamp`"),
    ('{"timestamp": -1, "input_length": 10, "output_length": 5}', "timestamp -1"),
    ('{"timestamp": 5, "input_length": 0, "output_length": 5}', "input_length 0 is not"),
    ('{"timestamp": 5, "input_length": 9, "output_length": 2.5}', "output_length 2.5"),
    ('{"timestamp": 5, "input_length": 9, "output_length": 2, "hash_ids": 3}', "hash_ids 3"),
    ('{"timestamp": 5, "input_length": 9, "output_length": 2', "not valid JSON"),
])
def test_a_malformed_mooncake_line_is_named_by_number(tmp_path: Path, line: str, says: str
                                                      ) -> None:
    path = write_mooncake(tmp_path / "t.jsonl", ROWS)
    path.write_text(path.read_text() + "\n" + line + "\n")  # line 5: a blank line before
    with pytest.raises(TraceError) as got:
        load_trace(str(path))
    assert str(got.value).startswith(f"{path}:5: ") and says in str(got.value)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize("row, says", [
    ("2023-11-16 18:16:00.1,12", "2 fields, not 3"),
    ("yesterday,12,4", "TIMESTAMP 'yesterday' is not a date and time"),
    ("2023-11-16 18:16:00.1,twelve,4", "ContextTokens 'twelve' is not a number"),
    ("2023-11-16 18:16:00.1,12,0", "GeneratedTokens 0 is not a whole number of at least 1"),
])
def test_a_malformed_azure_row_is_named_by_line(tmp_path: Path, row: str, says: str) -> None:
    path = write_azure(tmp_path / "t.csv", ROWS)
    path.write_text(path.read_text() + row + "\n")
    with pytest.raises(TraceError, match=rf"t.csv:5: {says}"):
        load_trace(str(path))


def test_a_header_without_the_columns_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("time,ContextTokens,GeneratedTokens\n1,2,3\n")
    with pytest.raises(TraceError, match=r"t.csv:1: the header lacks TIMESTAMP"):
        load_trace(str(path))


def test_a_missing_or_empty_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"trace file .*nope.jsonl: No such file"):
        load_trace(str(tmp_path / "nope.jsonl"))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TraceError, match=r"no requests in the trace"):
        load_trace(str(tmp_path / "empty.jsonl"))


def test_a_window_rebases_its_requests_and_keeps_its_length(tmp_path: Path) -> None:
    trace = load_trace(str(write_mooncake(tmp_path / "t.jsonl", ROWS)))
    cut = trace.window(1.0, 4.0)  # [1, 5): the second and third request
    assert [r.t_s for r in cut.requests] == [0.5, 3.0] and cut.length_s == 4.0
    assert cut.rate == pytest.approx(0.5)
    assert trace.window(1.0).length_s == pytest.approx(5.0)  # to the trace's end
    with pytest.raises(TraceError, match=r"no request in the window from 10 s to 12 s"):
        trace.window(10.0, 2.0)


def test_simultaneous_arrivals_have_a_rate(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": 9,
                                        "output_length": 2}) + "\n" for _ in range(3)))
    trace = load_trace(str(path))
    assert isinstance(trace, Trace) and trace.length_s == 1.0 and trace.rate == 3.0


def test_a_file_is_parsed_once_while_it_stays_as_it_is(tmp_path: Path) -> None:
    path = write_mooncake(tmp_path / "t.jsonl", ROWS)
    first = load_trace(str(path))
    assert load_trace(str(path)) is first  # the scenario, the runner and the shape ask
    write_mooncake(path, [ROWS[0], ROWS[1], Row(ROWS[2].t_ms, 513, 3, (10,))])
    os.utime(path, ns=(1, 1))  # a rewrite of the same size: its time tells
    assert load_trace(str(path)).requests[2].input_tokens == 513
