"""Per-chunk arrays for a whole requests file, parsed in one vectorised pass per column.

`chunk_gaps_us` and `chunk_tokens` hold space-separated integers per request
(records.encode_chunks); `intlists` parses a whole column at once into one flat array
and per-row counts. When a request has no usable per-chunk token counts its output
tokens are spread evenly over its chunks. Absolute chunk arrival times are only needed
for requests whose stream crosses a window edge, so `arrivals` computes them for a
chosen subset of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report import intlists


@dataclass(slots=True)
class Chunks:
    """Flat per-chunk arrays in row order then chunk order, and per-row summaries."""

    gap_us: np.ndarray  # integer gap from the previous chunk (from start for the first)
    tokens: np.ndarray  # tokens carried by each chunk (integers, or float when spread evenly)
    counts: np.ndarray  # int64 chunks per row
    first_index: np.ndarray  # int64 flat index of each row's first chunk (0 when it has none)
    row_tokens: np.ndarray  # float64 tokens per row (sum over its chunks)
    first_arrival: np.ndarray  # float64 epoch s of each row's first chunk (start if none)
    last_arrival: np.ndarray  # float64 epoch s of each row's last chunk (start if none)

    def repeat(self, per_row: np.ndarray) -> np.ndarray:
        """A per-row array expanded to one value per chunk."""
        return np.repeat(per_row, self.counts)

    def after_first(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gaps and tokens of every chunk after the first of the given rows (row indices,
        in order): the inter-chunk gaps, gathered in one pass over those chunks only."""
        counts = np.maximum(self.counts[rows] - 1, 0)
        flat = _flat_index(self.first_index[rows] + 1, counts)
        return self.gap_us[flat], self.tokens[flat]

    def subset(self, rows: np.ndarray) -> Chunks:
        """The arrays of the rows selected by a boolean mask, in row order."""
        counts = self.counts[rows]
        flat = _flat_index(self.first_index[rows], counts)
        return Chunks(gap_us=self.gap_us[flat], tokens=self.tokens[flat], counts=counts,
                      first_index=np.cumsum(counts) - counts,
                      row_tokens=self.row_tokens[rows],
                      first_arrival=self.first_arrival[rows],
                      last_arrival=self.last_arrival[rows])


def _flat_index(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Flat chunk indices of rows starting at `first` with `counts` chunks each."""
    total = int(counts.sum())
    base = np.cumsum(counts) - counts
    return np.repeat(first - base, counts) + np.arange(total)


def _row_sums(values: np.ndarray, counts: np.ndarray, first_index: np.ndarray) -> np.ndarray:
    sums = np.zeros(counts.size, dtype=float)
    nonempty = counts > 0
    if values.size:
        # Integers are summed exactly (much faster than casting each one to float).
        dtype = np.int64 if values.dtype.kind in "iu" else float
        sums[nonempty] = np.add.reduceat(values, first_index[nonempty], dtype=dtype)
    return sums


def build(requests: pd.DataFrame) -> Chunks:
    """Per-chunk arrays for every row of a requests frame (see run_files.read_requests)."""
    gaps, counts = intlists.parse(requests["chunk_gaps_us"])
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
    given, given_counts = intlists.parse(requests["chunk_tokens"])
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
    if int(counts.sum()) == 0:
        return np.zeros(0), np.zeros(0)
    base = np.cumsum(counts) - counts
    index = _flat_index(ch.first_index[rows], counts)
    gaps = ch.gap_us[index]
    cum = np.cumsum(gaps)
    offset_us = cum - np.repeat((cum - gaps)[base[counts > 0]], counts[counts > 0])
    return np.repeat(start[rows], counts) + offset_us / 1e6, ch.tokens[index]
