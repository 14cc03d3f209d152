"""The per-request record and the run files: one definition shared by writer and reader.

Every request a load process sends becomes one `RequestRecord`, written as one row of
`<csv prefix>_requests.csv`. The load generator writes these rows, the report reads
them; both take the column list, the chunk-timing encoding and the run-file suffixes
from here, so the two sides cannot drift apart. Chunk timings are stored compactly as
two space-separated integer columns (gaps in microseconds, tokens per chunk) that the
report can parse for a whole file at once.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Suffixes appended to a Locust `--csv` prefix. Locust itself writes `_stats.csv`,
# `_stats_history.csv`, `_failures.csv` and `_exceptions.csv`.
REQUESTS_SUFFIX = "_requests.csv"
RUNGS_SUFFIX = "_rungs.csv"
LEGACY_RUNGS_SUFFIX = "_steps.csv"  # the same file, as specload 0.1 named it
SERVER_METRICS_SUFFIX = "_server_metrics.csv"
CLIENT_STATS_SUFFIX = "_client_stats.csv"
LOCUST_STATS_SUFFIX = "_stats.csv"
LOCUST_HISTORY_SUFFIX = "_stats_history.csv"
LOCUST_FAILURES_SUFFIX = "_failures.csv"
# Each rung's figures as the run computed them once the rung was complete (JSON lines).
LIVE_SUFFIX = "_live.jsonl"
# What the master measured and noticed about its workers (distributed runs only).
CLOCK_SUFFIX = "_clock.csv"
EVENTS_SUFFIX = "_events.csv"
# The simulated server's ground truth (`sim/trace.py`), next to a sim arm's Locust files.
SERVER_TRACE_NAME = "server_trace.jsonl"
LEGACY_SERVER_TRACE_NAME = "sim_trace.jsonl"  # as specload 0.1 named it

# Columns of the rungs file written by the ladder shape (times are UTC epoch seconds).
RUNGS_COLUMNS = ("rung", "users", "warmup_start", "measure_start", "measure_end")
# An open-loop run's rungs file adds each rung's target arrival rate (per second); its
# `users` is the pool of users that carry the arrivals (the cap on requests in flight).
RATE_RUNGS_COLUMNS = (*RUNGS_COLUMNS, "rate")
# A trace replay's adds the speed the trace was replayed at (its `rate`: the planned
# arrivals of the measure window per second).
TRACE_RUNGS_COLUMNS = (*RATE_RUNGS_COLUMNS, "speed")
# What a rung steps, by the rungs file's columns: the first of these it has.
LEVEL_COLUMNS = ("speed", "rate", "users")
# A load-step run's rungs file: one row per step, its warmup starting at the jump from the
# previous step's user count (`from_users`; 0 for the first step).
STEP_RUNGS_COLUMNS = (*RUNGS_COLUMNS, "from_users")


def level_column(columns: Sequence[str]) -> str | None:
    """The column of a rungs file that holds what each rung stepped (`LEVEL_COLUMNS`)."""
    return next((c for c in LEVEL_COLUMNS if c in columns), None)


def rung_time(t: float) -> str:
    """A time as the rungs file holds it: epoch seconds to the microsecond."""
    return f"{t:.6f}"


# Long-format server metrics: one row per (sample time, metric name); value is the sum
# over label sets of that metric at that time.
SERVER_METRICS_COLUMNS = ("ts", "metric", "value")
# With each sample, its own fetch time in seconds: `ts` is the fetch's middle, and the
# server read its counters somewhere inside it (a busy llama-server answers /metrics only
# between decode steps, and past its slots at times seconds late).
FETCH_METRIC = "specload:fetch_seconds"
# One row per load process per sample: CPU share of one core and event-loop lag; then
# the lag probe's wake-ups and those later than CLIENT_LAG_LIMIT_MS (so a rung's share
# of late wake-ups, its lag p99 against the limit, is exact); then the chunks received
# since the previous sample and the requests in flight (the runner's liveness signal);
# then the output tokens received since the previous sample (a master's live token count).
CLIENT_STATS_COLUMNS = ("ts", "client_id", "cpu_percent", "lag_p50_ms", "lag_p99_ms", "users",
                        "lag_samples", "lag_late", "chunks", "in_flight", "tokens")
CLIENT_LAG_LIMIT_MS = 10.0
# One row per clock round per worker process (`specload.runfiles.clock_sync`): when it was measured
# (master's clock), the process (`client_id` as in the request rows) and its Locust
# node id, the offset (worker clock minus master clock) and the round trip of the best
# of `exchanges` exchanges. The report subtracts the offset from the process's times.
CLOCK_COLUMNS = ("ts", "client_id", "node", "offset_s", "rtt_s", "exchanges")
# What the master noticed about a worker process, at `ts` (master's clock), for a problem
# that began at `since`; `detail` is one sentence for the console and the report.
EVENTS_COLUMNS = ("ts", "client_id", "node", "event", "since", "detail")
EVENT_KINDS = (
    "lost",  # no heartbeat for a few seconds: Locust marked the worker missing
    "back",  # a worker marked missing sent heartbeats again
    "clock_uncertain",  # its offset is known to worse than clocks.UNCERTAINTY_LIMIT_S
    "clock_jump",  # its offset moved between two rounds (the clock was stepped)
    "clock_unmeasured",  # it never answered a clock round: its times are taken as they are
)
# The exit status of a load process that stopped because it could not write its run
# files (a full disk; ENOSPC's number on Linux): the runner then stops the sweep.
WRITE_FAILED_EXIT = 28
# Open loop: a request sent more than this after its scheduled time is a late start.
LATE_LIMIT_MS = CLIENT_LAG_LIMIT_MS
# A rung of users whose achieved concurrency is more than this share under its C is
# short of C (the console line, the report's warning and its crossover section).
CONCURRENCY_SHORTFALL = 0.10

# Error kinds recorded in `error_kind`; "" means the request succeeded.
ERROR_KINDS = (
    "http_error",  # non-2xx status; `error` holds the server's message
    "stream_error",  # an error object inside the stream
    "malformed_chunk",  # a data line that is not the JSON we expect
    "stream_cut",  # the connection closed before `data: [DONE]`
    "empty_stream",  # the stream ended properly but carried no token
    "no_finish_reason",  # the stream ended properly but no chunk gave a finish_reason
    "timeout_first_byte",  # no response within the timeout
    "timeout_between_chunks",  # the stream stalled longer than the timeout
    "connection",  # connect refused / reset before any response
    "tls",  # the TLS handshake failed (certificate, protocol)
    "interrupted",  # the user was stopped while the request was in flight
)
# Failures that happen before the server produced anything: their latency is censored
# (the request never got a TTFT), which the report shows instead of dropping them.
TIMEOUT_KINDS = ("timeout_first_byte",)

# Where `output_tokens` came from: the final usage chunk, per-chunk usage, the count of
# content chunks (no usage at all), or, for a request cut short without usage, the
# report's estimate from the arm's own tokens per chunk at that rung.
TOKENS_SOURCES = ("usage", "continuous_usage", "chunks", "estimated")


@dataclass(slots=True)
class RequestRecord:
    """One streamed request as the client saw it. Times in ms are relative to `start`."""

    request_id: str
    client_id: str
    user_id: int
    endpoint: str  # "chat" or "completions"
    category: str  # prompt category (`prompts.CATEGORIES` for the built-in set)
    start: float  # send start, UTC epoch seconds
    end: float  # request finished (stream closed, failed or interrupted), epoch seconds
    status: int  # HTTP status, 0 when no response arrived
    ttft_ms: float | None = None
    e2e_ms: float | None = None  # start -> last content chunk
    tpot_ms: float | None = None
    output_tokens: int = 0
    prompt_tokens: int | None = None
    tokens_source: str = "chunks"
    num_chunks: int = 0
    finish_reason: str = ""
    error_kind: str = ""
    error: str = ""
    interrupted: bool = False
    chunk_gaps_us: str = ""  # space-separated gaps: first from start, then chunk to chunk
    chunk_tokens: str = ""  # space-separated tokens per chunk, "" when the server gave none
    backoff_ms: float = 0.0  # time the user waited after earlier failures before sending
    seq: int = 0  # the load process's n-th request (from 1): a gap means a lost row
    session_id: str = ""  # chat sessions: the session this request is a turn of
    turn: int = 0  # chat sessions: 1 for a session's first request, 2 for the next, ...
    scheduled: float | None = None  # open loop: when the arrival plan said to send (epoch s)
    late_ms: float | None = None  # open loop: send start - scheduled
    late_by: str = ""  # open loop, started late: "cap" (every user was busy) or "client"
    # sent again on a new connection: the reused one was closed before any response byte
    reconnects: int = 0
    # the request's own speculation, where its engine's responses tell it
    # (`engines.RequestSpeculation`): draft tokens proposed, those the target accepted,
    # and the verification steps where the engine counts them
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    draft_steps: int | None = None
    # drafts accepted per verification step, binned (`accept_by_step`; "": not listed)
    accept_by_step: str = ""
    # what was asked and what came back, for comparing replies between arms
    # (`reply_digest`): the prompt's index in its set (or the conversation's; None for a
    # synthetic prompt), the digest of its text as sent, the max_tokens sent, the UTF-8
    # bytes of generated text (every kind), their digest and their blocks' CRCs, and the
    # text itself only when the run asks for it (`keep_replies`)
    prompt_index: int | None = None
    prompt_hash: str = ""
    max_tokens: int | None = None
    reply_bytes: int = 0
    reply_hash: str = ""
    reply_blocks: str = ""
    reply_text: str = ""
    extra: dict[str, object] = field(default_factory=dict, repr=False)

    def row(self) -> list[object]:
        """The record as a CSV row in `REQUEST_COLUMNS` order."""
        return [_cell(getattr(self, name), digits)
                for name, digits in zip(REQUEST_COLUMNS, _DIGITS, strict=True)]


REQUEST_COLUMNS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(RequestRecord) if f.name != "extra"
)
# The record's times of day (epoch seconds) are kept to the microsecond, as the rungs
# file's and the chunk gaps are; its durations in ms to the microsecond too.
EPOCH_COLUMNS = ("start", "end", "scheduled")
_DIGITS = tuple(6 if name in EPOCH_COLUMNS else 3 for name in REQUEST_COLUMNS)


def _cell(value: object, digits: int) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return round(value, digits)
    return value


def client_id() -> str:
    """The `client_id` of the calling load process: its host name and process id."""
    # computed at each call, not at import: `--processes` forks after the imports
    return f"{socket.gethostname()}-{os.getpid()}"


def complete_length(path: Path, block: int = 1 << 16) -> int:
    """The size of `path` up to and including its last line break. A row its writer was
    still writing when it was killed (`kill -9`, a full disk) has no line break yet and
    is not part of the file: readers stop before it, and a resumed sweep cuts it off
    before it appends."""
    with path.open("rb") as fh:
        end = fh.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            at = fh.read(end - start).rfind(b"\n")
            if at >= 0:
                return start + at + 1
            end = start
    return 0


def rungs_path(prefix: str | Path) -> Path:
    """The rungs file of a prefix; a run written by specload 0.1 has it under its old name."""
    path = Path(f"{prefix}{RUNGS_SUFFIX}")
    legacy = Path(f"{prefix}{LEGACY_RUNGS_SUFFIX}")
    return legacy if not path.exists() and legacy.exists() else path


def encode_chunks(
    start: float, arrivals: Sequence[float], tokens: Sequence[int] | None
) -> tuple[str, str]:
    """Encode chunk arrival times (epoch s) and per-chunk token counts compactly.

    Gaps are integer microseconds, the first measured from `start`; rounding is done on
    the cumulative offsets so that errors do not accumulate along a long stream.
    """
    gaps: list[str] = []
    prev = 0
    for t in arrivals:
        off = round((t - start) * 1e6)
        gaps.append(str(off - prev))
        prev = off
    tok = " ".join(map(str, tokens)) if tokens is not None else ""
    return " ".join(gaps), tok


def decode_chunks(gaps: str, tokens: str) -> tuple[list[float], list[int] | None]:
    """Inverse of `encode_chunks`: offsets from start in seconds, and tokens or None."""
    offsets: list[float] = []
    acc = 0
    for g in gaps.split():
        acc += int(g)
        offsets.append(acc / 1e6)
    counts = [int(x) for x in tokens.split()] if tokens.strip() else None
    return offsets, counts
