"""Per-chunk arrays for a whole requests file, parsed in one vectorised pass per column.

`chunk_gaps_us` and `chunk_tokens` hold space-separated integers per request
(records.encode_chunks). A whole column is joined into one string and parsed by numpy
at once; rows are told apart by their value counts. When a request has no usable
per-chunk token counts its output tokens are spread evenly over its chunks. Absolute
chunk arrival times are only needed for requests whose stream crosses a window edge,
so `arrivals` computes them for a chosen subset of rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(slots=True)
class Chunks:
    """Flat per-chunk arrays in row order then chunk order, and per-row summaries."""

    gap_us: np.ndarray  # int64 gap from the previous chunk (from start for the first)
    tokens: np.ndarray  # tokens carried by each chunk (integers, or float when spread evenly)
    counts: np.ndarray  # int64 chunks per row
    first_index: np.ndarray  # int64 flat index of each row's first chunk (0 when it has none)
    row_tokens: np.ndarray  # float64 tokens per row (sum over its chunks)
    first_arrival: np.ndarray  # float64 epoch s of each row's first chunk (start if none)
    last_arrival: np.ndarray  # float64 epoch s of each row's last chunk (start if none)

    def repeat(self, per_row: np.ndarray) -> np.ndarray:
        """A per-row array expanded to one value per chunk."""
        return np.repeat(per_row, self.counts)


def _slow_parse(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Row-by-row parse; a row that is not a list of integers counts as empty."""
    values: list[int] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        try:
            parsed = [int(x) for x in text.split()]
        except ValueError:
            continue
        values.extend(parsed)
        counts[i] = len(parsed)
    return np.asarray(values, dtype=np.int64), counts


def parse_int_lists(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All integers of every row, flattened (int64, or uint8 when all are single digits),
    and how many each row had."""
    counts = np.fromiter(
        (t.count(" ") + 1 if t else 0 for t in texts), dtype=np.int64, count=len(texts)
    )
    joined = " ".join(t for t in texts if t)
    if not joined:
        return np.zeros(0, dtype=np.int64), counts
    total = int(counts.sum())
    if len(joined) == 2 * total - 1:
        # Single-digit values (typical per-chunk token counts): read every other byte.
        raw = np.frombuffer(joined.encode("ascii", "replace"), dtype=np.uint8)
        digits, spaces = raw[0::2], raw[1::2]
        if ((digits >= 48) & (digits <= 57)).all() and (spaces == 32).all():
            return digits - 48, counts  # uint8: no 8-byte copy of 20M values
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns, rather than fails, on bad text
            values = np.fromstring(joined, dtype=np.int64, sep=" ")
    except (ValueError, DeprecationWarning):
        return _slow_parse(texts)
    if values.size != total:
        return _slow_parse(texts)
    return values, counts


def _row_sums(values: np.ndarray, counts: np.ndarray, first_index: np.ndarray) -> np.ndarray:
    sums = np.zeros(counts.size, dtype=float)
    nonempty = counts > 0
    if values.size:
        sums[nonempty] = np.add.reduceat(values, first_index[nonempty], dtype=float)
    return sums


def build(requests: pd.DataFrame) -> Chunks:
    """Per-chunk arrays for every row of a requests frame (see load.read_requests)."""
    gaps, counts = parse_int_lists(requests["chunk_gaps_us"].tolist())
    first_index = np.cumsum(counts) - counts
    start = requests["start"].to_numpy(dtype=float)
    first_gap = np.zeros(counts.size)
    first_gap[counts > 0] = gaps[first_index[counts > 0]]
    tokens = _chunk_tokens(requests, counts)
    return Chunks(
        gap_us=gaps,
        tokens=tokens,
        counts=counts,
        first_index=first_index,
        row_tokens=_row_sums(tokens, counts, first_index),
        first_arrival=start + first_gap / 1e6,
        last_arrival=start + _row_sums(gaps, counts, first_index) / 1e6,
    )


def _chunk_tokens(requests: pd.DataFrame, counts: np.ndarray) -> np.ndarray:
    given, given_counts = parse_int_lists(requests["chunk_tokens"].tolist())
    if np.array_equal(given_counts, counts):
        return given
    out_tokens = requests["output_tokens"].to_numpy(dtype=float)
    tokens = np.repeat(out_tokens / np.maximum(counts, 1), counts)
    usable = (given_counts == counts) & (counts > 0)
    if usable.any():
        tokens[np.repeat(usable, counts)] = given[np.repeat(usable, given_counts)]
    return tokens


def arrivals(ch: Chunks, start: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrival time (epoch s) and tokens of every chunk of the given rows."""
    counts = ch.counts[rows]
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0), np.zeros(0)
    base = np.cumsum(counts) - counts
    index = np.repeat(ch.first_index[rows] - base, counts) + np.arange(total)
    gaps = ch.gap_us[index]
    cum = np.cumsum(gaps)
    offset_us = cum - np.repeat((cum - gaps)[base[counts > 0]], counts[counts > 0])
    return np.repeat(start[rows], counts) + offset_us / 1e6, ch.tokens[index]
