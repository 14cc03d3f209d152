"""Streaming Locust users for OpenAI-compatible servers, measuring every request exactly.

`ChatStreamUser` posts to `/v1/chat/completions`, `CompletionStreamUser` to
`/v1/completions`; both are closed-loop (`wait_time = 0`: one user = one request in
flight, so the user count is the concurrency C). Each request streams with
`stream_options.include_usage` (plus `continuous_usage_stats` unless
`--no-continuous-usage`), sends its record's id, a UUID, as `X-Request-Id`
(`--request-id-header`) and is read line by line as bytes arrive (`reader.LineReader`,
geventhttpclient's readline logic; Locust's `iter_lines` waits for 1 KB blocks and
delays chunks). Every content chunk is stamped with its arrival time (kernel receive
timestamps where available).

What the Locust statistics show:
- `POST /v1/chat/completions` (or `/v1/completions`): one entry per request;
  response time = E2E (send start -> last content chunk; time to the failure for failed
  requests), "size" = output tokens, so the average size is mean tokens per request.
  Failures carry a short grouped message ("HTTP 500: ...", "stream cut before [DONE]",
  "timeout before first token", ...).
- `TTFT /v1/chat/completions`: one sample per successful request, response time = TTFT.
  It is logged straight into its entry, not into the "Aggregated" row, so the
  Aggregated row counts requests (not requests plus TTFT samples) and its times are E2E.
- A request cut short because its user was stopped (end of run, Stop, a lower rung) is
  not a server failure and does not appear in Locust's stats; its record row has
  `interrupted=1`, `error_kind=interrupted` and every chunk that arrived.
Exact per-request figures (TTFT, E2E, TPOT, chunk timings and tokens) go to
`<csv prefix>_requests.csv` through `Recorder`; Locust's own percentiles are bucketed.
A user starts its next request when the process has no socket waiting to be read
(`start_gate`), which keeps arrival stamps exact when many streams end at once.
`StreamingUser.stream` is the one request path: the chat-session users (`sessions.py`)
and the open-loop users (`open_loop.py`) send through it too, tagging their records
with a session and turn or a scheduled time (`Tags`) and, for sessions, getting the
reply's text back.
Importing this module changes nothing in Locust: a locustfile installs the users'
listeners and patches with `plugin.install()`.
"""

from __future__ import annotations

import logging
import ssl
import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import gevent
import orjson
from geventhttpclient._parser import HTTPParseError
from locust import FastHttpUser, constant, task
from locust.env import Environment
from locust.exception import CatchResponseError, StopUser

from specload.errors import UserError
from specload.loadgen import keepalive, spawn_batches, tls, wall_clock
from specload.loadgen.chunk_json import (
    DONE,
    DraftCounts,
    MalformedChunk,
    error_message_from_body,
    parse_chunk,
)
from specload.loadgen.http_post import StreamPost
from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.measure import Measured, StreamTally
from specload.loadgen.options import RunOptions
from specload.loadgen.process_state import ModelDiscoveryError, ProcessState
from specload.loadgen.reader import LineReader
from specload.loadgen.recorder import Recorder
from specload.loadgen.sse import SSEDecoder
from specload.loadgen.start_gate import StartGate
from specload.runfiles import accept_by_step, reply_digest
from specload.runfiles.records import LATE_LIMIT_MS, RequestRecord, encode_chunks
from specload.traffic import request_body
from specload.traffic.prompts import Prompt, request_seed

log = logging.getLogger(__name__)
TTFT_TYPE = "TTFT"
DONE_GRACE_S = 0.25  # covers a Nagle + delayed-ACK round for the body's last bytes
START_GATE = StartGate()  # one per process: all users share its event loop
_chunk_count_warned = False


class _Outcome:
    """How one request ended, filled in while it runs."""

    __slots__ = ("detail", "done", "error", "error_kind", "raw", "request_id", "seq", "status")

    def __init__(self, seq: int = 0, request_id: str = "") -> None:
        self.seq = seq  # the load process's n-th request: gaps in the records mean lost rows
        self.request_id = request_id
        self.status = 0
        self.error_kind = ""
        self.error = ""  # short message, grouped in Locust's failures table
        self.detail = ""  # more for the record row only (e.g. the malformed payload)
        self.raw: Any = None  # geventhttpclient response, released on abort
        self.done = False  # `data: [DONE]` arrived

    def full_error(self) -> str:
        return f"{self.error}: {self.detail}" if self.detail else self.error

    def fail(self, kind: str, message: str) -> None:
        if not self.error_kind:
            self.error_kind, self.error = kind, message


