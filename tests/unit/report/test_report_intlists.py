"""The column parser agrees with records.decode_chunks, row by row, on awkward inputs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specload.report import chunk_arrays, intlists, run_files
from specload.runfiles import records

# Rows (gaps, tokens) that a writer or a hand-edited file can produce.
AWKWARD_ROWS = [
    ("", ""),  # a failed request: no chunks
    ("5", "3"),  # a single chunk
    ("1000000000000000 1", "1 1"),  # a gap of 31 years
    (str(2**53 + 1), "7"),  # beyond float precision: rounded like Python does
    ("0 0 0", "0 2 0"),  # zero gaps and a zero-token chunk
    ("10 -5 7", "1 1 1"),  # a clock step backwards
    ("007 08", "1 01"),  # leading zeros
    ("1 2 3", "1 2"),  # token counts that do not match: spread evenly
    (" ".join(["12345"] * 1000), " ".join(["4"] * 1000)),  # a long stream
    ("", "5"),  # tokens without chunks
]


def _decoded_or_empty(text: str) -> list[int]:
    """What decode_chunks reads from one row, or [] where it refuses the row."""
    try:
        records.decode_chunks(text, "")
    except ValueError:
        return []
    values = [int(x) for x in text.split()]
    return values if all(intlists.INT64_MIN <= v <= intlists.INT64_MAX for v in values) else []


def _write(path: Path, rows: list[tuple[str, str]], with_tokens: bool) -> None:
    columns = ["start", "end", "output_tokens", "chunk_gaps_us"]
    columns += ["chunk_tokens"] if with_tokens else []
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for i, (gaps, tokens) in enumerate(rows):
            writer.writerow([0.0, 1.0, 10 + i, gaps, *([tokens] if with_tokens else [])])


@pytest.mark.parametrize("with_tokens", [True, False], ids=["tokens", "no-token-column"])
def test_chunk_arrays_match_decode_chunks(tmp_path: Path, with_tokens: bool) -> None:
    _write(tmp_path / f"x{records.REQUESTS_SUFFIX}", AWKWARD_ROWS, with_tokens)
    req = run_files.read_requests(tmp_path / "x")
    ch = chunk_arrays.build(req)
    for i, (gaps, tokens) in enumerate(AWKWARD_ROWS):
        offsets, counts = records.decode_chunks(gaps, tokens if with_tokens else "")
        first, n = int(ch.first_index[i]), int(ch.counts[i])
        assert n == len(offsets)
        assert (np.cumsum(ch.gap_us[first:first + n]) / 1e6).tolist() == offsets
        got_tokens = ch.tokens[first:first + n].tolist()
        if counts is not None and len(counts) == n:
            assert got_tokens == counts
        elif n:
            assert got_tokens == [req["output_tokens"][i] / n] * n


def test_parse_flattens_and_counts_rows() -> None:
    values, counts = intlists.parse(["1 2 3", "", "40", "5 6"])
    assert values.tolist() == [1, 2, 3, 40, 5, 6]
    assert counts.tolist() == [3, 0, 1, 2]


@pytest.mark.parametrize(("texts", "dtype"), [
    (["10 9", "0"], np.uint8), (["1 10"], np.int32), (["999999999 99999999"], np.int32),
    (["1 999999999"], np.int64), (["1000000000"], np.int64), (["1 x"], np.int64),
    ([""], np.uint8)])
def test_values_take_the_smallest_type_that_holds_them(texts: list[str], dtype: type) -> None:
    values = intlists.parse(texts)[0]
    assert values.dtype == dtype
    assert values.tolist() == [int(x) for t in texts if "x" not in t for x in t.split()]


@pytest.mark.parametrize("bad", ["x y", "1 -", "0x1F 2", "1 99999999999999999999", "1.5"])
def test_a_row_python_would_refuse_counts_as_empty(bad: str) -> None:
    values, counts = intlists.parse(["1 2", bad, "3"])
    assert values.tolist() == [1, 2, 3]
    assert counts.tolist() == [2, 0, 1]


@pytest.mark.parametrize("odd", ["1  2", " 1 2 ", "1\t2", "+1 2", "1\n2"])
def test_whitespace_and_signs_read_as_python_splits_them(odd: str) -> None:
    values, counts = intlists.parse([odd, "3"])
    assert values.tolist() == [1, 2, 3]
    assert counts.tolist() == [2, 1]


def test_missing_values_and_input_kinds() -> None:
    assert intlists.parse(pd.Series(["1 2", None, np.nan], dtype=object))[1].tolist() == [2, 0, 0]
    assert intlists.parse(pd.Series([np.nan, np.nan]))[1].tolist() == [0, 0]
    assert intlists.parse([])[0].size == 0
    with pytest.raises(TypeError, match="strings"):
        intlists.parse(pd.Series([1, 2]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    st.lists(st.integers(-(10**6), 10**16), max_size=6).map(lambda v: " ".join(map(str, v))),
    st.text(alphabet="0123456789 -+x\t", max_size=12),
), max_size=8))
def test_parse_agrees_with_decode_chunks_row_by_row(rows: list[str]) -> None:
    values, counts = intlists.parse(rows)
    expected = [_decoded_or_empty(r) for r in rows]
    assert counts.tolist() == [len(e) for e in expected]
    assert values.tolist() == [v for e in expected for v in e]
