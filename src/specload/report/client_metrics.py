"""Client-side metrics of one repeat per rung, from the per-request records.

Follows docs/design.md "Metric definitions (per rung and arm)": output tok/s counts
tokens by chunk arrival time inside the measure window (interrupted and failed requests
included, tokens of requests cut before their usage came estimated from their rung's
pace); latency percentiles use the requests that started in the window (timeouts
included in TTFT, censored); requests/s counts successful requests that finished in
it; failures are failed requests that started in it; achieved concurrency is the
time-average of in-flight requests (the batch the server is offered: for chat
sessions, think time keeps it below the number of sessions). Sessions count the chat
sessions with a turn started in the window. Open-loop rungs also get their achieved
arrival rate (requests sent per second), the arrivals their plan put in the window
and how many of those were sent, the share that started late and why (`late_by`), and
TTFT and E2E measured from the scheduled time as well, so coordinated omission shows.
Where the engine told each request's own drafted and accepted tokens, the successful
requests that finished in the window give the rung's acceptance from the requests
themselves: accepted / drafted, and tokens per target step (a step emits one token and
the drafts it accepts: tokens / (tokens - accepted)), over the same requests an engine's
counters add up when they end, and the spread of that length over the requests (p10,
p50, p90). `measure` is the one entry point: the report and the live
views during a run both call it, so their numbers cannot differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from specload.report import chunk_arrays, reply_positions
from specload.report.chunk_arrays import Chunks
from specload.report.replies import ReplyColumns, by_prompt
from specload.report.windows import Window
from specload.runfiles import accept_by_step
from specload.runfiles.records import TIMEOUT_KINDS

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


# (row, window, tokens, chunks): one entry per request and window it has tokens in
Shares = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def token_shares(
    ch: Chunks, start: np.ndarray, windows: Sequence[Window]
) -> Shares:
    """Each request's tokens and chunks arriving inside each window, by chunk arrival
    time, as (row, window, tokens, chunks) arrays, one entry per request and window.

    A request whose first and last chunk fall in the same region is one entry; only
    requests crossing a window edge are split chunk by chunk.
    """
    r_first = region(ch.first_arrival, windows)
    r_last = region(ch.last_arrival, windows)
    whole = np.flatnonzero((r_first == r_last) & (r_first % 2 == 1) & (ch.counts > 0))
    crossing = np.flatnonzero((r_first != r_last) & (ch.counts > 0))
    arrival, toks = chunk_arrays.arrivals(ch, start, crossing)
    cw = row_window(arrival, windows)
    inside = cw >= 0
    rows = np.concatenate((whole, np.repeat(crossing, ch.counts[crossing])[inside]))
    win = np.concatenate(((r_first[whole] - 1) // 2, cw[inside]))
    tokens = np.concatenate((ch.row_tokens[whole], toks[inside])).astype(float)
    chunks = np.concatenate((ch.counts[whole], np.ones(int(inside.sum())))).astype(float)
    return rows, win, tokens, chunks


def window_totals(shares: Shares, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and chunks inside each of `n` windows, from their `token_shares`."""
    _, win, tokens, chunks = shares
    return (np.bincount(win, weights=tokens, minlength=n).astype(float),
            np.bincount(win, weights=chunks, minlength=n).astype(float))