@dataclass(frozen=True, slots=True)
class Tags:
    """What a request belongs to, for its record: a session's turn, a planned arrival."""

    session_id: str = ""
    turn: int = 0
    scheduled: float | None = None  # epoch s
    cap_late: bool = False  # every user was busy when the arrival was due


NO_TAGS = Tags()


@dataclass(frozen=True, slots=True)
class Reply:
    """How a request went: whether it succeeded, and the reply's text if it was kept."""

    ok: bool
    text: str = ""


class StreamingUser(FastHttpUser):
    """Shared machinery; subclasses set `endpoint`, `path` and `payload`."""

    abstract = True
    wait_time = constant(0)
    endpoint: ClassVar[str] = ""
    path: ClassVar[str] = ""
    keep_text: ClassVar[bool] = False  # keep each reply's text (chat sessions send it back)
    start_gate: ClassVar[bool] = True  # wait for an idle event loop before sending
    # the JSON body of one request for (prompt, model, options); a staticmethod in each subclass
    payload: ClassVar[staticmethod[[Prompt, str, RunOptions], dict[str, Any]]]

    def __init__(self, environment: Environment) -> None:
        opts = RunOptions.from_env(environment, check=False)
        timeout = opts.request_timeout_s
        if timeout <= 0:  # reported at test_start; the first task then stops this user
            timeout = RunOptions().request_timeout_s
        # FastHttpUser builds its connection pool from these in __init__: socket reads
        # (first byte, and between chunks) and connects time out after --request-timeout;
        # HTTPS verifies certificates unless --insecure (Locust's default is not to).
        self.network_timeout = timeout
        self.connection_timeout = timeout
        self.insecure = opts.insecure
        self.ssl_context_factory = tls.context_factory(opts.ca_bundle or None, opts.insecure)
        super().__init__(environment)
        self.recorder = Recorder.for_env(environment)
        self.ctx: ProcessState | None = None
        self.user_id = 0
        self._post: StreamPost | None = None
        self._backoff = Backoff(opts.failure_backoff_s)
        spawn_batches.user_created()

    def _setup(self) -> ProcessState:
        """Join this test's process context (at the first task, so StopUser stays quiet)."""
        try:
            self.ctx = ctx = ProcessState.for_env(self.environment)
        except (UserError, ValueError):  # bad option or prompt file: logged at test_start
            raise StopUser() from None
        self.user_id = ctx.next_user_id()
        self._post = StreamPost(self.client, self.path, {
            **ctx.auth_headers,
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
        })
        return ctx

    @task
    def _task(self) -> None:
        self.generate()  # Locust keeps this function object: subclasses override generate

    def generate(self) -> None:
        """One request: the next prompt, closed loop."""
        IN_FLIGHT.park_while_draining()
        ctx = self.ctx or self._setup()
        waited = self._backoff.wait()
        model = self.model(ctx)
        if model is None:
            return
        self.settle(self.stream(ctx, ctx.next_prompt(), model, waited))

    def model(self, ctx: ProcessState) -> str | None:
        """The model to request; None (reported as a failed `GET /v1/models`) while the
        server cannot say."""
        try:
            return ctx.model(self.host or "")
        except ModelDiscoveryError as exc:
            self.environment.events.request.fire(
                request_type="GET", name="/v1/models", response_time=0, response_length=0,
                exception=CatchResponseError(str(exc)), context={},
            )
            self._backoff.failed(max_s=1.0)  # do not spin while the server is not up yet
            return None

    def settle(self, reply: Reply) -> Reply:
        """Reset or grow the backoff after a request."""
        if reply.ok:
            self._backoff.succeeded()
        else:
            self._backoff.failed()
        return reply

    def stream(self, ctx: ProcessState, prompt: Prompt, model: str,
               backoff_s: float = 0.0, tags: Tags = NO_TAGS) -> Reply:
        """Send one streaming request, report it to Locust and record it."""
        if self.start_gate:
            START_GATE.wait()  # reads in flight go first (see start_gate)
        opts = ctx.opts
        out = _Outcome(*ctx.next_request())
        body = orjson.dumps(self.payload(prompt, model, opts))
        extra = {ctx.request_id_header: out.request_id} if ctx.request_id_header else None
        start = wall_clock.now()
        tally = StreamTally(start, self.keep_text)
        key = IN_FLIGHT.begin(start, tally)
        sent = _Sent(prompt, start, backoff_s, tags)
        try:
            try:
                sent, raw = self._send(body, extra, sent)
            except Exception as exc:  # no response head: connecting, sending or reading it
                _connection_failed(exc, out)
            else:
                tally.t0 = sent.start
                self._read(raw, tally, out)
            measured = tally.result()
        except Exception as exc:  # anything else is a bug; the request still counts
            out.fail("connection", f"request failed: {type(exc).__name__}: {exc}")
            measured = tally.result()
        except BaseException:  # GreenletExit: the user is being stopped mid-request
            _release(out)
            out.fail("interrupted", "user stopped while the request was in flight")
            self._record(ctx, sent, tally.result(), out, True)
            IN_FLIGHT.end(key)
            raise
        self._report(measured, out, tally)
        self._record(ctx, sent, measured, out, False)
        IN_FLIGHT.end(key)
        ctx.observe_prompt(prompt, measured.prompt_tokens)
        return Reply(not out.error_kind, tally.reply())

    def _send(self, body: bytes, extra: dict[str, str] | None,
              sent: _Sent) -> tuple[_Sent, Any]:
        """POST the request; once more on a new connection when the reused one it went
        out on was closed before any response byte (`keepalive.is_close_race`). The
        request then starts at the send that reached the server."""
        post = self._post
        assert post is not None  # built by _setup
        try:
            raw = post.send(body, extra)
        except Exception as exc:
            if not keepalive.is_close_race(exc):
                raise
        else:
            keepalive.head_arrived()
            return sent, raw
        sent = replace(sent, start=wall_clock.now(), reconnects=sent.reconnects + 1)
        with keepalive.fresh_connection():
            return sent, post.send(body, extra)

    def _read(self, raw: Any, tally: StreamTally, out: _Outcome) -> None:
        """Consume the response; on any problem set `out` and return (never raises)."""
        out.raw = raw
        if not _accept_head(raw, out):
            _release(out)
            return
        reader = LineReader(raw, self._post.timer if self._post else None)
        try:
            self._read_events(reader, tally, out)
        except MalformedChunk as exc:
            out.fail("malformed_chunk", f"malformed chunk: {exc}")
            out.detail = exc.preview
        except TimeoutError:
            if out.done:  # the server kept the connection open after [DONE]
                pass
            elif tally.arrivals:
                out.fail("timeout_between_chunks", "timeout between chunks")
            else:
                out.fail("timeout_first_byte", "timeout before first token")
        except (HTTPParseError, OSError) as exc:
            if not out.done:  # after [DONE] a broken connection costs nothing
                out.fail("stream_cut", f"stream cut before [DONE] ({type(exc).__name__})")
        if not out.error_kind:
            _judge_complete_stream(tally, out)
        if out.error_kind or not raw.message_complete:
            _release(out)

    def _read_events(self, reader: LineReader, tally: StreamTally, out: _Outcome) -> None:
        raw = reader.raw
        decoder = SSEDecoder()
        whole_event_data, on_event = decoder.whole_event_data, self._on_event

        def on_lines(lines: bytes, stamp: float) -> bool:
            data = whole_event_data(lines)
            if data is not None:  # one event, as servers send them: no list to build
                out.done = out.done or on_event(data, stamp, tally, out)
            else:
                for event in decoder.feed(lines):
                    out.done = out.done or on_event(event.data, stamp, tally, out)
            return out.done or bool(out.error_kind)

        reader.pump(on_lines)
        if out.done and not raw.message_complete:
            _read_body_end(reader)
        if not out.done and not out.error_kind:
            last = decoder.finish()
            out.done = last is not None and self._on_event(last.data, reader.last_stamp,
                                                           tally, out)
        if not out.done and not out.error_kind and not (raw.message_complete
                                                        and tally.finish_reason):
            # a body that ends cleanly after a finish_reason needs no [DONE]
            out.fail("stream_cut", "stream cut before [DONE]")

    @staticmethod
    def _on_event(data: bytes, now: float, tally: StreamTally, out: _Outcome) -> bool:
        """Handle one SSE data payload; True when it is the `[DONE]` sentinel."""
        if data == DONE:
            return True
        if out.error_kind:
            return False
        chunk = parse_chunk(data)
        if chunk.error is not None:
            out.fail("stream_error", f"error in stream: {chunk.error}")
            return False
        tally.add(now, chunk)
        IN_FLIGHT.chunks += 1
        return False

    def _report(self, measured: Measured, out: _Outcome, tally: StreamTally) -> None:
        """The request's entry in Locust's statistics (and its TTFT's, if it succeeded)."""
        failed = bool(out.error_kind)
        self.environment.events.request.fire(
            request_type="POST", name=self.path,
            response_time=(measured.e2e_ms if measured.e2e_ms is not None and not failed
                           else _elapsed_ms(tally)),
            response_length=measured.output_tokens,
            exception=CatchResponseError(out.error) if failed else None, context={},
        )
        if failed:
            return
        if measured.ttft_ms is not None:
            self.environment.stats.get(self.path, TTFT_TYPE).log(measured.ttft_ms, 0)
        if measured.tokens_source == "chunks":
            _warn_chunk_counting()

    def _record(self, ctx: ProcessState, sent: _Sent, measured: Measured, out: _Outcome,
                interrupted: bool) -> None:
        if not self.recorder.enabled:
            return
        start, tags = sent.start, sent.tags
        gaps, tokens = encode_chunks(start, measured.arrivals, measured.chunk_tokens)
        late_ms = (start - tags.scheduled) * 1e3 if tags.scheduled is not None else None
        late_by = "cap" if tags.cap_late else (
            "client" if late_ms is not None and late_ms > LATE_LIMIT_MS else "")
        self.recorder.add(RequestRecord(
            request_id=out.request_id, client_id=ctx.client_id, seq=out.seq,
            user_id=self.user_id, endpoint=self.endpoint, category=sent.prompt.category,
            start=start, end=wall_clock.now(), status=out.status, ttft_ms=measured.ttft_ms,
            e2e_ms=measured.e2e_ms, tpot_ms=measured.tpot_ms,
            output_tokens=measured.output_tokens, prompt_tokens=measured.prompt_tokens,
            tokens_source=measured.tokens_source, num_chunks=len(measured.arrivals),
            finish_reason=measured.finish_reason, error_kind=out.error_kind,
            error=out.full_error(), interrupted=interrupted, chunk_gaps_us=gaps,
            chunk_tokens=tokens, backoff_ms=sent.backoff_s * 1e3,
            session_id=tags.session_id, turn=tags.turn, scheduled=tags.scheduled,
            late_ms=late_ms, late_by=late_by, reconnects=sent.reconnects,
            **_speculation_columns(measured.speculation),
            **_reply_columns(sent.prompt, measured.generated, ctx.opts),
        ))


