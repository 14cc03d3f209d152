"""Per-chunk arrays: row summaries, arrivals of a subset of rows, even token split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specload.report import chunk_arrays


def _frame(gaps: list[str], tokens: list[str], out: list[int], start: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"chunk_gaps_us": gaps, "chunk_tokens": tokens,
                         "output_tokens": out, "start": start})


def test_build_gives_row_summaries() -> None:
    df = _frame(["1000000 500000 500000", "", "2000000"], ["1 3 2", "", ""], [6, 0, 4],
                [100.0, 200.0, 300.0])
    ch = chunk_arrays.build(df)
    assert ch.counts.tolist() == [3, 0, 1]
    assert ch.tokens.tolist() == [1, 3, 2, 4]  # last row: 4 output tokens over 1 chunk
    assert ch.row_tokens.tolist() == [6, 0, 4]
    assert ch.first_arrival.tolist() == [101.0, 200.0, 302.0]
    assert ch.last_arrival.tolist() == [102.0, 200.0, 302.0]


def test_tokens_spread_evenly_when_chunk_tokens_do_not_match() -> None:
    df = _frame(["10 10 10 10", "10 10"], ["1 2", "2 2"], [10, 4], [0.0, 0.0])
    ch = chunk_arrays.build(df)
    assert ch.tokens.tolist() == [2.5, 2.5, 2.5, 2.5, 2, 2]


def test_arrivals_of_a_subset_of_rows() -> None:
    df = _frame(["1000000 1000000", "500000", "250000 250000 250000"], ["1 1", "3", "1 2 3"],
                [2, 3, 6], [10.0, 20.0, 30.0])
    ch = chunk_arrays.build(df)
    arrival, tokens = chunk_arrays.arrivals(ch, df["start"].to_numpy(), np.array([2, 0]))
    assert arrival == pytest.approx([30.25, 30.5, 30.75, 11.0, 12.0])
    assert tokens.tolist() == [1, 2, 3, 1, 1]


def test_the_gaps_after_each_rows_first_chunk() -> None:
    df = _frame(["7 1 2", "", "9", "5 3 4 6"], ["1 1 2", "", "4", "2 2 1 1"], [4, 0, 4, 6],
                [0.0] * 4)
    ch = chunk_arrays.build(df)
    gaps, tokens = ch.after_first(np.array([0, 1, 2, 3]))
    assert gaps.tolist() == [1, 2, 3, 4, 6] and tokens.tolist() == [1, 2, 2, 1, 1]
    gaps, tokens = ch.after_first(np.array([3]))
    assert gaps.tolist() == [3, 4, 6] and tokens.tolist() == [2, 1, 1]
    assert ch.after_first(np.array([1, 2]))[0].size == 0


def test_row_sums_of_small_integer_types_do_not_overflow() -> None:
    df = _frame([" ".join(["99999999"] * 30)], [" ".join(["9"] * 30)], [270], [0.0])
    df = pd.concat([df, _frame([" ".join(["1"] * 300)], [" ".join(["9"] * 300)], [2700], [0.0])])
    ch = chunk_arrays.build(df.reset_index(drop=True))
    assert ch.gap_us.dtype == np.int32 and ch.tokens.dtype == np.uint8
    assert ch.last_arrival.tolist() == [2_999_999_970 / 1e6, 300 / 1e6]  # beyond int32
    assert ch.row_tokens.tolist() == [270, 2700]
