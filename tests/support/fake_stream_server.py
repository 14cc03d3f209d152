"""A tiny OpenAI-style streaming server for the loadgen tests (not the simulator).

Same command-line and trace contract as `specload sim` for what the tests use: `--port 0`
prints `specload-sim listening on http://127.0.0.1:PORT`; `--trace FILE` writes one JSON
line per finished request (request_id, arrival, first_token, end, chunks, prompt_tokens,
output_tokens, finish_reason, status, fault, endpoint); `--fault KIND:FRAC[:PARAM]`
hits a seeded fraction of requests. Chunks carry 1, 3, 2, 1, 3, 2, ... tokens (like
speculative decoding) every `--step-ms`, with per-chunk usage when asked.
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
        n = int(body.get("max_tokens", 16))
        cont = self.usage and bool(body.get("stream_options", {}).get("continuous_usage_stats"))
        prompt_tokens = 7
        fault = self.pick_fault()
        kind, param = fault if fault else (None, None)
        rec = {"request_id": rid, "arrival": arrival, "first_token": None, "chunks": [],
               "prompt_tokens": prompt_tokens, "output_tokens": 0, "finish_reason": None,
               "status": 200, "fault": kind, "endpoint": "chat" if chat else "completions"}
        if kind in ("error500", "error429"):
            status = 500 if kind == "error500" else 429
            rec.update(status=status, end=time.time())
            self.write_trace(rec)
            return web.json_response(
                {"error": {"message": f"injected {kind}", "type": "server_error"}}, status=status)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if kind == "stall_first_byte":
            await asyncio.sleep(param or 5.0)

        def chunk(content: str | None, finish: str | None, done_tokens: int) -> bytes:
            if chat:
                delta = {"content": content} if content is not None else {"role": "assistant"}
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": content or "", "finish_reason": finish}
            obj: dict = {"id": rid, "object": "chunk", "choices": [choice]}
            if cont:
                obj["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": done_tokens,
                                "total_tokens": prompt_tokens + done_tokens}
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        try:
            if chat:
                await resp.write(chunk(None, None, 0))
            done, i = 0, 0
            cut_after = int(param or 4) if kind == "cut" else None
            while done < n:
                await asyncio.sleep(self.step)
                if kind == "stall_between" and i == 1:
                    await asyncio.sleep(param or 5.0)
                if cut_after is not None and done >= cut_after:
                    raise ConnectionResetError
                if kind == "malformed" and i == 2:
                    await resp.write(b"data: {not json\n\n")
                    rec["end"] = time.time()
                    self.write_trace(rec)
                    return resp
                if kind == "stream_error" and i == 2:
                    await resp.write(b'data: {"error": {"message": "injected stream_error"}}\n\n')
                    rec["end"] = time.time()
                    self.write_trace(rec)
                    return resp
                k = min(PATTERN[i % len(PATTERN)], n - done)
                done += k
                i += 1
                now = time.time()
                await resp.write(chunk("tok " * k, None, done))
                rec["first_token"] = rec["first_token"] or now
                rec["chunks"].append([now, k])
                rec["output_tokens"] = done
            await resp.write(chunk("", "length", done) if not chat else
                             b'data: {"choices": [{"index": 0, "delta": {}, '
                             b'"finish_reason": "length"}]}\n\n')
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": done,
                     "total_tokens": prompt_tokens + done}
            if self.usage:
                await resp.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode()
                                 + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
            rec["finish_reason"] = "length"
        except ConnectionResetError:
            rec["end"] = time.time()
            self.write_trace(rec)
            if request.transport is not None:
                request.transport.close()
            return resp
        rec["end"] = time.time()
        self.write_trace(rec)
        if self.hold_after_done:  # a server (or proxy) that keeps the body open
            await asyncio.sleep(self.hold_after_done)
        await resp.write_eof()
        return resp


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