@dataclass(frozen=True, slots=True)
class _Sent:
    """What a request was, as its record needs it."""

    prompt: Prompt
    start: float
    backoff_s: float
    tags: Tags
    reconnects: int = 0  # sent again on a new connection after the keep-alive close race


class Backoff:
    """Waits after failed requests: exponential from 0.1 s up to a cap, reset on success.

    A user whose requests fail at once would otherwise send thousands a second (an
    all-400 server, a dead one); a cap of 0 turns it off.
    """

    __slots__ = ("cap_s", "next_s")
    FIRST_S = 0.1

    def __init__(self, cap_s: float) -> None:
        self.cap_s = cap_s
        self.next_s = 0.0

    def failed(self, max_s: float | None = None) -> None:
        cap = self.cap_s if max_s is None else min(self.cap_s or max_s, max_s)
        self.next_s = min(cap, self.next_s * 2 if self.next_s else self.FIRST_S)

    def succeeded(self) -> None:
        self.next_s = 0.0

    def wait(self) -> float:
        """Sleep the current backoff (if any); returns the seconds slept."""
        if self.next_s <= 0:
            return 0.0
        t0 = time.monotonic()
        gevent.sleep(self.next_s)
        return time.monotonic() - t0


def _connection_failed(error: BaseException, out: _Outcome) -> None:
    """Why a request got no response head: a timeout, TLS, or the connection."""
    if isinstance(error, TimeoutError):
        out.fail("timeout_first_byte", "timeout before response headers")
    elif isinstance(error, ssl.SSLError):
        out.fail("tls", f"TLS handshake failed: {_tls_reason(error)}")
    else:
        out.fail("connection", f"connection failed: {type(error).__name__}")


