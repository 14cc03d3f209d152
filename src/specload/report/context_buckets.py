"""Speedup and C* per context bucket of a run whose prompts have mixed lengths.

Each rung keeps its requests per prompt-length bin (`client_metrics.length_bin`: powers
of two, `by_prompt_length`), with the figures a prompt category has. Here the bins are
merged into buckets whose edges are the traffic's terciles (of every arm's requests,
rounded to a bin edge) or the scenario's `context_buckets` (each rounded to the nearest
bin edge), and each bucket is analysed as `categories` analyses a category: the speedup
its requests see (their pace in flight on / off), its noise band, C* and its interval.
Merged, a bucket's tokens, time in flight and requests add up; its pace is tokens over
time in flight, its pace's relative spread the bins' combined by their weights, and its
TPOT p50 and acceptance the bins' weighted by their requests. The buckets share their
batches: a bucket's C* is where its requests stop gaining beside the others', not the C*
of that length served alone (a `contexts:` run measures that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from specload.report import categories
from specload.report.categories import CategoryPair
from specload.report.client_metrics import LENGTH_BINS
from specload.report.context_map import tokens_words
from specload.report.crossover import PairResult

COLUMN = "by_prompt_length"
CAVEAT = ("  the buckets share their batches: a bucket's C* is where its requests stop "
          "gaining beside the others', not that length's alone (`contexts:` measures it)")


def _bin_low(name: str) -> int:
    return int(name.split("-")[0].rstrip("+"))


def _snap(edge: float) -> int:
    """The bin edge nearest `edge` in log tokens (above the first)."""
    inner = np.asarray(LENGTH_BINS[1:], dtype=float)
    return int(inner[np.argmin(np.abs(np.log(inner) - math.log(max(edge, 1.0))))])


def edges(per_rep: pd.DataFrame, given: Sequence[float] | None = None) -> list[int]:
    """The buckets' inner edges: `given` snapped to bin edges, else the terciles of the
    requests' bins over every arm and rung (where they fall inside the traffic)."""
    if given:
        return sorted({_snap(x) for x in given})
    counts: dict[int, float] = {}
    for cell in per_rep.get(COLUMN, pd.Series(dtype=object)):
        for name, figures in (cell or {}).items():
            counts[_bin_low(name)] = counts.get(_bin_low(name), 0.0) + figures["requests"]
    lows = sorted(counts)
    total = sum(counts.values())
    if len(lows) < 2 or not total:
        return []
    share = np.cumsum([counts[x] for x in lows]) / total
    found = set()
    for q in (1 / 3, 2 / 3):
        at = int(np.searchsorted(share, q))  # the bin holding the quantile
        upper = lows[at + 1] if at + 1 < len(lows) else None
        if upper is not None:
            found.add(upper)
    return sorted(found)


def bucket_name(low: int, high: int | None) -> str:
    """`under 1k`, `1k-4k`, `4k and more`."""
    if not low:
        return f"under {tokens_words(high or 0)}"
    return f"{tokens_words(low)}-{tokens_words(high)}" if high else \
        f"{tokens_words(low)} and more"


def _merge(cell: dict[str, dict[str, float]], inner: list[int]) -> dict[str, dict[str, float]]:
    """One rung's bins merged into buckets at `inner` edges."""
    bounds = [0, *inner]
    names = [bucket_name(lo, hi) for lo, hi in zip(bounds, [*inner, None], strict=True)]
    parts: dict[str, list[dict[str, float]]] = {}
    for name, figures in cell.items():
        at = int(np.searchsorted(bounds, _bin_low(name), side="right")) - 1
        parts.setdefault(names[at], []).append(figures)
    out = {}
    for name, bins in parts.items():
        tokens = sum(b["tokens"] for b in bins)
        flight = sum(b["in_flight_s"] for b in bins)
        requests = sum(b["requests"] for b in bins)
        pace = tokens / flight if flight > 0 else math.nan
        spread = math.sqrt(sum((b["in_flight_s"] * b["tok_s_per_request"] * b["pace_rel_se"])
                               ** 2 for b in bins if math.isfinite(b["pace_rel_se"])
                               and math.isfinite(b["tok_s_per_request"])))
        out[name] = {"tokens": tokens, "in_flight_s": flight, "tok_s_per_request": pace,
                     "pace_rel_se": spread / flight / pace if flight > 0 and pace else math.nan,
                     "requests": requests,
                     "tpot_p50_ms": _weighted(bins, "tpot_p50_ms"),
                     "req_accept_len": _weighted(bins, "req_accept_len")}
    return out


def _weighted(bins: list[dict[str, float]], key: str) -> float:
    known = [(b["requests"], b[key]) for b in bins if math.isfinite(b[key]) and b["requests"]]
    weight = sum(w for w, _ in known)
    return sum(w * v for w, v in known) / weight if weight else math.nan


def analyse(pairs: Sequence[PairResult], per_rep: pd.DataFrame,
            given: Sequence[float] | None = None) -> list[CategoryPair]:
    """Every pair's figures per context bucket, where the traffic spans two or more (a run
    of several `contexts` has its own map instead)."""
    if COLUMN not in per_rep or any(p.on.context is not None for p in pairs):
        return []
    inner = edges(per_rep, given)
    if not inner:
        return []
    merged = per_rep.assign(by_category=[_merge(cell, inner) if isinstance(cell, dict) else {}
                                         for cell in per_rep[COLUMN]])
    found = (categories.analyse_pair(p, merged, what="context bucket") for p in pairs)
    return [c for c in found if c is not None]
