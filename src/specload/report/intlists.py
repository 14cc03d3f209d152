"""Parse a column of space-separated integer lists into one flat array and per-row counts.

`chunk_gaps_us` and `chunk_tokens` (records.encode_chunks) hold one such list per
request, millions of integers per file. The fast path finds the values with numpy and
lets Arrow cast them from text in C++, the column's Arrow chunks in parallel threads;
it applies when every row is plain digits separated by single spaces. Otherwise each
row is parsed the way records.decode_chunks does, and a row that is not a list of
integers in int64 range counts as empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Values whose strings (leading zero included) are at most this long fit the type; longer
# ones are read as int64. Small types keep tens of millions of values cheap to hold.
_SMALLEST = {n: pa.uint8() for n in range(3)} | {n: pa.int32() for n in range(3, 10)}
# A column of texts: a pandas Series, an Arrow array or any iterable of str (or None).
Texts: TypeAlias = Iterable[str | None] | pa.Array | pa.ChunkedArray


def as_strings(texts: Texts) -> pa.ChunkedArray:
    """The column as an Arrow string array (no copy when it already is one); missing
    values (None, NaN) become null."""
    if isinstance(texts, pa.Array | pa.ChunkedArray):
        arr = texts
    elif hasattr(texts, "__arrow_c_stream__"):  # a pandas (>= 3) Series
        arr = pa.chunked_array(texts)
    else:
        arr = pa.array(texts if hasattr(texts, "__len__") else list(texts), type=pa.string(),
                       from_pandas=True)
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr])
    if arr.null_count == len(arr):
        return pa.chunked_array([pa.nulls(len(arr), pa.string())])
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"expected a column of strings, got {arr.type}")
    return arr


def _fast_chunk(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Parse one Arrow chunk whose rows are integers separated by single spaces.

    Every value becomes one string over the same bytes, with the space before it turned
    into a leading zero ("12 345" -> "12", "0345"), and Arrow casts them all at once to
    the smallest type that holds that many digits. None when a row has anything else
    (a sign, a double or edge space, other bytes).
    """
    if chunk.null_count:
        chunk = pc.fill_null(chunk, "")
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[
        chunk.offset: chunk.offset + len(chunk) + 1].astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[first:last].copy()
    row_starts, row_ends = offsets[:-1] - first, offsets[1:] - first
    filled = row_ends > row_starts
    space = data == 32
    if not np.array_equal(space, (data - 48) > 9):  # uint8: bytes below "0" wrap around
        return None
    if (space[1:] & space[:-1]).any() or space[row_starts[filled]].any() or (
            space[row_ends[filled] - 1].any()):
        return None
    data |= 0x10  # " " (0x20) becomes "0" (0x30); digits already have that bit
    space[row_starts[filled]] = True  # now: where each value's string starts
    value_starts = np.flatnonzero(space)
    counts = np.searchsorted(value_starts, row_ends) - np.searchsorted(value_starts, row_starts)
    value_offsets = np.append(value_starts, data.size)
    strings = pa.Array.from_buffers(pa.large_string(), value_starts.size, [
        None, pa.py_buffer(value_offsets), pa.py_buffer(data)])
    longest = int(np.diff(value_offsets).max(initial=0))
    try:
        values = pc.cast(strings, _SMALLEST.get(longest, pa.int64()))
    except pa.ArrowInvalid:  # beyond int64
        return None
    return values.to_numpy(), counts


def _fast(arr: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
    workers = max(1, min(arr.num_chunks, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:  # numpy and Arrow release the GIL
        parts = list(pool.map(_fast_chunk, arr.chunks))
    done = [p for p in parts if p is not None]
    if not done or len(done) < len(parts):
        return None
    return np.concatenate([p[0] for p in done]), np.concatenate([p[1] for p in done])


def _row(text: str | None) -> list[int]:
    """One row like records.decode_chunks; [] when it is not a list of int64 integers."""
    try:
        values = [int(x) for x in (text or "").split()]
    except ValueError:
        return []
    return values if all(INT64_MIN <= v <= INT64_MAX for v in values) else []


def _slow(arr: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    rows = [_row(text) for text in arr.to_pylist()]
    counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    values = np.fromiter((v for r in rows for v in r), dtype=np.int64, count=int(counts.sum()))
    return values, counts


def parse(texts: Texts) -> tuple[np.ndarray, np.ndarray]:
    """All integers of every row flattened, and how many each row had (int64).

    Values are uint8 or int32 when every one is short enough to fit, otherwise int64.
    """
    arr = as_strings(texts)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return _fast(arr) or _slow(arr)