def _accept_head(raw: Any, out: _Outcome) -> bool:
    """Status and content type: True for a 2xx event stream, else `out` says why."""
    out.status = raw.status_code or 0
    if out.status >= 300 or out.status < 200:
        out.fail("http_error", f"HTTP {out.status}: {_error_body(raw)}")
        return False
    ctype = raw.get("content-type") or ""
    if isinstance(ctype, list):
        ctype = ",".join(ctype)
    if ctype and "event-stream" not in ctype:
        out.fail("malformed_chunk", f"not an event stream: {ctype}")
        return False
    return True


def _tls_reason(error: ssl.SSLError) -> str:
    """`certificate verify failed: self-signed certificate`, `WRONG_VERSION_NUMBER`, ..."""
    verify = getattr(error, "verify_message", None)
    if verify:
        return f"certificate verify failed: {verify}"
    return str(getattr(error, "reason", None) or error)


def _judge_complete_stream(tally: StreamTally, out: _Outcome) -> None:
    """A stream that ended properly can still be empty, or cut short without a word."""
    if tally.output_tokens == 0 and not tally.has_text:
        out.fail("empty_stream", "stream ended without a token")
    elif not tally.finish_reason:
        out.fail("no_finish_reason", "stream ended without a finish_reason")


def _common_fields(prompt: Prompt, model: str, opts: RunOptions) -> dict[str, Any]:
    stream_options: dict[str, bool] = {"include_usage": True}
    if opts.continuous_usage:
        stream_options["continuous_usage_stats"] = True
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": stream_options,
        "max_tokens": prompt.max_tokens or opts.max_tokens,
        "temperature": opts.temperature,
        "seed": request_seed(opts.seed, prompt),
    }
    if opts.ignore_eos:
        body["ignore_eos"] = True
    if opts.min_tokens:
        body["min_tokens"] = opts.min_tokens
    body.update(request_body.fields(opts.extra_body))  # none of specload's own (validated)
    return body


