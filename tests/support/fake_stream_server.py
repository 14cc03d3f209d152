"""A tiny OpenAI-style streaming server for the loadgen tests (not the simulator).

Same command-line and trace contract as `specload sim` for what the tests use: `--port 0`
prints `specload-sim listening on http://127.0.0.1:PORT`; `--trace FILE` writes one JSON
line per finished request (request_id, arrival, first_token, end, chunks, prompt_tokens,
output_tokens, finish_reason, status, fault, endpoint); `--fault KIND:FRAC[:PARAM]`
hits a seeded fraction of requests. Chunks carry 1, 3, 2, 1, 3, 2, ... tokens (like
speculative decoding) every `--step-ms`, with per-chunk usage when asked. With
`--close-after-stream S` the connection closes S seconds after each stream (as llama.cpp's
server does, headers saying keep-alive) and `--connection-close` says so in a header. With
`--record-bodies` every reply is different words and the trace also holds each
request's `messages` and the reply `text` it streamed (for the chat-session tests).
`--final-fields JSON` adds that object's keys at the top of every reply's last chunk (a
made-up engine's own per-request fields).
Run: python fake_stream_server.py --port 0 [--trace F] [--fault cut:0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time

from aiohttp import web

PATTERN = (1, 3, 2)


def _parse_faults(specs: list[str]) -> list[tuple[str, float, float | None]]:
    out = []
    for spec in specs:
        parts = spec.split(":")
        out.append((parts[0], float(parts[1]), float(parts[2]) if len(parts) > 2 else None))
    return out


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.step = args.step_ms / 1000
        self.faults = _parse_faults(args.fault)
        self.rng = random.Random(args.seed)
        self.trace = open(args.trace, "a", encoding="utf-8") if args.trace else None  # noqa: SIM115
        self.counter = 0
        self.usage = not args.no_usage
        self.hold_after_done = args.hold_after_done
        self.close_after_stream = args.close_after_stream
        self.connection_close = args.connection_close
        self.record_bodies = args.record_bodies
        self.final_fields: dict = args.final_fields
        key = os.environ[args.api_key_env] if args.api_key_env else None
        self.auth = f"Bearer {key}" if key else None

    def pick_fault(self) -> tuple[str, float | None] | None:
        draw = self.rng.random()
        acc = 0.0
        for kind, frac, param in self.faults:
            acc += frac
            if draw < acc:
                return kind, param
        return None

    def write_trace(self, rec: dict) -> None:
        if self.trace:
            self.trace.write(json.dumps(rec) + "\n")
            self.trace.flush()

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model"}]})

    async def generate(self, request: web.Request) -> web.StreamResponse:
        arrival = time.time()
        if self.auth and request.headers.get("Authorization") != self.auth:
            return web.json_response({"error": {"message": "invalid API key"}}, status=401)
        body = await request.json()
        chat = request.path.endswith("chat/completions")
        rid = request.headers.get("X-Request-Id") or f"gen-{self.counter}"
        self.counter += 1
        fault = self.pick_fault()
        kind, param = fault if fault else (None, None)
        cont = self.usage and bool(body.get("stream_options", {}).get("continuous_usage_stats"))
        stream = _Stream(rid, chat, cont, kind, param)
        stream.rec["arrival"] = arrival
        if self.record_bodies:
            stream.rec.update(messages=body.get("messages"), text="")
        if kind in ("error500", "error429"):
            status = 500 if kind == "error500" else 429
            stream.rec.update(status=status, end=time.time())
            self.write_trace(stream.rec)
            return web.json_response(
                {"error": {"message": f"injected {kind}", "type": "server_error"}}, status=status)
        headers = {"Content-Type": "text/event-stream"}
        if self.connection_close:
            headers["Connection"] = "close"
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        if kind == "stall_first_byte":
            await asyncio.sleep(param or 5.0)
        try:
            finished = await stream.run(resp, int(body.get("max_tokens", 16)), self.step)
            if finished:
                await stream.finish(resp, self.usage, self.final_fields)
        except ConnectionResetError:
            stream.rec["end"] = time.time()
            self.write_trace(stream.rec)
            if request.transport is not None:
                request.transport.close()
            return resp
        stream.rec["end"] = time.time()
        self.write_trace(stream.rec)
        if finished and self.hold_after_done:  # a server (or proxy) keeping the body open
            await asyncio.sleep(self.hold_after_done)
        await self.end_body(request, resp, finished)
        return resp

    async def end_body(self, request: web.Request, resp: web.StreamResponse,
                       finished: bool) -> None:
        closing = self.close_after_stream is not None and request.transport is not None
        if closing:
            # llama-server's way: keep-alive headers, no further request read on this
            # connection, and the close a moment after the body
            request.transport.pause_reading()
        if finished:
            await resp.write_eof()
        if closing:
            asyncio.get_running_loop().call_later(self.close_after_stream,
                                                  request.transport.close)


class _Stream:
    """One streamed reply: its chunks, its faults and its trace record."""

    prompt_tokens = 7

    def __init__(self, rid: str, chat: bool, cont: bool, kind: str | None,
                 param: float | None) -> None:
        self.rid, self.chat, self.cont, self.kind, self.param = rid, chat, cont, kind, param
        self.done = 0
        self.rec: dict = {"request_id": rid, "first_token": None, "chunks": [],
                          "prompt_tokens": self.prompt_tokens, "output_tokens": 0,
                          "finish_reason": None, "status": 200, "fault": kind,
                          "endpoint": "chat" if chat else "completions"}

    def chunk(self, content: str | None, finish: str | None) -> bytes:
        if self.chat:
            delta = {"content": content} if content is not None else {"role": "assistant"}
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": content or "", "finish_reason": finish}
        obj: dict = {"id": self.rid, "object": "chunk", "choices": [choice]}
        if self.cont:
            obj["usage"] = self.usage()
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.done,
                "total_tokens": self.prompt_tokens + self.done}

    async def run(self, resp: web.StreamResponse, n: int, step: float) -> bool:
        """Stream n tokens; False when a fault ended the body (already written)."""
        if self.chat:
            await resp.write(self.chunk(None, None))
        cut_after = int(self.param or 4) if self.kind == "cut" else None
        i = 0
        while self.done < n:
            await asyncio.sleep(step)
            if self.kind == "stall_between" and i == 1:
                await asyncio.sleep(self.param or 5.0)
            if cut_after is not None and self.done >= cut_after:
                raise ConnectionResetError
            if i == 2 and self.kind in ("malformed", "stream_error"):
                await resp.write(b"data: {not json\n\n" if self.kind == "malformed" else
                                 b'data: {"error": {"message": "injected stream_error"}}\n\n')
                return False
            k = min(PATTERN[i % len(PATTERN)], n - self.done)
            self.done += k
            i += 1
            now = time.time()
            words = ("".join(f" {self.rid[:8]}w{self.done - k + j}" for j in range(k))
                     if "text" in self.rec else "tok " * k)
            await resp.write(self.chunk(words, None))
            if "text" in self.rec:
                self.rec["text"] += words
            self.rec["first_token"] = self.rec["first_token"] or now
            self.rec["chunks"].append([now, k])
            self.rec["output_tokens"] = self.done
        return True

    async def finish(self, resp: web.StreamResponse, usage: bool, extra: dict) -> None:
        await resp.write(self.chunk("", "length") if not self.chat else
                         b'data: {"choices": [{"index": 0, "delta": {}, '
                         b'"finish_reason": "length"}]}\n\n')
        last = {"choices": [], **({"usage": self.usage()} if usage else {}), **extra}
        if usage or extra:
            await resp.write(b"data: " + json.dumps(last).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        self.rec["finish_reason"] = "length"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--trace", default=None)
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-ms", type=float, default=5.0)
    p.add_argument("--no-usage", action="store_true", help="send no usage at all")
    p.add_argument("--hold-after-done", type=float, default=0.0,
                   help="seconds to keep the body open after data: [DONE]")
    p.add_argument("--close-after-stream", type=float, default=None,
                   help="close the connection this many seconds after each streamed body, "
                   "without a Connection: close header")
    p.add_argument("--connection-close", action="store_true",
                   help="send Connection: close with every streamed response")
    p.add_argument("--record-bodies", action="store_true",
                   help="trace each request's messages and the text streamed back")
    p.add_argument("--final-fields", type=json.loads, default={},
                   help="a JSON object whose keys go at the top of each reply's last chunk")
    p.add_argument("--api-key-env", default=None,
                   help="require `Authorization: Bearer <value of this variable>`")
    args = p.parse_args()
    server = Server(args)
    app = web.Application()
    app.router.add_get("/v1/models", server.models)
    app.router.add_post("/v1/chat/completions", server.generate)
    app.router.add_post("/v1/completions", server.generate)

    async def run() -> None:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        print(f"specload-sim listening on http://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
