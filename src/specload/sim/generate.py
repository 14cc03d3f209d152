"""One generation request's life in the simulated server: admit, generate, stream, trace.

`Generation.serve` validates a chat or completions body, maybe picks a fault, gives the
request a deterministic length and text, submits it to the least-loaded engine rank
and answers: a stream of SSE events in the flavour's shape (one engine step's tokens per
write, formatted, stamped and written from inside the step by `DirectChunks`; requests
picked for a fault await each step instead), or one JSON body. Every finished request,
rejected ones included, becomes one trace record (`trace.py`); the trace's
`request_id` is the client's `X-Request-Id` whatever the flavour does with it, so tests
can match the ground truth to the client's records. A flavour whose server closes the
connection after every stream (llama.cpp) closes it a few milliseconds after the body
ended, with keep-alive headers; `--connection-close` makes any flavour's streams say
`Connection: close` instead.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from aiohttp import web

from specload.sim import sse
from specload.sim.categories import category_of
from specload.sim.faults import Fault, FaultPicker
from specload.sim.flavors import Flavor
from specload.sim.openai_request import ApiError, GenRequest, Limits, parse_request
from specload.sim.receive_stamps import received_at
from specload.sim.scheduler import Seq
from specload.sim.step_loop import StepLoop, Stream
from specload.sim.textgen import TokenStream, digest, output_length, reply_token_text
from specload.sim.tool_calls import ToolCallStream
from specload.sim.trace import TraceWriter

MAX_BODY_BYTES = 4 * 1024 * 1024
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
Endpoint = Literal["chat", "completions"]


def json_response(obj: Any, status: int = 200,
                  headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, headers=headers,
                        content_type="application/json")


@dataclass
class Settings:
    """What every generation request of one server shares."""

    flavor: Flavor
    limits: Limits
    eos_mean: int
    seed: int
    faults: FaultPicker
    trace: TraceWriter | None
    created: int
    reasoning_tokens: int = 0
    interrupt: Callable[[], bool] | None = None  # llama-cpp-python: a request waits
    connection_close: bool = False  # streamed responses say `Connection: close`
    # vLLM's --per-request-spec-decode-metrics: each request's `metrics.speculative_decoding`
    # with a histogram over 0..spec_metrics_k accepted drafts (None: not sent)
    spec_metrics_k: int | None = None
    spec_metrics_detailed: bool = False  # ... with each verification step's drafts


class Call:
    """One generation request's state while it is served."""

    def __init__(self, request: web.Request, endpoint: Endpoint) -> None:
        self.request = request
        self.arrival = received_at(request.transport) or time.time()
        self.request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex
        self.record: dict[str, Any] = {
            "request_id": self.request_id, "arrival": self.arrival, "first_token": None,
            "end": None, "chunks": [], "prompt_tokens": None, "output_tokens": 0,
            "finish_reason": None, "status": 200, "fault": None, "endpoint": endpoint}
        self.completed = False
        self.traced = False
        self.status = 200
        self.seq: Seq | None = None  # the engine's request, once submitted
        self.tool: ToolCallStream | None = None  # the call its reply makes, if it makes one

    def tokens(self, n: int, streamed: bool, chunks: int = 1) -> None:
        """Record n tokens sent now, in `chunks` equal chunks when streamed."""
        now = time.time()
        rec = self.record
        if rec["first_token"] is None:
            rec["first_token"] = now
        if streamed:
            if chunks == 1:
                rec["chunks"].append([now, n])
            else:
                rec["chunks"].extend([now, 1] for _ in range(n))
        rec["output_tokens"] += n