class ChatStreamUser(StreamingUser):
    """Streams `/v1/chat/completions` with the prompt's messages."""

    endpoint = "chat"
    path = "/v1/chat/completions"

    @staticmethod
    def payload(prompt: Prompt, model: str, opts: RunOptions) -> dict[str, Any]:
        return {**_common_fields(prompt, model, opts), "messages": list(prompt.messages)}


class CompletionStreamUser(StreamingUser):
    """Streams `/v1/completions` with the prompt's text (messages joined)."""

    endpoint = "completions"
    path = "/v1/completions"

    @staticmethod
    def payload(prompt: Prompt, model: str, opts: RunOptions) -> dict[str, Any]:
        return {**_common_fields(prompt, model, opts), "prompt": prompt.text}


def _error_body(raw: Any) -> str:
    try:
        return error_message_from_body(raw.read() or b"")
    except Exception:  # the body itself failed to arrive
        return "(no body)"


def _speculation_columns(spec: DraftCounts | None) -> dict[str, Any]:
    """The record's columns of the request's own speculation (none: left empty)."""
    if spec is None:
        return {}
    return {"draft_tokens": spec.drafted, "accepted_tokens": spec.accepted,
            "draft_steps": spec.steps,
            "accept_by_step": accept_by_step.encode(spec.per_step) if spec.per_step else ""}


def _reply_columns(prompt: Prompt, generated: str, opts: RunOptions) -> dict[str, Any]:
    """The record's columns that let the report compare this reply with another arm's."""
    size, digest, blocks = reply_digest.fingerprint(generated)
    return {"prompt_index": prompt.index, "prompt_hash": reply_digest.prompt_digest(prompt.text),
            "max_tokens": prompt.max_tokens or opts.max_tokens,
            "reply_bytes": size, "reply_hash": digest, "reply_blocks": blocks,
            "reply_text": generated if opts.keep_replies else ""}


def _elapsed_ms(tally: StreamTally) -> float:
    return (wall_clock.now() - tally.t0) * 1e3


def _read_body_end(reader: LineReader) -> None:
    """Read what follows `[DONE]` for a moment, so the connection can be reused.

    The body's end normally arrives with `[DONE]` or right after it. A server that keeps
    the body open must not keep the user (or its request's `end`) waiting: after
    `DONE_GRACE_S` the caller releases the half-read connection instead.
    """
    with gevent.Timeout(DONE_GRACE_S, False):
        while reader.readlines()[0]:
            pass


def _release(out: _Outcome) -> None:
    """Close a half-read connection so the server sees the client go away."""
    if out.raw is not None:
        out.raw.release()


def _warn_chunk_counting() -> None:
    global _chunk_count_warned
    if not _chunk_count_warned:
        _chunk_count_warned = True
        log.warning("server reports no usage: counting tokens as content chunks, which "
                    "undercounts under speculative decoding")
