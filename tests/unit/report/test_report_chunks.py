"""Vectorised chunk parsing: counts per row, fallbacks, arrivals, even token split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specload.report import chunks


def _frame(gaps: list[str], tokens: list[str], out: list[int], start: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"chunk_gaps_us": gaps, "chunk_tokens": tokens,
                         "output_tokens": out, "start": start})


def test_parse_int_lists_flattens_and_counts_rows() -> None:
    values, counts = chunks.parse_int_lists(["1 2 3", "", "40", "5 6"])
    assert values.tolist() == [1, 2, 3, 40, 5, 6]
    assert counts.tolist() == [3, 0, 1, 2]


def test_parse_int_lists_treats_a_malformed_row_as_empty() -> None:
    values, counts = chunks.parse_int_lists(["1 2", "x y", "3"])
    assert values.tolist() == [1, 2, 3]
    assert counts.tolist() == [2, 0, 1]


def test_parse_int_lists_tolerates_double_spaces() -> None:
    values, counts = chunks.parse_int_lists(["1  2", "3"])
    assert values.tolist() == [1, 2, 3]
    assert counts.tolist() == [2, 1]


def test_build_gives_row_summaries() -> None:
    df = _frame(["1000000 500000 500000", "", "2000000"], ["1 3 2", "", ""], [6, 0, 4],
                [100.0, 200.0, 300.0])
    ch = chunks.build(df)
    assert ch.counts.tolist() == [3, 0, 1]
    assert ch.tokens.tolist() == [1, 3, 2, 4]  # last row: 4 output tokens over 1 chunk
    assert ch.row_tokens.tolist() == [6, 0, 4]
    assert ch.first_arrival.tolist() == [101.0, 200.0, 302.0]
    assert ch.last_arrival.tolist() == [102.0, 200.0, 302.0]


def test_tokens_spread_evenly_when_chunk_tokens_do_not_match() -> None:
    df = _frame(["10 10 10 10", "10 10"], ["1 2", "2 2"], [10, 4], [0.0, 0.0])
    ch = chunks.build(df)
    assert ch.tokens.tolist() == [2.5, 2.5, 2.5, 2.5, 2, 2]


def test_arrivals_of_a_subset_of_rows() -> None:
    df = _frame(["1000000 1000000", "500000", "250000 250000 250000"], ["1 1", "3", "1 2 3"],
                [2, 3, 6], [10.0, 20.0, 30.0])
    ch = chunks.build(df)
    arrival, tokens = chunks.arrivals(ch, df["start"].to_numpy(), np.array([2, 0]))
    assert arrival == pytest.approx([30.25, 30.5, 30.75, 11.0, 12.0])
    assert tokens.tolist() == [1, 2, 3, 1, 1]


def test_single_digit_fast_path_and_its_fallback() -> None:
    assert chunks.parse_int_lists(["1 2 3", "4", "", "9 0"])[0].tolist() == [1, 2, 3, 4, 9, 0]
    # Same length as single digits would be, but not digits: must not be misread.
    values, counts = chunks.parse_int_lists(["1 -", "2"])
    assert values.tolist() == [2] and counts.tolist() == [0, 1]