class ContentChunks:
    """A streamed request's content events: the bytes of the next step, recorded as sent."""

    __slots__ = ("call", "final", "held", "per_token", "reason", "reasoning", "stream", "w",
                 "words")

    def __init__(self, call: Call, w: sse.ChunkWriter, words: TokenStream, reason: str,
                 flavor: Flavor, reasoning: int, stream: Stream, final: FinalFields) -> None:
        self.call = call
        self.w = w
        self.words = words
        self.reason = reason
        self.per_token = flavor.per_token_chunks
        self.reasoning = reasoning
        self.stream = stream
        self.final = final
        self.held: list[str] = []  # tokens made but not sent (a call sent whole, once done)

    @property
    def sent(self) -> int:
        """Tokens sent so far."""
        return int(self.call.record["output_tokens"])

    def next(self, n: int, finished: bool) -> bytes:
        """The events carrying the next n tokens; the trace stamps them as emitted now.
        Nothing (b"") while a call the engine sends whole is not complete."""
        words = self.words.words(n)
        if self.held:
            words, self.held = self.held + words, []
        if self.w.holds_until_done and not finished:
            self.held = words
            return b""
        sent = self.sent
        data = self.w.step(words, sent, self.reason if finished else None,
                           self.reasoning - sent,
                           self.final.of(self.stream, False) if finished else None)
        per_chunk = self.per_token and not self.w.holds_until_done
        self.call.tokens(len(words), streamed=True, chunks=len(words) if per_chunk else 1)
        return data

    def usage_fields(self) -> dict[str, Any] | None:
        """The request's own stats that ride on its usage chunk."""
        return self.final.of(self.stream, True)


class DirectChunks:
    """Writes one request's events from inside the engine step (the stream's sink).

    No task wakes up per chunk: the step formats the events, stamps them and hands them
    to the socket in one go, so the trace's emit time is when the bytes left. The
    handler sleeps until the request is finished, the client has gone, or (llama-cpp-
    python's `interrupt_requests`) another request waits and the stream is cut short.
    """

    __slots__ = ("chunked", "chunks", "gone", "interrupt", "interrupted", "stream",
                 "transport")

    def __init__(self, chunks: ContentChunks, resp: web.StreamResponse, stream: Stream,
                 interrupt: Callable[[], bool] | None) -> None:
        self.chunks = chunks
        self.stream = stream
        self.gone = False
        self.interrupted = False
        self.interrupt = interrupt
        self.chunked = resp.headers.get("Transfer-Encoding") == "chunked"  # set by prepare
        self.transport = chunks.call.request.transport

    async def run(self) -> bool:
        """True once the request is finished, False if the client went or it was cut."""
        stream = self.stream
        stream.sink = self
        if stream.pending:  # tokens of steps that ran before the sink was set
            n, stream.pending = stream.pending, 0
            self(n, stream.done)
        while not stream.done and not self.gone and not self.interrupted:
            await stream.wait()
        stream.sink = None
        return not (self.gone or self.interrupted)

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(b"%x\r\n%b\r\n" % (len(data), data) if self.chunked else data)

    def __call__(self, n: int, finished: bool) -> None:
        transport = self.transport
        if self.interrupted:
            return
        if transport is None or transport.is_closing():
            self.gone = True
            self.stream.wake()
            return
        data = self.chunks.next(n, finished)
        if data:  # an empty chunk would end a chunked body
            self._write(data)
        if not finished and self.interrupt is not None and self.interrupt():
            self._write(sse.DONE)
            self.interrupted = True
            self.stream.wake()


@dataclass(frozen=True, slots=True)
class FinalFields:
    """The top-level fields a flavour adds to a finished request's last chunk or body:
    llama.cpp's `timings` (on the last chunk, the usage chunk or else the finish chunk)
    and vLLM's `metrics.speculative_decoding` (with the server's flag; only on the usage
    chunk and the body), from the engine's stats of the request; and SGLang's `sglext`,
    in a chunk of its own (`own`)."""

    flavor: Flavor
    spec_metrics_k: int | None = None

    def of(self, stream: Stream, usage_chunk: bool) -> dict[str, Any] | None:
        spec = self.spec_metrics_k is not None and usage_chunk
        if not self.flavor.timings and not spec:
            return None
        stats = stream.slot_stats()
        fields: dict[str, Any] = {"timings": stats.timings()} if self.flavor.timings else {}
        if spec:
            fields["metrics"] = {"speculative_decoding": stats.speculative_decoding(
                self.spec_metrics_k or 0)}
        return fields

    def own(self, stream: Stream, asked: bool, block: int) -> dict[str, Any] | None:
        """The fields of the chunk of its own a flavour sends before the usage chunk:
        SGLang's `sglext` for a request that `asked` (`return_spec_tokens_details`), none
        where the server does not draft (`block` 0), as SGLang leaves it out."""
        if not (self.flavor.spec_details and asked and block):
            return None
        return {"sglext": {"spec_tokens_details": stream.slot_stats().spec_tokens_details(
            block)}}


