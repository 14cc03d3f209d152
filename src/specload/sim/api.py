"""OpenAI-compatible HTTP routes of the simulated server (aiohttp).

`POST /v1/chat/completions` and `/v1/completions` (streaming and not), `GET /v1/models`,
`/health` and `/metrics`. A generation request is validated, maybe picked for a fault,
given a deterministic length and text, submitted to the engine, and streamed one SSE
chunk per engine step that produced its tokens. Every finished request, including
rejected ones, becomes one trace record. Errors are OpenAI-style JSON bodies; no JSON
body can produce a 500 (only the `error500` fault does).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Literal

import orjson
from aiohttp import web

from specload.sim import sse
from specload.sim.arrival import received_at
from specload.sim.engine import Engine, Stream
from specload.sim.faults import Fault, FaultPicker
from specload.sim.metrics import Sample, render
from specload.sim.openai_request import ApiError, GenRequest, Limits, parse_request
from specload.sim.textgen import TokenStream, digest, output_length
from specload.sim.trace import TraceWriter

MAX_BODY_BYTES = 4 * 1024 * 1024
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, headers=headers,
                        content_type="application/json")


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Unknown routes and methods answer with OpenAI-style JSON too."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _json(ApiError(exc.status, exc.reason).body(), exc.status)


class _Call:
    """One generation request's state while it is served."""

    def __init__(self, request: web.Request, endpoint: str) -> None:
        self.request = request
        self.arrival = received_at(request.transport) or time.time()
        self.request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex
        self.record: dict[str, Any] = {
            "request_id": self.request_id, "arrival": self.arrival, "first_token": None,
            "end": None, "chunks": [], "prompt_tokens": None, "output_tokens": 0,
            "finish_reason": None, "status": 200, "fault": None, "endpoint": endpoint}
        self.completed = False
        self.status = 200

    def tokens(self, n: int, streamed: bool) -> None:
        now = time.time()
        rec = self.record
        if rec["first_token"] is None:
            rec["first_token"] = now
        if streamed:
            rec["chunks"].append([now, n])
        rec["output_tokens"] += n


