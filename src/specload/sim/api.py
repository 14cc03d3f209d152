"""The simulated server's HTTP routes (aiohttp), in the chosen engine flavour.

`POST /v1/chat/completions` and `/v1/completions` (streaming or not; `generate.py` serves
them), `GET /v1/models`, the flavour's health routes and root page, and `/metrics` in
the flavour's names (501 where the engine needs a flag for it and `--metrics` is not
given, 404 where it has none). With an API key, guarded routes answer the engine's 401
without it (`auth.py`). Connections follow the flavour too: llama.cpp's server sends
`Keep-Alive: timeout=5, max=100`, closes an idle connection after 5 s and closes it
(saying so) after every error response.
Admission follows the flavour: llama-cpp-python's server takes one request at a time
behind a lock that `/v1/models` queues on too (and, with `interrupt_requests`, a
waiting request cuts the running stream short), TGI answers 429 beyond its concurrency
limit, and llama-cpp-python rejects an `X-Request-ID` that is not a UUID with an empty
400. Errors are OpenAI-style JSON bodies (TGI's flavour: its own, a refused request a
422), unknown routes get the flavour's 404 body, and no JSON body can produce a 500
(only the `error500` fault does).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson
from aiohttp import web

from specload.sim import auth, metrics
from specload.sim.generate import MAX_BODY_BYTES, Generation, Settings, json_response
from specload.sim.openai_request import ApiError, Limits, chat_token_ids
from specload.sim.step_loop import StepLoop

HEALTH_GENERATE_TIMEOUT_S = 20.0  # SGLANG_HEALTH_CHECK_TIMEOUT's default
GENERATION_ROUTES: dict[str, Literal["chat", "completions"]] = {
    "/v1/chat/completions": "chat", "/v1/completions": "completions"}


class SimApi:
    """The routes, bound to the engine ranks and the server's settings."""

    def __init__(self, engines: list[StepLoop], settings: Settings, spec_mode: str,
                 interrupt: bool | None = None, *, api_key: str | None = None,
                 metrics_on: bool = False) -> None:
        self.engines = engines
        self.settings = settings
        self.flavor = settings.flavor
        self.limits: Limits = settings.limits
        self.spec_mode = spec_mode
        self.api_key = api_key
        self.metrics_on = metrics_on or not self.flavor.metrics_flag
        # llama.cpp's `Process-Start-Time-Unix` header holds `ggml_time_us()` at start:
        # CLOCK_MONOTONIC microseconds, not Unix time (server-common.h, server_metrics)
        self._start_us = str(int(time.monotonic() * 1e6))
        self._lock = asyncio.Lock()
        self._queued = 0  # requests waiting for the one-at-a-time lock
        self._in_flight = 0
        on = self.flavor.interrupt_default if interrupt is None else interrupt
        if self.flavor.one_at_a_time_lock and on:
            settings.interrupt = lambda: self._queued > 0
        self.generation = Generation(engines, settings)

    @property
    def engine(self) -> StepLoop:
        """The first rank (the only one without data parallelism)."""
        return self.engines[0]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES,
                              middlewares=[self._errors, self._auth])
        if self.flavor.keepalive_header is not None:
            app.on_response_prepare.append(self._keepalive_header)
        for path in self.flavor.health_paths:
            app.router.add_get(path, self.health)
        if self.flavor.root_text is not None:
            app.router.add_get("/", self.root)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/completions", self.completions)
        if self.flavor.token_count is not None:
            app.router.add_post(self.flavor.token_count[0], self.count_tokens)
        if self.flavor.info:
            app.router.add_get("/info", self.info)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Unknown routes get the flavour's 404; other HTTP errors OpenAI-style JSON;
        error responses close the connection where the engine's HTTP library does."""
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            if exc.status == 404 and self.flavor.not_found[1]:
                resp = _body(404, self.flavor.not_found)
            else:
                resp = json_response(ApiError(exc.status, exc.reason).body(), exc.status)
        if self.flavor.close_on_error and resp.status >= 400 and not resp.prepared:
            resp.force_close()  # cpp-httplib: `Connection: close` for status >= 400
        return resp

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """The engine's 401 for a guarded route without the key (before routing)."""
        rule = self.flavor.api_key
        if (self.api_key is None or rule is None
                or not auth.needs_key(rule, request.method, request.path)
                or auth.authorized(rule, self.api_key, request.headers)):
            return await handler(request)
        endpoint = GENERATION_ROUTES.get(request.path)
        if endpoint is not None and request.method == "POST":
            self.generation.reject(request, endpoint, 401)
        return _body(401, rule.error)

    async def _keepalive_header(self, request: web.Request, resp: web.StreamResponse) -> None:
        """cpp-httplib's `Keep-Alive` header on every response that keeps the connection."""
        if resp.keep_alive and self.flavor.keepalive_header:
            resp.headers["Keep-Alive"] = self.flavor.keepalive_header

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """The one-at-a-time lock of llama-cpp-python's server (a no-op elsewhere)."""
        if not self.flavor.one_at_a_time_lock:
            yield
            return
        self._queued += 1
        try:
            await self._lock.acquire()
        finally:
            self._queued -= 1
        try:
            yield
        finally:
            self._lock.release()

    # -- health, root, models, metrics ---------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        if self.flavor.health_generates and not await self._generate_one_token():
            return json_response({"error": "health check timed out"}, 503)
        if self.flavor.health_json is not None:
            return json_response(dict(self.flavor.health_json))
        return web.Response(status=200)

    async def _generate_one_token(self) -> bool:
        """SGLang's /health: a one-token generation, polled once a second until done."""
        engine = min(self.engines, key=lambda e: e.load)
        stream = engine.submit(1, 1)
        deadline = time.monotonic() + HEALTH_GENERATE_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                await asyncio.sleep(1.0)
                if stream.done:
                    return True
            return False
        finally:
            engine.abort(stream)

    async def root(self, request: web.Request) -> web.Response:
        return web.Response(text=self.flavor.root_text or "")

    async def models(self, request: web.Request) -> web.Response:
        listed: dict[str, Any] = {}
        if not self.flavor.info:  # TGI lists its context on /info only
            context: Any = self.limits.max_model_len
            for key in reversed(self.flavor.context_key[1:]):
                context = {key: context}
            listed = {self.flavor.context_key[0]: context}
        async with self._turn():
            return json_response({"object": "list", "data": [{
                "id": self.limits.model_name, "object": "model",
                "created": self.settings.created, "owned_by": "specload-sim",
                "root": self.limits.model_name, **listed, **self.flavor.model_card_extra}]})

    async def count_tokens(self, request: web.Request) -> web.Response:
        """A chat request's prompt tokens, counted as its generation would count them,
        answered as the flavour's engine does."""
        try:
            body = orjson.loads(await request.read())
            tokens = chat_token_ids(body)
        except orjson.JSONDecodeError:
            err = ApiError(400, "request body is not valid JSON")
        except ApiError as exc:
            err = exc
        else:
            return self._count_answer(tokens)
        status, answer = err.response(self.flavor.tgi_errors)
        return json_response(answer, status)

    def _count_answer(self, tokens: list[int]) -> web.Response:
        shape = self.flavor.token_count[1] if self.flavor.token_count else "vllm"
        if shape == "llamacpp":
            return json_response({"input_tokens": len(tokens),
                                  "object": "response.input_tokens"})
        if shape == "tgi":  # SimpleToken {id, text, start, stop}; no text to show here
            return json_response({"tokenize_response": [
                {"id": t, "text": "", "start": i, "stop": i} for i, t in enumerate(tokens)],
                "templated_text": ""})
        return json_response({"count": len(tokens), "max_model_len": self.limits.max_model_len,
                              "tokens": tokens})

    async def info(self, request: web.Request) -> web.Response:
        """TGI's GET /info (router/src/lib.rs `Info`), its limits from the context."""
        context = self.limits.max_model_len
        return json_response({
            "model_id": self.limits.model_name, "model_sha": None,
            "model_pipeline_tag": "text-generation",
            "max_concurrent_requests": self.flavor.max_concurrent, "max_best_of": 2,
            "max_stop_sequences": 4, "max_input_tokens": context - 1,
            self.flavor.context_key[0]: context, "validation_workers": 2,
            "max_client_batch_size": 4, "router": "text-generation-router",
            "version": "3.3.6-dev0", "sha": None, "docker_label": None})

    async def metrics(self, request: web.Request) -> web.Response:
        exposition = self.flavor.metrics
        if not self.metrics_on:  # llama.cpp without --metrics
            return json_response({"error": {
                "code": 501, "message": "This server does not support metrics endpoint. "
                "Start it with `--metrics`", "type": "not_supported_error"}}, 501)
        if exposition is None:
            raise web.HTTPNotFound()
        text = metrics.render(exposition, [e.stats() for e in self.engines],
                              self.limits.model_name)
        if exposition.rates_since_scrape:
            for engine in self.engines:
                engine.reset_buckets()
        headers = {"Content-Type": exposition.content_type, **dict(exposition.headers)}
        if exposition.start_time_header:
            headers["Process-Start-Time-Unix"] = self._start_us
        return web.Response(body=text.encode(), headers=headers)

    # -- generation --------------------------------------------------------------------

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._admit(request, "chat")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._admit(request, "completions")

    async def _admit(self, request: web.Request, endpoint: Any) -> web.StreamResponse:
        flavor = self.flavor
        if flavor.request_id == "uuid" and not _is_uuid(request.headers.get("X-Request-ID")):
            self.generation.reject(request, endpoint, 400)
            return web.Response(status=400)  # starlette-context: an empty 400
        limit = flavor.max_concurrent
        if limit is not None and self._in_flight >= limit:
            self.generation.reject(request, endpoint, 429)
            return json_response({"error": "Model is overloaded", "error_type": "overloaded"},
                                 429)
        self._in_flight += 1
        try:
            async with self._turn():
                return await self.generation.serve(request, endpoint)
        finally:
            self._in_flight -= 1


def _body(status: int, typed_body: tuple[str, bytes]) -> web.Response:
    """A response of a flavour's fixed (content type, body)."""
    ctype, body = typed_body
    return web.Response(body=body, status=status, headers={"Content-Type": ctype})


def _is_uuid(value: str | None) -> bool:
    """Absent, or a string `uuid.UUID` accepts (starlette-context's validation)."""
    if value is None:
        return True
    try:
        uuid.UUID(value, version=4)
    except ValueError:
        return False
    return True
