"""Client-side metrics of one repeat per rung, from the per-request records.

Follows DESIGN.md "Metric definitions (per ladder step and arm)": output tok/s counts
tokens by chunk arrival time inside the measure window (interrupted and failed requests
included); latency percentiles use successful requests that started in the window;
requests/s counts successful requests that finished in it; failures are failed requests
that started in it; achieved concurrency is the time-average of in-flight requests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from specload.report import chunks
from specload.report.chunks import Chunks
from specload.report.windows import Window

PERCENTILES = (50, 90, 99)


def _pcts(values: np.ndarray, name: str) -> dict[str, float]:
    """Percentiles of the finite values; reorders `values` in place (callers pass copies)."""
    finite = np.isfinite(values)
    if not finite.all():
        values = values[finite]
    if values.size == 0:
        return {f"{name}_p{p}_ms": float("nan") for p in PERCENTILES}
    got = np.percentile(values, PERCENTILES, overwrite_input=True)
    return {f"{name}_p{p}_ms": float(v) for p, v in zip(PERCENTILES, got, strict=True)}


def _itl_pcts(gap_us: np.ndarray, tokens: np.ndarray) -> dict[str, float]:
    """Per-chunk and per-token inter-token latency percentiles of the given gaps."""
    chunk_ms = gap_us / 1e3
    if (tokens == 1).all():  # one token per chunk (no speculation): the same numbers
        got = _pcts(chunk_ms, "itl_chunk")
        return got | {k.replace("itl_chunk", "itl_token"): v for k, v in got.items()}
    with np.errstate(divide="ignore", invalid="ignore"):  # 0-token chunks drop out
        token_ms = chunk_ms / tokens
    return _pcts(chunk_ms, "itl_chunk") | _pcts(token_ms, "itl_token")


def _bounds(windows: Sequence[Window]) -> np.ndarray:
    """[start0, end0, start1, end1, ...] of windows sorted by start, not overlapping."""
    return np.array([t for w in windows for t in (w.start, w.end)], dtype=float)


def region(times: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """Odd 2i+1 inside window i ([start, end)), even between or outside windows."""
    return np.searchsorted(_bounds(windows), times, side="right")


def row_window(times: np.ndarray, windows: Sequence[Window]) -> np.ndarray:
    """Index of the window each time falls in ([start, end)), -1 outside every window."""
    r = region(times, windows)
    return np.where(r % 2 == 1, (r - 1) // 2, -1)


def window_tokens(
    ch: Chunks, start: np.ndarray, windows: Sequence[Window]
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and chunks arriving inside each window, by chunk arrival time.

    A request whose first and last chunk fall in the same region gives all its chunks
    to that region; only requests crossing a window edge are split chunk by chunk.
    """
    n = len(windows)
    r_first = region(ch.first_arrival, windows)
    r_last = region(ch.last_arrival, windows)
    whole = (r_first == r_last) & (r_first % 2 == 1) & (ch.counts > 0)
    w = (r_first[whole] - 1) // 2
    tokens = np.bincount(w, weights=ch.row_tokens[whole], minlength=n).astype(float)
    chunk_count = np.bincount(w, weights=ch.counts[whole], minlength=n).astype(float)
    crossing = np.flatnonzero((r_first != r_last) & (ch.counts > 0))
    arrival, toks = chunks.arrivals(ch, start, crossing)
    cw = row_window(arrival, windows)
    inside = cw >= 0
    tokens += np.bincount(cw[inside], weights=toks[inside], minlength=n)
    chunk_count += np.bincount(cw[inside], minlength=n)
    return tokens, chunk_count


def _tpot_ms(req: pd.DataFrame) -> np.ndarray:
    """The recorded TPOT, or (E2E - TTFT) / (tokens - 1) where it was not recorded."""
    tpot = req["tpot_ms"].to_numpy(dtype=float)
    out = req["output_tokens"].to_numpy(dtype=float)
    derived = (req["e2e_ms"].to_numpy(dtype=float) - req["ttft_ms"].to_numpy(dtype=float)) / (
        np.where(out > 1, out - 1, np.nan)
    )
    return np.where(np.isfinite(tpot), tpot, derived)


def rung_metrics(req: pd.DataFrame, ch: Chunks, windows: Sequence[Window]) -> pd.DataFrame:
    """One row per window with every client-side metric of the summary."""
    start = req["start"].to_numpy(dtype=float)
    end = req["end"].to_numpy(dtype=float)
    error_kind = req["error_kind"].to_numpy(dtype=object)
    interrupted = (req["interrupted"].to_numpy() != 0) | (error_kind == "interrupted")
    ok = (error_kind == "") & ~interrupted
    failed = (error_kind != "") & ~interrupted
    started_in = row_window(start, windows)
    ended_in = row_window(end, windows)
    tokens_by_w, chunks_by_w = window_tokens(ch, start, windows)
    ttft = req["ttft_ms"].to_numpy(dtype=float)
    e2e = req["e2e_ms"].to_numpy(dtype=float)
    tpot = _tpot_ms(req)
    out_tokens = req["output_tokens"].to_numpy(dtype=float)
    # Window of the request each gap belongs to; -1 for first chunks and failed requests.
    gap_window = ch.repeat(np.where(ok, started_in, -1).astype(np.int16))
    gap_window[ch.first_index[ch.counts > 0]] = -1
    rows = []
    for i, w in enumerate(windows):
        sel = ok & (started_in == i)
        gaps_of_w = gap_window == i
        itl = _itl_pcts(ch.gap_us[gaps_of_w], ch.tokens[gaps_of_w])
        fails = pd.Series(error_kind[failed & (started_in == i)]).value_counts()
        overlap = np.clip(np.minimum(end, w.end) - np.maximum(start, w.start), 0, None)
        tpot_p = _pcts(tpot[sel], "tpot")
        row: dict[str, object] = {
            "rung": w.rung,
            "concurrency": w.users,
            "window_start": w.start,
            "window_s": w.length,
            "output_tok_s": tokens_by_w[i] / w.length,
            "output_tok_s_per_user": 1000.0 / tpot_p["tpot_p50_ms"],
            "requests_per_s": float(np.count_nonzero(ok & (ended_in == i))) / w.length,
            "requests": int(np.count_nonzero(sel)),
            "requests_started": int(np.count_nonzero(started_in == i)),
            "failures": int(fails.sum()),
            "failures_by_kind": {str(k): int(v) for k, v in fails.items()},
            "interrupted": int(np.count_nonzero(interrupted & (started_in == i))),
            "tokens_per_chunk": tokens_by_w[i] / chunks_by_w[i] if chunks_by_w[i] else np.nan,
            "achieved_concurrency": float(overlap.sum()) / w.length,
            "output_tokens_mean": float(out_tokens[sel].mean()) if sel.any() else np.nan,
            "finish_length_share": (
                float(np.mean(req["finish_reason"].to_numpy(dtype=object)[sel] == "length"))
                if sel.any() else np.nan
            ),
            "chunk_counted_share": (
                float(np.mean(req["tokens_source"].to_numpy(dtype=object)[sel] == "chunks"))
                if sel.any() else np.nan
            ),
        }
        row.update(_pcts(ttft[sel], "ttft"))
        row.update(tpot_p)
        row.update(itl)
        row.update(_pcts(e2e[sel], "e2e"))
        rows.append(row)
    return pd.DataFrame(rows)