def client_gone(call: Call) -> None:
    call.status = 499  # nginx's "client closed request"
    call.record["finish_reason"] = "abort"


class Generation:
    """Serves generation requests for one server: `await gen.serve(request, endpoint)`."""

    def __init__(self, engines: list[StepLoop], settings: Settings) -> None:
        self.engines = engines
        self.s = settings
        self.final = FinalFields(settings.flavor, settings.spec_metrics_k)

    def finish(self, call: Call, engine: StepLoop | None) -> None:
        """End the request's trace record (once) and count it in the engine's histograms."""
        if call.traced:
            return
        call.traced = True
        rec = call.record
        rec["end"] = time.time()
        rec["status"] = call.status
        if (seq := call.seq) is not None:
            rec["cached_tokens"] = max(seq.cached_tokens, 0)
            rec |= {"draft_steps": seq.drafts, "draft_tokens": seq.draft_tokens,
                    "accepted_tokens": seq.accepted}
            if seq.step_accepted is not None:
                rec["step_accepted"] = seq.step_accepted
        if call.completed and engine is not None:
            ttft = None if rec["first_token"] is None else rec["first_token"] - call.arrival
            engine.observe_finished(ttft, rec["end"] - call.arrival, rec["prompt_tokens"] or 0,
                                    rec["output_tokens"], rec["finish_reason"],
                                    call.seq.key if call.seq is not None else None)
        if self.s.trace is not None:
            self.s.trace.write(rec)

    def reject(self, request: web.Request, endpoint: Endpoint, status: int) -> None:
        """Trace a request the server turned away before reading it."""
        call = Call(request, endpoint)
        call.status = status
        self.finish(call, None)

    def error(self, call: Call, err: ApiError,
              headers: dict[str, str] | None = None) -> web.Response:
        status, body = err.response(self.s.flavor.tgi_errors)
        call.status = status
        self.finish(call, None)
        return json_response(body, status, {**(headers or {}), "X-Request-Id": call.request_id})

    async def _read(self, request: web.Request, endpoint: Endpoint) -> GenRequest:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise ApiError(413, f"request body larger than {MAX_BODY_BYTES} bytes",
                           "body") from None
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(400, "request body is not valid JSON", "body") from None
        return parse_request(endpoint, body, self.s.limits)

    async def serve(self, request: web.Request, endpoint: Endpoint) -> web.StreamResponse:
        call = Call(request, endpoint)
        try:
            gen = await self._read(request, endpoint)
        except ApiError as err:
            return self.error(call, err)
        call.record |= _asked(gen)
        fault = self.s.faults.pick()
        if fault is not None:
            call.record["fault"] = fault.kind
            if fault.kind == "error500":
                return self.error(call, ApiError(500, "simulated server error (fault)"))
            if fault.kind == "error400":
                return self.error(call, ApiError(400, "simulated bad request (fault)"))
            if fault.kind == "error429":
                return self.error(call, ApiError(429, "simulated rate limit (fault)"),
                                  {"Retry-After": f"{fault.param:g}"})
            if fault.kind == "stall_first_byte":
                await asyncio.sleep(fault.param)
        flavor = self.s.flavor
        seed = 0 if gen.greedy else self.s.seed if gen.seed is None else gen.seed
        key = digest(seed, gen.prompt_text)
        target, reason = output_length(
            key, gen.max_tokens, gen.min_tokens if flavor.honours_min_tokens else 0,
            gen.ignore_eos and flavor.honours_ignore_eos, self.s.eos_mean)
        reason = self._finish(gen, call, reason)
        engine = min(self.engines, key=lambda e: e.load)  # data parallel: least loaded
        history = gen.token_text
        if gen.endpoint == "chat":
            history += reply_token_text(self._reply(key, target, reason, gen))
        category = category_of(gen.prompt_text)
        if category is not None:
            call.record["category"] = category
        stream = engine.submit(gen.prompt_tokens, target, history, category,
                               per_step=self.s.spec_metrics_detailed)
        call.seq = stream.seq
        altered = int(fault.param) if fault is not None and fault.kind == "alter_token" else None
        words = TokenStream(key, altered)
        try:
            if gen.stream:
                return await self._stream(call, gen, engine, stream, words, reason, fault)
            return await self._unary(call, gen, engine, stream, words, reason, fault)
        except asyncio.CancelledError:
            client_gone(call)
            raise
        finally:
            engine.abort(stream)
            self.finish(call, engine)

    def _tool_call(self, gen: GenRequest, call: Call) -> ToolCallStream | None:
        """The call a reply makes, in the flavour's shape (None: a text reply)."""
        wire = self.s.flavor.tool_calls
        if gen.tool_call is None or wire is None:
            return None
        return ToolCallStream(wire, gen.tool_call, call.request_id)

    def _finish(self, gen: GenRequest, call: Call, reason: str) -> str:
        """The reply's finish reason as its engine sends it: a tool call's where it calls
        one (`call.tool`; the trace notes the call: none where the engine has no tools)."""
        tool = call.tool = self._tool_call(gen, call)
        if gen.tools:
            call.record["tool_call"] = tool.name if tool is not None else None
        return reason if tool is None else tool.finish(reason, gen.tool_named)

    def _reasoning(self, gen: GenRequest) -> int:
        """The leading tokens streamed as reasoning: the server's, unless the request
        turned thinking off."""
        return 0 if gen.thinking is False else self.s.reasoning_tokens

    def _reply(self, key: int, target: int, reason: str, gen: GenRequest) -> str:
        """The content a chat client gets (reasoning and a stripped EOS left out)."""
        words = TokenStream(key).words(target)[self._reasoning(gen):]
        if reason == "stop" and self.s.flavor.eos_text_empty:
            words = words[:-1]
        return "".join(words)

    async def _stream(self, call: Call, gen: GenRequest, engine: StepLoop, stream: Stream,
                      words: TokenStream, reason: str, fault: Fault | None
                      ) -> web.StreamResponse:
        flavor = self.s.flavor
        resp = web.StreamResponse(headers={**SSE_HEADERS, "X-Request-Id": call.request_id})
        if self.s.connection_close:
            resp.force_close()  # before prepare: the headers say `Connection: close`
        try:
            if flavor.headers_when_scheduled:
                await stream.ready()  # no headers while the request waits for a slot
            await resp.prepare(call.request)
            await self._stream_body(call, gen, resp, engine, stream, words, reason, fault)
        except ConnectionError:
            client_gone(call)
        if flavor.close_after_stream and resp.keep_alive:
            await _close_after(resp, flavor.close_after_stream_delay_s)
        return resp

    async def _stream_body(self, call: Call, gen: GenRequest, resp: web.StreamResponse,
                           engine: StepLoop, stream: Stream, words: TokenStream, reason: str,
                           fault: Fault | None) -> None:
        flavor = self.s.flavor
        w = sse.ChunkWriter(flavor, gen.endpoint == "chat",
                            sse.chunk_id(flavor, gen.endpoint == "chat", call.request_id),
                            self.s.created, self.s.limits.model_name, gen.prompt_tokens,
                            gen.include_usage, gen.continuous_usage, call.tool)
        chunks = ContentChunks(call, w, words, reason, flavor, self._reasoning(gen), stream,
                               self.final)
        if fault is not None and fault.kind == "empty":  # a clean stream without a token
            await resp.write(w.opening() + sse.DONE)
            await resp.write_eof()
            return
        if fault is None:
            direct = DirectChunks(chunks, resp, stream, self.s.interrupt)
            if not await direct.run():
                if direct.interrupted:
                    call.record["interrupted"] = True
                    await resp.write_eof()
                else:
                    client_gone(call)
                return
        elif not await self._stream_faulted(chunks, resp, stream, fault):
            return
        call.completed = True
        call.record["finish_reason"] = reason
        # traced before the tail (usage and [DONE], no tokens) is sent: a client that has
        # the whole stream finds its record, also when the server is killed right after
        # sending it (a CI run caught a success with no trace line that way)
        self.finish(call, engine)
        await resp.write(w.tail(chunks.sent, chunks.usage_fields(),
                                self.final.own(stream, gen.spec_details, engine.core.max_k)))
        await resp.write_eof()

    async def _stream_faulted(self, chunks: ContentChunks, resp: web.StreamResponse,
                              stream: Stream, fault: Fault) -> bool:
        """Stream a request picked for a fault; False if the fault ended the stream."""
        kind: str | None = fault.kind
        while True:
            n, done = await stream.wait()
            if n:
                await resp.write(chunks.next(n, done))
                if kind is not None:
                    if await self._stream_fault(chunks.call, resp, fault, chunks.sent):
                        return False
                    if kind in ("malformed", "stall_between"):
                        kind = None  # once per request
            if done:
                return True

    async def _stream_fault(self, call: Call, resp: web.StreamResponse, fault: Fault,
                            sent: int) -> bool:
        """Apply a mid-stream fault after a content chunk; True if the stream is over."""
        kind = fault.kind
        if kind == "malformed":
            await resp.write(sse.MALFORMED)
        elif kind == "stall_between":
            await asyncio.sleep(fault.param)
        elif kind == "stream_error":
            err = ApiError(500, "simulated engine error mid-stream (fault)")
            await resp.write(sse.frame(err.body()) + sse.DONE)
            await resp.write_eof()
            call.record["finish_reason"] = "error"
            return True
        elif kind == "cut" and sent >= fault.param:
            call.record["finish_reason"] = "cut"
            transport = call.request.transport
            if transport is not None:
                transport.close()
            return True
        return False

    async def _unary(self, call: Call, gen: GenRequest, engine: StepLoop, stream: Stream,
                     words: TokenStream, reason: str, fault: Fault | None
                     ) -> web.StreamResponse:
        parts: list[str] = []
        kind = fault.kind if fault else None
        while True:
            n, done = await stream.wait()
            if n:
                call.tokens(n, streamed=False)
                parts.append(words.take(n))
                if kind == "stall_between":
                    kind = None
                    await asyncio.sleep(fault.param if fault else 0.0)
            if done:
                break
        if kind == "cut":
            call.record["finish_reason"] = "cut"
            if call.request.transport is not None:
                call.request.transport.close()
            return web.Response(status=200)
        if kind == "stream_error":
            call.status = 500
            return json_response(ApiError(500, "simulated engine error (fault)").body(), 500)
        if kind == "malformed":
            return web.Response(body=b'{"id": "malformed", "choices": [', status=200,
                                content_type="application/json")
        call.completed = True
        call.record["finish_reason"] = reason
        chat = gen.endpoint == "chat"
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": reason}
        text = "".join(parts)
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        body: dict[str, Any] = {
            "id": sse.chunk_id(self.s.flavor, chat, call.request_id),
            "object": "chat.completion" if chat else "text_completion",
            "created": self.s.created, "model": self.s.limits.model_name,
            "choices": [choice],
            "usage": sse.usage(gen.prompt_tokens, call.record["output_tokens"])}
        body |= ((self.final.of(stream, True) or {})
                 | (self.final.own(stream, gen.spec_details, engine.core.max_k) or {}))
        return json_response(body, headers={"X-Request-Id": call.request_id})


def _asked(gen: GenRequest) -> dict[str, Any]:
    """What a request asked for, as its trace record keeps it: its prompt's tokens, and
    the thinking switch and tools where it set them."""
    asked: dict[str, Any] = {"prompt_tokens": gen.prompt_tokens}
    if gen.thinking is not None:
        asked["thinking"] = gen.thinking
    if gen.tools:
        asked["tools"] = list(gen.tools)
    return asked


async def _close_after(resp: web.StreamResponse, delay_s: float) -> None:
    """Close the connection once the handler returns, `delay_s` after the body ended,
    without a `Connection: close` header (the headers went out saying keep-alive).

    llama.cpp's HTTP thread returns from the request (its stream provider said "no
    more", which cpp-httplib takes for a cancel) and shuts the socket down. aiohttp
    closes the transport when a handler's response is no longer keep-alive; a request
    the client sent on the connection meanwhile is dropped unanswered, as the real
    server drops it (`drain_and_close_socket` reads and discards it).
    """
    await asyncio.sleep(delay_s)
    resp.force_close()