class SimApi:
    """The routes, bound to one engine and its configuration."""

    def __init__(self, engine: Engine, limits: Limits, eos_mean: int, seed: int,
                 faults: FaultPicker, trace: TraceWriter | None, spec_mode: str) -> None:
        self.engine = engine
        self.limits = limits
        self.eos_mean = eos_mean
        self.seed = seed
        self.faults = faults
        self.trace = trace
        self.spec_mode = spec_mode
        self.created = int(time.time())
        self._labels = f'engine="0",model_name="{_label_value(limits.model_name)}"'

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_json_errors])
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/completions", self.completions)
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        return _json({"object": "list", "data": [{
            "id": self.limits.model_name, "object": "model", "created": self.created,
            "owned_by": "specload-sim", "root": self.limits.model_name,
            "max_model_len": self.limits.max_model_len}]})

    async def metrics(self, request: web.Request) -> web.Response:
        core, lag = self.engine.core, self.engine.lag
        c = core.counters
        samples = [
            Sample("vllm:num_requests_running", "gauge", "Requests in the running batch.",
                   core.num_running),
            Sample("vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled.",
                   core.num_waiting),
            Sample("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage, 1 = full.",
                   core.kv_usage),
            Sample("vllm:prompt_tokens", "counter", "Prefill tokens processed.", c.prompt_tokens),
            Sample("vllm:generation_tokens", "counter", "Generated tokens.", c.generation_tokens),
            Sample("vllm:num_preemptions", "counter", "Preempted requests.", c.preemptions),
            Sample("vllm:request_success", "counter", "Finished requests.",
                   self.engine.finished_requests),
            Sample("vllm:spec_decode_num_drafts", "counter", "Speculative draft rounds.",
                   c.drafts),
            Sample("vllm:spec_decode_num_draft_tokens", "counter", "Draft tokens proposed.",
                   c.draft_tokens),
            Sample("vllm:spec_decode_num_accepted_tokens", "counter", "Draft tokens accepted.",
                   c.accepted_tokens),
            Sample("specload_sim_engine_steps", "counter", "Engine steps run.", c.steps),
            Sample("specload_sim_engine_busy_seconds", "counter",
                   "Modelled duration of all steps run.", lag.busy_s),
            Sample("specload_sim_engine_lag_seconds", "counter",
                   "Time the real-time engine fell behind its schedule and gave up.", lag.lag_s),
            Sample("specload_sim_engine_lag_ratio", "gauge",
                   "lag / (busy + lag) since start; above 0.01 the simulator is too slow.",
                   lag.ratio),
        ]
        hists = [("vllm:time_to_first_token_seconds", "Time to first token (server side).",
                  self.engine.ttft),
                 ("vllm:e2e_request_latency_seconds", "End-to-end request latency.",
                  self.engine.e2e)]
        return web.Response(text=render(samples, hists, self._labels),
                            content_type="text/plain", charset="utf-8",
                            headers={"X-Prometheus-Format": "0.0.4"})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "chat")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "completions")

    # -- generation ---------------------------------------------------------------------

    def _finish(self, call: _Call) -> None:
        rec = call.record
        rec["end"] = time.time()
        rec["status"] = call.status
        if call.completed:
            ttft = None if rec["first_token"] is None else rec["first_token"] - call.arrival
            self.engine.observe_finished(ttft, rec["end"] - call.arrival)
        if self.trace is not None:
            self.trace.write(rec)

    def _error(self, call: _Call, err: ApiError,
               headers: dict[str, str] | None = None) -> web.Response:
        call.status = err.status
        self._finish(call)
        return _json(err.body(), err.status, {**(headers or {}),
                                               "X-Request-Id": call.request_id})

    async def _read(self, request: web.Request, endpoint: Literal["chat", "completions"]
                    ) -> GenRequest:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise ApiError(413, f"request body larger than {MAX_BODY_BYTES} bytes",
                           "body") from None
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ApiError(400, "request body is not valid JSON", "body") from None
        return parse_request(endpoint, body, self.limits)

    async def _generate(self, request: web.Request,
                        endpoint: Literal["chat", "completions"]) -> web.StreamResponse:
        call = _Call(request, endpoint)
        try:
            gen = await self._read(request, endpoint)
        except ApiError as err:
            return self._error(call, err)
        call.record["prompt_tokens"] = gen.prompt_tokens
        fault = self.faults.pick()
        if fault is not None:
            call.record["fault"] = fault.kind
            if fault.kind == "error500":
                return self._error(call, ApiError(500, "simulated server error (fault)"))
            if fault.kind == "error429":
                return self._error(call, ApiError(429, "simulated rate limit (fault)"),
                                   {"Retry-After": f"{fault.param:g}"})
            if fault.kind == "stall_first_byte":
                await asyncio.sleep(fault.param)
        key = digest(self.seed if gen.seed is None else gen.seed, gen.prompt_text)
        target, reason = output_length(key, gen.max_tokens, gen.min_tokens, gen.ignore_eos,
                                       self.eos_mean)
        stream = self.engine.submit(gen.prompt_tokens, target)
        try:
            if gen.stream:
                return await self._stream(call, gen, stream, TokenStream(key), reason, fault)
            return await self._unary(call, gen, stream, TokenStream(key), reason, fault)
        except asyncio.CancelledError:
            _client_gone(call)
            raise
        finally:
            self.engine.abort(stream)
            self._finish(call)

    async def _stream(self, call: _Call, gen: GenRequest, stream: Stream, words: TokenStream,
                      reason: str, fault: Fault | None) -> web.StreamResponse:
        resp = web.StreamResponse(headers={**SSE_HEADERS, "X-Request-Id": call.request_id})
        try:
            await resp.prepare(call.request)
            await self._stream_body(call, gen, resp, stream, words, reason, fault)
        except ConnectionError:
            _client_gone(call)
        return resp

    async def _stream_body(self, call: _Call, gen: GenRequest, resp: web.StreamResponse,
                           stream: Stream, words: TokenStream, reason: str,
                           fault: Fault | None) -> None:
        w = sse.ChunkWriter(gen.endpoint == "chat", _response_id(gen, call), self.created,
                            self.limits.model_name, gen.prompt_tokens, gen.continuous_usage)
        if w.chat:
            await resp.write(w.role())
        chunks = _ContentChunks(call, w, words, reason)
        if fault is None:
            if not await _DirectChunks(chunks, resp, stream).run():
                _client_gone(call)
                return
        elif not await self._stream_faulted(chunks, resp, stream, fault):
            return
        call.completed = True
        call.record["finish_reason"] = reason
        tail = (w.usage_chunk(chunks.sent) if gen.include_usage else b"") + sse.DONE
        await resp.write(tail)
        await resp.write_eof()

    async def _stream_faulted(self, chunks: _ContentChunks, resp: web.StreamResponse,
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

    async def _stream_fault(self, call: _Call, resp: web.StreamResponse, fault: Fault,
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

    async def _unary(self, call: _Call, gen: GenRequest, stream: Stream, words: TokenStream,
                     reason: str, fault: Fault | None) -> web.StreamResponse:
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
            return _json(ApiError(500, "simulated engine error (fault)").body(), 500)
        if kind == "malformed":
            return web.Response(body=b'{"id": "malformed", "choices": [', status=200,
                                content_type="application/json")
        call.completed = True
        call.record["finish_reason"] = reason
        text = "".join(parts)
        n = call.record["output_tokens"]
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": reason,
                                  "stop_reason": None}
        if gen.endpoint == "chat":
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        return _json({"id": _response_id(gen, call), "object": "chat.completion"
                      if gen.endpoint == "chat" else "text_completion",
                      "created": self.created, "model": self.limits.model_name,
                      "choices": [choice], "usage": sse.usage(gen.prompt_tokens, n)},
                     headers={"X-Request-Id": call.request_id})


class _ContentChunks:
    """A streamed request's content chunks: the bytes of the next one, recorded as sent."""

    __slots__ = ("call", "reason", "w", "words")

    def __init__(self, call: _Call, w: sse.ChunkWriter, words: TokenStream,
                 reason: str) -> None:
        self.call = call
        self.w = w
        self.words = words
        self.reason = reason

    @property
    def sent(self) -> int:
        """Tokens sent so far."""
        return int(self.call.record["output_tokens"])

    def next(self, n: int, finished: bool) -> bytes:
        """The chunk carrying the next n tokens; the trace stamps it as emitted now."""
        data = self.w.content(self.words.take(n), self.sent + n,
                              self.reason if finished else None)
        self.call.tokens(n, streamed=True)
        return data


class _DirectChunks:
    """Writes one request's content chunks from inside the engine step (the stream's sink).

    No task wakes up per chunk: the step formats the chunk, stamps it and hands it to
    the socket in one go, so the trace's emit time is when the bytes left. The handler
    sleeps until the request is finished or the client has gone.
    """

    __slots__ = ("chunked", "chunks", "gone", "stream", "transport")

    def __init__(self, chunks: _ContentChunks, resp: web.StreamResponse,
                 stream: Stream) -> None:
        self.chunks = chunks
        self.stream = stream
        self.gone = False
        self.chunked = resp.headers.get("Transfer-Encoding") == "chunked"  # set by prepare
        self.transport = chunks.call.request.transport

    async def run(self) -> bool:
        """True once the request is finished, False if the client went away."""
        stream = self.stream
        stream.sink = self
        if stream.pending:  # tokens of steps that ran before the sink was set
            n, stream.pending = stream.pending, 0
            self(n, stream.done)
        while not stream.done and not self.gone:
            await stream.wait()
        stream.sink = None
        return not self.gone

    def __call__(self, n: int, finished: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            self.gone = True
            self.stream.wake()
            return
        data = self.chunks.next(n, finished)
        transport.write(b"%x\r\n%b\r\n" % (len(data), data) if self.chunked else data)


def _label_value(text: str) -> str:
    """Escape a Prometheus label value."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _client_gone(call: _Call) -> None:
    call.status = 499  # nginx's "client closed request"
    call.record["finish_reason"] = "abort"


def _response_id(gen: GenRequest, call: _Call) -> str:
    return ("chatcmpl-" if gen.endpoint == "chat" else "cmpl-") + call.request_id
