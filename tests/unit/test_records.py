"""The per-request record: CSV columns and the compact chunk-timing encoding."""

import csv
import io

import pytest

from specload.runfiles.records import REQUEST_COLUMNS, RequestRecord, decode_chunks, encode_chunks


def test_chunk_encoding_round_trips_without_drift() -> None:
    start = 1_700_000_000.123456
    arrivals = [start + 0.0101 + i * 0.0203333 for i in range(500)]
    gaps, toks = encode_chunks(start, arrivals, [1, 3] * 250)
    offsets, counts = decode_chunks(gaps, toks)
    assert counts == [1, 3] * 250
    assert len(offsets) == 500
    # cumulative rounding: every offset within half a microsecond (plus float noise)
    for off, t in zip(offsets, arrivals, strict=True):
        assert abs(off - (t - start)) < 1e-6


def test_unknown_token_counts_are_empty() -> None:
    gaps, toks = encode_chunks(10.0, [10.5, 11.0], None)
    assert (gaps, toks) == ("500000 500000", "")
    assert decode_chunks(gaps, toks) == ([0.5, 1.0], None)


def test_empty_stream() -> None:
    assert encode_chunks(1.0, [], []) == ("", "")
    assert decode_chunks("", "") == ([], None)


def test_row_matches_columns_and_formats_cells() -> None:
    rec = RequestRecord(
        request_id="h-1-7", client_id="h-1", user_id=3, endpoint="chat", category="code",
        start=1.5, end=2.25, status=200, ttft_ms=12.34567, e2e_ms=None, interrupted=True,
    )
    row = rec.row()
    assert len(row) == len(REQUEST_COLUMNS)
    as_dict = dict(zip(REQUEST_COLUMNS, row, strict=True))
    assert as_dict["ttft_ms"] == 12.346
    assert as_dict["e2e_ms"] == ""
    assert as_dict["interrupted"] == 1
    buf = io.StringIO()
    csv.writer(buf).writerow(row)
    assert buf.getvalue().startswith("h-1-7,h-1,3,chat,code,1.5,2.25,200,12.346,")
    assert "extra" not in REQUEST_COLUMNS


def test_times_of_day_keep_the_microsecond() -> None:
    # an open-loop plan's gaps at 80/s average 12.5 ms: stamps rounded to the ms moved
    # the sends' inter-arrival distribution off the plan's by a third of a KS test's
    # margin (test_open_loop.py)
    rec = RequestRecord(
        request_id="h-1-7", client_id="h-1", user_id=3, endpoint="chat", category="code",
        start=1796329467.346218, end=1796329468.000437, status=200,
        scheduled=1796329467.340111, late_ms=6.107123,
    )
    as_dict = dict(zip(REQUEST_COLUMNS, rec.row(), strict=True))
    assert as_dict["start"] == pytest.approx(1796329467.346218, abs=1e-6)
    assert as_dict["end"] == pytest.approx(1796329468.000437, abs=1e-6)
    assert as_dict["scheduled"] == pytest.approx(1796329467.340111, abs=1e-6)
    assert as_dict["late_ms"] == 6.107
