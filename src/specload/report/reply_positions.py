"""Speedup along a reply: TPOT by output position, per arm and rung, and its ratio.

A reply's context grows while it decodes: a long (reasoning) reply may start where
speculation loses and end where it pays, or the other way round. Each chunk after a
request's first carries its tokens at an output position (the tokens streamed before
it) and took its gap since the chunk before; per rung, the requests that started in
the window and succeeded are pooled per position bucket (`EDGES`: tokens 0-512,
512-2k, 2k-8k, 8k and more), and a bucket's TPOT is its chunks' time over their
tokens. A pair's speedup in a bucket is spec-off's TPOT there over spec-on's, rung by
rung, the mean over the repeats of each arm: where along a reply speculation stops
paying. Shown only where some reply reaches past the first bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.chunk_arrays import Chunks
from specload.report.context_map import tokens_words
from specload.report.crossover import PairResult

EDGES = (0, 512, 2048, 8192)  # output tokens where each bucket begins
COLUMN = "tpot_by_position"


def bucket_names() -> list[str]:
    """`0-512`, `512-2k`, `2k-8k`, `8k+`."""
    ends = [*EDGES[1:], None]
    return [f"{tokens_words(a) if a else 0}-{tokens_words(b)}" if b else f"{tokens_words(a)}+"
            for a, b in zip(EDGES, ends, strict=True)]


def tpot_by_position(ch: Chunks, rows: np.ndarray) -> dict[str, dict[str, float]]:
    """Per bucket reached: TPOT in ms, tokens and chunks, over `rows` (a boolean mask of
    the requests to pool); empty when no reply reaches past the first bucket."""
    if not rows.any() or ch.row_tokens[rows].max() <= EDGES[1]:
        return {}
    mine = ch.subset(rows)
    counts, starts, total = mine.counts, mine.first_index, int(mine.counts.sum())
    tokens, gaps = mine.tokens.astype(float), mine.gap_us.astype(float)
    before = np.cumsum(tokens) - tokens  # tokens streamed before each chunk, run-wide
    position = before - np.repeat(before[starts], counts)
    later = np.ones(total, dtype=bool)
    later[starts[counts > 0]] = False  # a reply's first chunk: its TTFT, not its pace
    bucket = np.searchsorted(EDGES, position, side="right") - 1
    out = {}
    for i, name in enumerate(bucket_names()):
        mine = later & (bucket == i)
        n = float(tokens[mine].sum())
        if n > 0:
            out[name] = {"tpot_ms": float(gaps[mine].sum()) / 1e3 / n, "tokens": n,
                         "chunks": float(np.count_nonzero(mine))}
    return out


@dataclass(slots=True)
class PositionPair:
    """One pair's TPOT per output-position bucket and rung, and the speedup."""

    on: str
    off: str
    # concurrency, bucket, tpot_on_ms, tpot_off_ms, speedup, tokens_on; by C, then position
    rows: pd.DataFrame

    def turns(self) -> dict[float, tuple[str, bool]]:
        """Per rung where it changes along the reply: the first bucket on the other side
        of 1, and whether speculation pays from there (True) or stops paying (False)."""
        out: dict[float, tuple[str, bool]] = {}
        for c, part in self.rows.groupby("concurrency", sort=True):
            pays = list(part["speedup"] > 1)
            turn = next(((b, ok) for b, ok, prev in zip(part["bucket"][1:], pays[1:], pays,
                                                          strict=False) if ok != prev), None)
            if turn is not None:
                out[float(c)] = turn
        return out

    def lines(self) -> list[str]:
        rungs = []
        for c, part in self.rows.groupby("concurrency", sort=True):
            rungs.append(f"C={c:g} " + ", ".join(
                f"{b} {s:.2f}x" for b, s in zip(part["bucket"], part["speedup"], strict=True)))
        out = [f"{self.on} vs {self.off} along the reply (TPOT off / on by output tokens): "
               + "; ".join(rungs)]
        turns = self.turns()
        if turns:
            out.append("  along the reply, speculation " + ", ".join(
                f"{'starts paying' if pays else 'stops paying'} at C = {c:g} from token "
                f"{b.split('-')[0].rstrip('+')}" for c, (b, pays) in turns.items()))
        return out

    def as_dict(self) -> dict[str, object]:
        return {"spec_on": self.on, "spec_off": self.off,
                "rungs": self.rows.replace({np.nan: None}).to_dict(orient="records")}


def _per_rep(per_rep: pd.DataFrame, arm: str) -> pd.DataFrame:
    rows = [{"rep": r.rep, "concurrency": r.concurrency, "bucket": name, **figures}
            for r in per_rep[per_rep["arm"] == arm].itertuples()
            if isinstance(getattr(r, COLUMN), dict)
            for name, figures in getattr(r, COLUMN).items()]
    return pd.DataFrame(rows, columns=["rep", "concurrency", "bucket", "tpot_ms", "tokens",
                                       "chunks"])


def analyse(pairs: Sequence[PairResult], per_rep: pd.DataFrame) -> list[PositionPair]:
    """Every pair whose replies reach past the first bucket, rung by rung."""
    if COLUMN not in per_rep:
        return []
    found = []
    for pair in pairs:
        on, off = _per_rep(per_rep, pair.on.name), _per_rep(per_rep, pair.off.name)
        if on.empty or off.empty:
            continue
        means = [part.groupby(["concurrency", "bucket"])[["tpot_ms", "tokens"]].mean()
                 for part in (on, off)]
        both = means[0].merge(means[1], left_index=True, right_index=True,
                              suffixes=("_on", "_off")).reset_index()
        if both["bucket"].nunique() < 2:
            continue
        rows = pd.DataFrame({
            "concurrency": both["concurrency"], "bucket": both["bucket"],
            "tpot_on_ms": both["tpot_ms_on"], "tpot_off_ms": both["tpot_ms_off"],
            "speedup": both["tpot_ms_off"] / both["tpot_ms_on"],
            "tokens_on": both["tokens_on"]})
        order = rows["bucket"].map({b: i for i, b in enumerate(bucket_names())})
        rows = rows.assign(_order=order).sort_values(["concurrency", "_order"]).drop(
            columns="_order").reset_index(drop=True)
        found.append(PositionPair(pair.on.name, pair.off.name, rows))
    return found
