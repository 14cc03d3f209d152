"""A light closed-loop streaming client for measuring the simulator itself.

Used by `scripts/bench_sim.py` and the real-time-vs-virtual tests, not by sweeps
(those use Locust). C asyncio tasks each stream `/v1/completions` requests back to
back with `ignore_eos` and `continuous_usage_stats`, so every chunk says exactly how
many tokens it carried; tokens are counted by arrival time inside the measure window
(token-time accounting, the same definition sim-curve and the report use).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
import orjson

from specload.sim.textgen import CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What the client saw inside the measure window."""

    users: int
    window_s: float
    tokens: int
    chunks: int
    requests: int  # requests finished inside the window
    errors: int

    @property
    def tok_s(self) -> float:
        return self.tokens / self.window_s if self.window_s > 0 else 0.0


def prompt_of(tokens: int, request: int = 0) -> str:
    """A completions prompt the simulator counts as exactly `tokens` tokens. Each request
    number starts it differently, so no two requests share a prefix-cache block: a
    throughput probe must not run on cache hits that `sim-curve` does not model."""
    text = "x" * (tokens * CHARS_PER_TOKEN)
    tag = f"{request}-"
    return tag + text[len(tag):] if len(tag) <= len(text) else text


class _Window:
    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end
        self.tokens = self.chunks = self.requests = self.errors = 0

    def inside(self, t: float) -> bool:
        return self.start <= t < self.end


async def _user(session: aiohttp.ClientSession, url: str, body: Callable[[], bytes],
                win: _Window) -> None:
    while time.monotonic() < win.end:
        try:
            async with session.post(url, data=body(),
                                    headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 200:
                    win.errors += 1
                    await resp.read()
                    continue
                sent = 0
                async for line in resp.content:
                    if not line.startswith(b"data: {"):
                        continue
                    now = time.monotonic()
                    usage = orjson.loads(line[6:]).get("usage")
                    done = usage["completion_tokens"] if usage else sent
                    if done > sent and win.inside(now):
                        win.tokens += done - sent
                        win.chunks += 1
                    sent = done
                if win.inside(time.monotonic()):
                    win.requests += 1
        except (TimeoutError, aiohttp.ClientError):
            win.errors += 1


async def closed_loop(base_url: str, users: int, *, warmup_s: float, measure_s: float,
                      prompt_tokens: int, max_tokens: int) -> ProbeResult:
    """Run `users` closed-loop streaming users and measure the window after warm-up."""
    numbers = itertools.count()

    def body() -> bytes:
        return orjson.dumps({"prompt": prompt_of(prompt_tokens, next(numbers)),
                             "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
                             "stream_options": {"include_usage": True,
                                                "continuous_usage_stats": True}})

    start = time.monotonic() + warmup_s
    win = _Window(start, start + measure_s)
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        url = base_url.rstrip("/") + "/v1/completions"
        tasks = [asyncio.create_task(_user(session, url, body, win)) for _ in range(users)]
        await asyncio.sleep(max(0.0, win.end - time.monotonic()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return ProbeResult(users, measure_s, win.tokens, win.chunks, win.requests, win.errors)
