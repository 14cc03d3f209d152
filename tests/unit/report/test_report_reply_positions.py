"""Speedup along the reply: TPOT by output position, pooled per bucket, and its ratio."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specload.report import figures, reply_positions
from specload.report.chunk_arrays import Chunks
from specload.report.crossover import analyse_pair
from specload.report.run_files import ArmSource


def _chunks(rows: list[tuple[list[int], list[float]]]) -> Chunks:
    """Chunks of rows given as (tokens per chunk, gap in ms before each chunk)."""
    counts = np.array([len(t) for t, _ in rows])
    return Chunks(gap_us=np.concatenate([np.array(g) * 1e3 for _, g in rows]).astype(np.int64),
                  tokens=np.concatenate([np.array(t) for t, _ in rows]),
                  counts=counts, first_index=np.cumsum(counts) - counts,
                  row_tokens=np.array([float(sum(t)) for t, _ in rows]),
                  first_arrival=np.zeros(len(rows)), last_arrival=np.ones(len(rows)))


def test_each_chunk_after_the_first_counts_at_its_output_position() -> None:
    ch = _chunks([([1, 300, 300, 300], [100.0, 30.0, 60.0, 90.0]),  # reaches 901 tokens
                  ([1, 9], [50.0, 9.0]),  # short: its second chunk at position 1
                  ([5, 5], [1.0, 1.0])])  # not picked
    got = reply_positions.tpot_by_position(ch, np.array([True, True, False]))
    assert list(got) == ["0-512", "512-2k"]
    assert got["0-512"]["tpot_ms"] == pytest.approx((30 + 60 + 9) / 609)  # the TTFTs left out
    assert got["512-2k"] == {"tpot_ms": pytest.approx(90 / 300), "tokens": 300.0, "chunks": 1.0}
    assert reply_positions.tpot_by_position(ch, np.array([False, True, False])) == {}


def _per_rep() -> tuple[list[ArmSource], pd.DataFrame]:
    def rows(arm: str, tpot: dict[int, dict[str, float]]) -> list[dict[str, object]]:
        return [{"arm": arm, "rep": 1, "concurrency": c, "output_tok_s": 100.0,
                 reply_positions.COLUMN: {b: {"tpot_ms": ms, "tokens": 1000.0, "chunks": 9.0}
                                          for b, ms in by.items()}} for c, by in tpot.items()]
    on = rows("on", {4: {"0-512": 10.0, "512-2k": 12.0, "2k-8k": 20.0},
                     16: {"0-512": 20.0, "512-2k": 26.0, "2k-8k": 40.0},
                     64: {"0-512": 30.0, "512-2k": 25.0}})
    off = rows("off", {4: {"0-512": 15.0, "512-2k": 16.0, "2k-8k": 18.0},
                       16: {"0-512": 22.0, "512-2k": 24.0, "2k-8k": 30.0},
                       64: {"0-512": 27.0, "512-2k": 30.0}})
    return [ArmSource("on", "spec_on"), ArmSource("off", "spec_off")], pd.DataFrame(on + off)


def test_the_speedup_per_bucket_says_where_along_the_reply_it_stops_paying() -> None:
    arms, per_rep = _per_rep()
    summary = per_rep.drop(columns=["rep", reply_positions.COLUMN])
    pair = analyse_pair(arms[0], arms[1], summary, per_rep)
    (found,) = reply_positions.analyse([pair], per_rep)
    at4 = found.rows[found.rows["concurrency"] == 4]
    assert list(at4["bucket"]) == ["0-512", "512-2k", "2k-8k"]
    assert list(at4["speedup"]) == pytest.approx([1.5, 16 / 12, 0.9])
    assert found.turns() == {4.0: ("2k-8k", False), 16.0: ("512-2k", False),
                             64.0: ("512-2k", True)}
    lines = found.lines()
    assert lines[0].startswith("on vs off along the reply (TPOT off / on by output tokens): "
                               "C=4 0-512 1.50x, 512-2k 1.33x, 2k-8k 0.90x; C=16 ")
    assert lines[1] == ("  along the reply, speculation stops paying at C = 4 from token 2k, "
                        "stops paying at C = 16 from token 512, starts paying at C = 64 "
                        "from token 512")
    fig = figures.position_speedup([found])
    assert [t["name"] for t in fig.data] == ["output tokens 0-512", "output tokens 512-2k",
                                             "output tokens 2k-8k"]