def window_tokens(
    ch: Chunks, start: np.ndarray, windows: Sequence[Window]
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens and chunks arriving inside each window."""
    return window_totals(token_shares(ch, start, windows), len(windows))


def tok_s_se(tokens: np.ndarray, streaming_s: np.ndarray, length: float) -> float:
    """The standard error of a window's tok/s over the requests streaming in it.

    The window's length is set, and so, mostly, is how many requests the server runs
    at once (closed loop: the users; at its cap: its slots), so the noise is in their
    pace: tok/s = (tokens / streaming seconds) x streaming seconds / length, over the
    requests' `tokens` and seconds from their first token on (`streaming_s`), inside
    the window. Resampling those requests (the bootstrap) varies the pace; this is that
    bootstrap's spread in closed form, the ratio estimator's linearisation:
    sqrt(sum (tokens - pace x seconds)^2) / length. Queued requests take no part.
    """
    total = float(streaming_s.sum())
    if not total > 0 or not length > 0:
        return float("nan")
    pace = float(tokens.sum()) / total
    return float(np.sqrt(np.sum((tokens - pace * streaming_s) ** 2)) / length)


def _texts(req: pd.DataFrame, name: str) -> np.ndarray:
    """A text column as Python strings, "" where missing (or the file has no such column)."""
    if name not in req:
        return np.full(len(req), "", dtype=object)
    column = req[name].astype(object)
    return column.where(column.notna(), "").to_numpy(dtype=object)


def _tpot_ms(req: pd.DataFrame) -> np.ndarray:
    """The recorded TPOT, or (E2E - TTFT) / (tokens - 1) where it was not recorded."""
    tpot = req["tpot_ms"].to_numpy(dtype=float)
    out = req["output_tokens"].to_numpy(dtype=float)
    derived = (req["e2e_ms"].to_numpy(dtype=float) - req["ttft_ms"].to_numpy(dtype=float)) / (
        np.where(out > 1, out - 1, np.nan)
    )
    return np.where(np.isfinite(tpot), tpot, derived)


def stream_tpot(ch: Chunks, start: np.ndarray, w: Window) -> np.ndarray:
    """Each stream's decode pace inside one window, ms per token: for every request with
    at least two token chunks arriving in it, whenever it started, the time from the first
    to the last of those chunks over the tokens after the first. Where requests queue
    longer than the window, none that started in it finishes, but users' streams still
    show the pace of this load."""
    rows = np.flatnonzero((ch.counts > 1) & (ch.last_arrival >= w.start)
                          & (ch.first_arrival < w.end))
    arrival, toks = chunk_arrays.arrivals(ch, start, rows)
    owner = np.repeat(np.arange(rows.size), ch.counts[rows])
    keep = (arrival >= w.start) & (arrival < w.end) & (toks > 0)
    owner, arrival, toks = owner[keep], arrival[keep], toks[keep]
    if owner.size == 0:
        return np.zeros(0)
    first = np.r_[True, owner[1:] != owner[:-1]]  # chunks are in row, then time, order
    starts = np.flatnonzero(first)
    last = np.r_[starts[1:], owner.size] - 1
    after_first = np.add.reduceat(toks, starts) - toks[starts]
    span_ms = (arrival[last] - arrival[starts]) * 1e3
    ok = after_first > 0
    return span_ms[ok] / after_first[ok]


CENSORED = 1e18  # stands for "longer than the timeout" inside percentile arithmetic


def _censored_pcts(values: np.ndarray, waited: np.ndarray, name: str) -> dict[str, float]:
    """Percentiles where +inf means "no first token when it ended" (a timeout, or a user
    stopped while its request still queued): a percentile that falls among those is +inf,
    never a made-up number, and `<name>_pXX_lb_ms` says how long they had waited: the
    percentile with each censored value at its wait, a lower bound of the true one."""
    censored = np.isposinf(values)
    got = _pcts(np.where(censored, CENSORED, values), name)
    out = {k: (float("inf") if v >= CENSORED / 10 else v) for k, v in got.items()}
    bounds = _pcts(np.where(censored, waited, values), name)
    return out | {k.replace("_ms", "_lb_ms"): (v if out[k] == float("inf") else float("nan"))
                  for k, v in bounds.items()}


@dataclass(slots=True)
class _Rows:
    """Per-request arrays every window needs, computed once."""

    start: np.ndarray
    end: np.ndarray
    waited_ms: np.ndarray  # start to end: a lower bound of a censored TTFT
    started_in: np.ndarray
    ended_in: np.ndarray
    ok: np.ndarray
    failed: np.ndarray
    interrupted: np.ndarray
    error_kind: np.ndarray
    error: np.ndarray
    ttft: np.ndarray  # +inf: timed out, or stopped, before the first token
    e2e: np.ndarray
    tpot: np.ndarray
    per_request_tok_s: np.ndarray  # output tokens / E2E (TTFT included)
    tokens: np.ndarray
    prompt_tokens: np.ndarray
    finish: np.ndarray
    source: np.ndarray
    backoff_s: np.ndarray
    session_id: np.ndarray
    scheduled: np.ndarray  # NaN where no plan scheduled the request
    late_ms: np.ndarray
    late_by: np.ndarray
    reconnects: np.ndarray
    drafted: np.ndarray  # NaN where the engine did not say
    accepted: np.ndarray
    by_step: np.ndarray  # `accept_by_step` cells ("" where the engine did not list steps)
    category: np.ndarray
    replies: ReplyColumns  # what each request asked and the fingerprint of its reply

    @classmethod
    def of(cls, req: pd.DataFrame, windows: Sequence[Window]) -> _Rows:
        start = req["start"].to_numpy(dtype=float)
        end = req["end"].to_numpy(dtype=float)
        error_kind = req["error_kind"].to_numpy(dtype=object)
        interrupted = (req["interrupted"].to_numpy() != 0) | (error_kind == "interrupted")
        ttft = req["ttft_ms"].to_numpy(dtype=float)
        # stopped before its first token (no chunk at all)
        queued = interrupted & ~np.isfinite(ttft) & (req["num_chunks"].to_numpy() == 0)
        ttft = np.where(np.isin(error_kind, TIMEOUT_KINDS) | queued, np.inf, ttft)
        e2e = req["e2e_ms"].to_numpy(dtype=float)
        tokens = req["output_tokens"].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.where(e2e > 0, tokens / (e2e / 1e3), np.nan)
        return cls(
            start=start, end=end, waited_ms=(end - start) * 1e3,
            started_in=row_window(start, windows),
            ended_in=row_window(end, windows), ok=(error_kind == "") & ~interrupted,
            failed=(error_kind != "") & ~interrupted, interrupted=interrupted,
            error_kind=error_kind, error=req["error"].to_numpy(dtype=object), ttft=ttft,
            e2e=e2e, tpot=_tpot_ms(req), per_request_tok_s=rate, tokens=tokens,
            prompt_tokens=req["prompt_tokens"].to_numpy(dtype=float),
            finish=req["finish_reason"].to_numpy(dtype=object),
            source=req["tokens_source"].to_numpy(dtype=object),
            backoff_s=req["backoff_ms"].to_numpy(dtype=float) / 1e3,
            session_id=req["session_id"].to_numpy(dtype=object),
            scheduled=req["scheduled"].to_numpy(dtype=float),
            late_ms=req["late_ms"].to_numpy(dtype=float),
            late_by=req["late_by"].to_numpy(dtype=object),
            reconnects=req["reconnects"].to_numpy(),
            drafted=req["draft_tokens"].to_numpy(dtype=float),
            accepted=req["accepted_tokens"].to_numpy(dtype=float),
            by_step=_texts(req, "accept_by_step"),
            category=_texts(req, "category"), replies=ReplyColumns.of(req))


def _failure_columns(r: _Rows, in_w: np.ndarray) -> dict[str, object]:
    failed = r.failed & in_w
    kinds = pd.Series(r.error_kind[failed]).value_counts()
    reasons = pd.Series(r.error[failed]).value_counts()
    return {
        "failures": int(kinds.sum()),
        "failures_by_kind": {str(k): int(v) for k, v in kinds.items()},
        "top_failure": str(reasons.index[0]) if len(reasons) else "",
        "timeouts": int(np.count_nonzero(np.isin(r.error_kind, TIMEOUT_KINDS) & in_w)),
    }


LENGTH_PERCENTILES = (10, 50, 90)


def _lengths(values: np.ndarray, name: str) -> dict[str, float]:
    """p10/p50/p90 of token counts (the workload's shape as the server counted it)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {f"{name}_p{p}": float("nan") for p in LENGTH_PERCENTILES}
    got = np.percentile(finite, LENGTH_PERCENTILES)
    return {f"{name}_p{p}": float(v) for p, v in zip(LENGTH_PERCENTILES, got, strict=True)}


ACCEPT_HIST_BIN = 0.25  # tokens per step: the width of the acceptance histogram's bins


def _request_acceptance(r: _Rows, ended: np.ndarray) -> dict[str, Any]:
    """Acceptance from the requests that finished in the window and said how they drafted:
    the rung's, the spread of each request's own, and how many requests had each length
    (`req_accept_len_hist`, by the lower edge of its `ACCEPT_HIST_BIN`-wide bin; counts,
    so that repeats add up, `Combine.MERGE`)."""
    told = ended & np.isfinite(r.drafted)
    drafted, accepted, tokens = r.drafted[told].sum(), r.accepted[told].sum(), r.tokens[told]
    own_steps = tokens - r.accepted[told]
    steps = own_steps.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(own_steps > 0, tokens / own_steps, np.nan)
    rate = float(accepted / drafted) if drafted else float("nan")
    return {"req_accept_rate": rate,
            "req_accept_rate_se": _ratio_se(r.accepted[told], r.drafted[told], rate),
            "req_accept_len": float(tokens.sum() / steps) if steps > 0 else float("nan"),
            "req_spec_requests": int(np.count_nonzero(told)),
            "req_draft_tokens": float(drafted),
            "req_accept_len_hist": _histogram(own),
            **_lengths(own, "req_accept_len")}


def _ratio_se(num: np.ndarray, den: np.ndarray, ratio: float) -> float:
    """The standard error of sum(num) / sum(den) over requests drawn alike (the ratio
    estimator's, from each request's residual num - ratio * den)."""
    n = num.size
    if n < 2 or not np.isfinite(ratio):
        return float("nan")
    residual = num - ratio * den
    return float(np.sqrt(residual @ residual / (n * (n - 1))) / den.mean())


def _histogram(lengths: np.ndarray) -> dict[str, int]:
    edges = np.floor(lengths[np.isfinite(lengths)] / ACCEPT_HIST_BIN) * ACCEPT_HIST_BIN
    values, counts = np.unique(edges, return_counts=True)
    return {f"{v:.2f}": int(n) for v, n in zip(values, counts, strict=True)}


def _acceptance_by_step(r: _Rows, ended: np.ndarray) -> dict[str, dict[str, int]]:
    """Of the requests that ended in the window and listed their steps, the verification
    steps and accepted drafts per step bin (`accept_by_step`; counts, `Combine.MERGE`)."""
    steps, accepted = accept_by_step.add(c for c in r.by_step[ended] if c)
    return {"accept_step_steps": {str(b): s for b, s in enumerate(steps) if s},
            "accept_step_accepted": {str(b): accepted[b] for b, s in enumerate(steps) if s}}


LENGTH_BINS = (0, *(2**i for i in range(7, 18)))  # 0, 128, 256, ..., 131072 tokens


def length_bin(tokens: np.ndarray) -> np.ndarray:
    """Each prompt's length bin, `512-1024` (powers of two from `LENGTH_BINS[1]`; "" where
    the length is not known): the fine groups context buckets are made of."""
    edges = np.asarray(LENGTH_BINS, dtype=float)
    known = np.isfinite(tokens)
    at = np.searchsorted(edges, np.where(known, tokens, 0.0), side="right") - 1
    names = np.array([f"{lo}-{hi}" for lo, hi in itertools.pairwise(LENGTH_BINS)]
                     + [f"{LENGTH_BINS[-1]}+"])
    return np.where(known, names[np.clip(at, 0, len(names) - 1)], "")


def _by_category(r: _Rows, window_tokens: np.ndarray, in_flight_s: np.ndarray,
                 sel: np.ndarray, ended: np.ndarray, labels: np.ndarray | None = None
                 ) -> dict[str, dict[str, float]]:
    """Per prompt category (`labels`, by default the requests' categories; requests without
    one left out), where a window has two or more: its tokens in the window
    (`window_tokens`, per request), its requests' time in flight there
    (`in_flight_s`), so its pace per request in flight (tokens per request-second:
    queueing counts, and no request is left out for not having ended) and that
    pace's relative spread over the requests, the requests that started in it and
    succeeded, their TPOT p50, and the acceptance length of those that ended in it
    (`_request_acceptance`)."""
    group = r.category if labels is None else labels
    present = np.unique(group[((window_tokens > 0) | sel) & (group != "")])
    if present.size < 2:
        return {}
    out = {}
    for name in present:
        mine = group == name
        flight = float(in_flight_s[mine].sum())
        tokens = float(window_tokens[mine].sum())
        pace = tokens / flight if flight > 0 else float("nan")
        out[str(name)] = {"tokens": tokens, "in_flight_s": flight, "tok_s_per_request": pace,
                          # the pace's spread over its requests, relative: `tok_s_se` over
                          # a "window" of the category's own tokens
                          "pace_rel_se": tok_s_se(window_tokens[mine], in_flight_s[mine],
                                                  tokens),
                          "requests": float(np.count_nonzero(sel & mine)),
                          "tpot_p50_ms": _pcts(r.tpot[sel & mine], "tpot")["tpot_p50_ms"],
                          "req_accept_len": float(_request_acceptance(r, ended & mine)[
                              "req_accept_len"])}
    return out


def _share(mask: np.ndarray, of: np.ndarray) -> float:
    return float(np.mean(mask[of])) if of.any() else float("nan")


def _workload_columns(r: _Rows, in_w: np.ndarray, sel: np.ndarray, w: Window
                      ) -> dict[str, float]:
    """Sessions in the window; for an open-loop rung its arrivals, late starts and the
    latencies measured from the schedule (NaN where they do not apply)."""
    sessions = r.session_id[in_w]
    out: dict[str, float] = {
        "sessions": float(len(set(sessions[sessions != ""]))),
        "rate": float("nan") if w.rate is None else w.rate,
        "speed": float("nan") if w.speed is None else w.speed,
        "achieved_rate": float(np.count_nonzero(in_w)) / w.length,
    }
    due = (r.scheduled >= w.start) & (r.scheduled < w.end)
    late = r.late_by != ""
    out |= {
        "arrivals_planned": float("nan") if w.rate is None else float(round(w.rate * w.length)),
        "arrivals_sent": float(np.count_nonzero(due)),
        "late_share": _share(late, due),
        "late_cap_share": _share(r.late_by == "cap", due),
        "late_client_share": _share(r.late_by == "client", due),
        "late_p99_ms": _pcts(r.late_ms[due], "late")["late_p99_ms"],
    }
    sched = sel & np.isfinite(r.scheduled)
    e2e_sched = r.late_ms[sched] + r.e2e[sched]
    out |= _pcts(r.late_ms[sched] + r.ttft[sched], "ttft_sched")
    out |= _pcts(e2e_sched.copy(), "e2e_sched")
    out["e2e_sched_mean_ms"] = float(e2e_sched.mean()) if e2e_sched.size else float("nan")
    out["e2e_sched_mean_ms_se"] = float(e2e_sched.std(ddof=1) / np.sqrt(e2e_sched.size)) \
        if e2e_sched.size > 1 else float("nan")
    return out


@dataclass(frozen=True)
class _Window:
    """One window and which requests each column group reads in it."""

    r: _Rows
    ch: Chunks
    w: Window
    tokens: float  # tokens that arrived in it
    chunks: float  # chunks that arrived in it
    estimated_tokens: float  # of those, tokens estimated for requests cut short
    in_w: np.ndarray  # started in it
    sel: np.ndarray  # started in it and succeeded
    ended: np.ndarray  # succeeded and finished in it
    overlap: np.ndarray  # each request's seconds in flight in it
    decoding: np.ndarray  # each request's seconds streaming in it, from its first token
    per_request: np.ndarray  # each request's tokens that arrived in it


def _throughput(x: _Window) -> dict[str, object]:
    w, live = x.w, x.decoding > 0
    tpot_p50 = _pcts(x.r.tpot[x.sel], "tpot")["tpot_p50_ms"]
    return {
        "output_tok_s": x.tokens / w.length,
        "output_tok_s_se": tok_s_se(x.per_request[live], x.decoding[live], w.length),
        # all of a request's tokens in one chunk: TPOT 0, no pace to speak of
        "decode_tok_s_per_user": 1000.0 / tpot_p50 if tpot_p50 > 0 else float("nan"),
        "request_tok_s_p50": _pcts(x.r.per_request_tok_s[x.sel], "x")["x_p50_ms"],
        "requests_per_s": float(np.count_nonzero(x.ended)) / w.length,
        "achieved_concurrency": float(x.overlap.sum()) / w.length,
    }


def _requests(x: _Window) -> dict[str, object]:
    r, in_w = x.r, x.in_w
    return {
        "requests": int(np.count_nonzero(x.sel)),
        "requests_started": int(np.count_nonzero(in_w)),
        **_failure_columns(r, in_w),
        "interrupted": int(np.count_nonzero(r.interrupted & in_w)),
        "reconnects": int(r.reconnects[in_w].sum()),
        "backoff_share": float(r.backoff_s[in_w].sum()) / (x.w.users * x.w.length),
    }


def _tokens(x: _Window) -> dict[str, object]:
    r, sel = x.r, x.sel
    return {
        "tokens_per_chunk": x.tokens / x.chunks if x.chunks else np.nan,
        "output_tokens_mean": float(r.tokens[sel].mean()) if sel.any() else np.nan,
        # drawn lengths: two arms' means differ by chance (`quality.token_mismatch`)
        "output_tokens_se": (float(r.tokens[sel].std(ddof=1) / np.sqrt(sel.sum()))
                             if sel.sum() > 1 else np.nan),
        "finish_length_share": _share(r.finish == "length", sel),
        "chunk_counted_share": _share(r.source == "chunks", sel),
        "estimated_token_share": x.estimated_tokens / x.tokens if x.tokens else 0.0,
        **_lengths(r.prompt_tokens[sel], "prompt_tokens"),
        **_lengths(r.tokens[sel], "output_tokens"),
    }


def _latency(x: _Window) -> dict[str, object]:
    r = x.r
    # every request started here whose TTFT is known or censored, finished or not
    ttft_rows = x.in_w & ~np.isnan(r.ttft)
    tpot_p = _pcts(r.tpot[x.sel], "tpot")
    # nothing that started here finished: the pace of the streams in the window
    queued = not np.isfinite(tpot_p["tpot_p50_ms"])
    return {
        **_censored_pcts(r.ttft[ttft_rows], r.waited_ms[ttft_rows], "ttft"),
        **tpot_p,
        **_pcts(stream_tpot(x.ch, r.start, x.w) if queued else np.zeros(0), "stream_tpot"),
        # the gaps between chunks of the successful requests that started here
        **_itl_pcts(*x.ch.after_first(np.flatnonzero(x.sel))),
        **_pcts(r.e2e[x.sel], "e2e"),
    }


def _workload(x: _Window) -> dict[str, object]:
    return {**_workload_columns(x.r, x.in_w, x.sel, x.w)}


def _acceptance(x: _Window) -> dict[str, object]:
    return {**_request_acceptance(x.r, x.ended), **_acceptance_by_step(x.r, x.ended)}


def _categories(x: _Window) -> dict[str, object]:
    return {"by_category": _by_category(x.r, x.per_request, x.overlap, x.sel, x.ended),
            "by_prompt_length": _by_category(x.r, x.per_request, x.overlap, x.sel, x.ended,
                                             length_bin(x.r.prompt_tokens))}


def _positions(x: _Window) -> dict[str, object]:
    return {reply_positions.COLUMN: reply_positions.tpot_by_position(x.ch, x.sel)}


def _replies(x: _Window) -> dict[str, object]:
    return {"replies": by_prompt(x.r.replies, x.r.tokens, x.sel)}


# The per-rung columns, a function per group: a new column goes into its group's.
COLUMN_GROUPS = (_throughput, _requests, _tokens, _latency, _workload, _acceptance,
                 _categories, _positions, _replies)


def rung_metrics(req: pd.DataFrame, ch: Chunks, windows: Sequence[Window]) -> pd.DataFrame:
    """One row per window with every client-side metric of the summary.

    Throughput counts tokens by arrival inside the window; latencies come from the
    requests that started in it: TTFT from every one that got a first token, plus
    those that timed out waiting for it (censored: a percentile among them reads
    "> timeout"), TPOT, ITL and E2E from the successful ones.
    """
    r = _Rows.of(req, windows)
    shares = token_shares(ch, r.start, windows)
    share_row, share_w, share_tokens, _ = shares
    tokens_by_w, chunks_by_w = window_totals(shares, len(windows))
    streaming = np.where(ch.counts > 0, ch.first_arrival, np.inf)  # from its first token
    estimated = r.source == "estimated"
    est_tokens = np.zeros(len(windows))
    if estimated.any():
        est_tokens, _ = window_tokens(ch.subset(estimated), r.start[estimated], windows)
    rows = []
    for i, w in enumerate(windows):
        in_w = r.started_in == i
        x = _Window(
            r, ch, w, tokens_by_w[i], chunks_by_w[i], est_tokens[i], in_w, r.ok & in_w,
            r.ok & (r.ended_in == i),
            overlap=np.clip(np.minimum(r.end, w.end) - np.maximum(r.start, w.start), 0, None),
            decoding=np.clip(np.minimum(r.end, w.end) - np.maximum(streaming, w.start), 0,
                             None),
            per_request=np.bincount(share_row[share_w == i], share_tokens[share_w == i],
                                    minlength=len(r.start)))
        row: dict[str, object] = {"rung": w.rung, "concurrency": w.users,
                                  "window_start": w.start, "window_s": w.length}
        if w.from_users is not None:
            row |= {"step": w.rung + 1, "from_users": w.from_users}
        for group in COLUMN_GROUPS:
            row.update(group(x))
        rows.append(row)
    return pd.DataFrame(rows)


def estimate_cut_tokens(req: pd.DataFrame, windows: Sequence[Window]) -> pd.DataFrame:
    """Tokens of requests cut short before their usage came, from their own rung's pace.

    A request interrupted (end of a run, a lower rung) or failed mid-stream has no final
    usage, and counting its chunks undercounts whenever a chunk carries several tokens
    (speculative decoding). Such rows get `chunks x tokens per chunk` of the requests
    with usage in the window they ended in (else of the whole repeat), marked
    `tokens_source = "estimated"`. Nothing changes when no request had usage, or when
    those with usage show one token per chunk (then chunks are tokens).
    """
    source = req["tokens_source"].to_numpy(dtype=object)
    chunks_n = req["num_chunks"].to_numpy(dtype=float)
    error_kind = req["error_kind"].to_numpy(dtype=object)
    stopped = (req["interrupted"].to_numpy() != 0) | (error_kind != "")
    cut = (source == "chunks") & (chunks_n > 0) & stopped
    usage = np.isin(source, ("usage", "continuous_usage")) & ~stopped & (chunks_n > 0)
    if not cut.any() or not usage.any():
        return req
    tokens = req["output_tokens"].to_numpy(dtype=float)
    n = len(windows)
    used_in = row_window(req["start"].to_numpy(dtype=float), windows)
    per_w_tokens = np.bincount(used_in[usage & (used_in >= 0)],
                               weights=tokens[usage & (used_in >= 0)], minlength=n)
    per_w_chunks = np.bincount(used_in[usage & (used_in >= 0)],
                               weights=chunks_n[usage & (used_in >= 0)], minlength=n)
    overall = tokens[usage].sum() / chunks_n[usage].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        per_w = np.where(per_w_chunks > 0, per_w_tokens / per_w_chunks, overall)
    cut_window = row_window(req["end"].to_numpy(dtype=float), windows)
    cut_window = np.where(cut_window >= 0, cut_window,
                          row_window(req["start"].to_numpy(dtype=float), windows))
    rate = np.where(cut_window >= 0, per_w[np.maximum(cut_window, 0)], overall)
    rows = cut & (np.abs(rate - 1.0) > 0.01)
    if not rows.any():
        return req
    out = req.copy()
    out.loc[rows, "output_tokens"] = np.rint(chunks_n[rows] * rate[rows]).astype("int64")
    out.loc[rows, "tokens_source"] = "estimated"
    return out


def measure(req: pd.DataFrame, windows: Sequence[Window]) -> pd.DataFrame:
    """Every client-side figure per window: the one path for the report and live views."""
    req = estimate_cut_tokens(req, windows)
    return rung_metrics(req, chunk_arrays.build(req), windows)
