"""The step loop: runs `EngineCore` steps on the wall clock, as a simulated server does.

The only part of the simulator that touches the clock. Steps follow an anchored
schedule: each step's deadline is the previous deadline plus the step's modelled
duration, so timer jitter is absorbed instead of accumulating. When the loop wakes
more than `REANCHOR_S` after a deadline (the process could not keep up), it gives the
schedule up and restarts from now; the time given up is the engine lag, exported as
`specload_sim_engine_lag_seconds_total` and as a ratio of the busy time, and warned
about on stderr when it exceeds 1% over a window. Tokens reach HTTP handlers through
one `Stream` mailbox per request: either a synchronous sink that writes the chunk
inside the step (the hot path: no task wake-up per chunk, and the chunk leaves at the
moment it is stamped) or, for requests that need to await between chunks, a waiter
that the step wakes when the request got tokens. The engine also stamps, in loop time,
when each request's prefill started and when its first and last tokens came, and
adds a finished or aborted request's stats to llama.cpp-style totals at that moment
(`slot_stats.py`: llama-server counts tokens and drafts only when a slot is released).
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from collections.abc import Callable

from specload.sim.core import EngineCore
from specload.sim.metrics import FINISH_REASONS, RankStats
from specload.sim.scheduler import Seq
from specload.sim.slot_stats import SlotStats, SlotTotals

REANCHOR_S = 0.02
LAG_WARN_RATIO = 0.01
LAG_WINDOW_S = 5.0
# Steps behind the "recent" gauges (SGLang logs its acceptance gauges every 40 batches).
RECENT_STEPS = 40


Sink = Callable[[int, bool], None]


class Stream:
    """Mailbox between the engine and the handler of one request.

    With a `sink` set, each push hands the new tokens straight to it and the waiter
    only wakes at the end (or when `wake` is called, e.g. because the client left).
    A sink must not raise: it runs inside the engine step.
    """

    __slots__ = ("done", "first", "last", "pending", "queued", "seq", "sink", "started",
                 "waiter")

    def __init__(self, seq: Seq) -> None:
        self.seq = seq
        self.pending = 0
        self.done = False
        self.sink: Sink | None = None
        self.waiter: asyncio.Future[None] | None = None
        # loop times: it was queued, the step that admitted it began, its first and its
        # last token
        self.queued = self.started = self.first = self.last = 0.0

    def slot_stats(self) -> SlotStats:
        """The request's stats so far, as a llama.cpp slot keeps them."""
        seq = self.seq
        cached = max(seq.cached_tokens, 0)
        return SlotStats(
            prompt_cached=cached, prompt_processed=seq.prompt_tokens - cached,
            generated=seq.generated, drafts=seq.drafts, draft_tokens=seq.draft_tokens,
            accepted=seq.accepted, accept_hist=tuple(seq.accept_hist),
            step_accepted=tuple(seq.step_accepted or ()),
            step_drafted=tuple(seq.step_drafted or ()),
            prompt_s=max(self.first - self.started, 0.0) if self.first else 0.0,
            gen_s=self.last - self.first)

    async def ready(self) -> None:
        """Wait until tokens are pending or the request is done (nothing is taken)."""
        if not self.pending and not self.done:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None

    async def wait(self) -> tuple[int, bool]:
        """Wait for tokens or the end; returns (new tokens, finished) and clears them."""
        await self.ready()
        n, self.pending = self.pending, 0
        return n, self.done

    def push(self, n: int, finished: bool) -> None:
        if self.sink is not None:
            self.sink(n, finished)
            if not finished:
                return
        else:
            self.pending += n
        self.done = finished
        self.wake()

    def wake(self) -> None:
        """Wake the handler waiting in `wait` (no-op if it is not waiting)."""
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)


class LagMeter:
    """Busy time, lag given up, and the windowed ratio that triggers the warning."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.busy_s = 0.0
        self.lag_s = 0.0
        self._warn = warn
        self._win_busy = 0.0
        self._win_lag = 0.0

    @property
    def ratio(self) -> float:
        total = self.busy_s + self.lag_s
        return self.lag_s / total if total else 0.0

    def add(self, busy: float, lag: float) -> None:
        self.busy_s += busy
        self.lag_s += lag
        self._win_busy += busy
        self._win_lag += lag
        if self._win_busy + self._win_lag >= LAG_WINDOW_S:
            ratio = self._win_lag / (self._win_busy + self._win_lag)
            if ratio > LAG_WARN_RATIO:
                self._warn(f"specload-sim: warning: engine lag {ratio:.1%} over the last "
                           f"{LAG_WINDOW_S:g} s (the simulator is slower than its model)")
            self._win_busy = self._win_lag = 0.0


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class StepLoop:
    """Owns the core and the step loop; HTTP handlers submit and abort requests."""

    def __init__(self, core: EngineCore, warn: Callable[[str], None] = _stderr) -> None:
        self.core = core
        self.lag = LagMeter(warn)
        self._stats = RankStats(0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0, 0.0, 0.0,
                                0.0, spec_positions=core.max_k)
        # (loop time, drafts, draft tokens, accepted, generated) after each recent step
        self._recent: deque[tuple[float, int, int, int, int]] = deque(maxlen=RECENT_STEPS)
        self._wake = asyncio.Event()
        self.slots = SlotTotals()
        # what llama.cpp's rate gauges count from: (prefill tokens, prefill s, generated
        # steps, generation µs) at the last /metrics that reset them
        self._bucket_base = (0, 0.0, 0, 0)

    @property
    def load(self) -> int:
        """Requests this engine holds (running and waiting), for data-parallel dispatch."""
        return self.core.num_running + self.core.num_waiting

    def submit(self, prompt_tokens: int, target_tokens: int, token_text: str = "",
               category: str | None = None, per_step: bool = False) -> Stream:
        """Queue a request; `token_text` is its prompt as fixed-width tokens, for the
        prefix cache, followed for a chat by its reply as the next turn will send it;
        `category`: its prompt's, where known; `per_step`: keep its drafts step by step."""
        seq = Seq(key=None, prompt_tokens=prompt_tokens, target_tokens=target_tokens,
                  blocks=self.core.block_keys(token_text), category=category,
                  step_accepted=[] if per_step else None,
                  step_drafted=[] if per_step else None)
        stream = Stream(seq)
        stream.queued = asyncio.get_running_loop().time()
        seq.key = stream
        self.core.add(seq)
        self._wake.set()
        return stream

    def abort(self, stream: Stream) -> None:
        if not stream.seq.finished:
            self.core.abort(stream.seq)
            self._release(stream)

    def _release(self, stream: Stream) -> None:
        """A request leaves its slot: its tokens and drafts join the totals (llama.cpp's
        `callback_on_reset`, only when it generated anything)."""
        if stream.seq.generated:
            self.slots.add(stream.slot_stats(), stream.seq.computed)

    def observe_finished(self, ttft_s: float | None, e2e_s: float, prompt_tokens: int,
                         output_tokens: int, reason: str | None = None,
                         stream: Stream | None = None) -> None:
        """A finished request in the histograms: `reason` its finish_reason, `stream` its
        mailbox, whose stamps give the time it waited to be scheduled."""
        st = self._stats
        if ttft_s is not None:
            st.ttft.observe(ttft_s)
        st.e2e.observe(e2e_s)
        st.prompt_len.observe(prompt_tokens)
        st.output_len.observe(output_tokens)
        st.finished += 1
        key = reason if reason in FINISH_REASONS else "stop"
        st.finished_by_reason[key] = st.finished_by_reason.get(key, 0) + 1
        if stream is not None and stream.started:
            st.queue_time.observe(max(stream.started - stream.queued, 0.0))

    def stats(self) -> RankStats:
        """This rank's numbers for /metrics, with the recent-step gauges computed now."""
        core, c, st = self.core, self.core.counters, self._stats
        st.running, st.waiting, st.kv_usage = core.num_running, core.num_waiting, core.kv_usage
        st.prompt_tokens, st.generation_tokens = c.prompt_tokens, c.generation_tokens
        st.preemptions, st.steps = c.preemptions, c.steps
        st.drafts, st.draft_tokens, st.accepted = c.drafts, c.draft_tokens, c.accepted_tokens
        st.accepted_per_pos = c.accepted_per_pos
        st.busy_s, st.lag_s, st.lag_ratio = self.lag.busy_s, self.lag.lag_s, self.lag.ratio
        former = core.former
        st.prefix_queries, st.prefix_hits = former.prefix_queries, former.prefix_hits
        st.cache_hit_rate = former.admit_hit_rate
        st.prefill_tokens, st.prefill_s, st.busy_seqs = c.prefill_tokens, c.prefill_s, c.busy_seqs
        st.slots = self.slots
        st.tokens_max = max([self.slots.tokens_max, *(s.computed for s in former.running)])
        st.prompt_rate, st.predicted_rate = self._bucket_rates()
        if len(self._recent) >= 2:
            (t0, d0, dt0, a0, g0), (t1, d1, dt1, a1, g1) = self._recent[0], self._recent[-1]
            st.recent_accept_length = 1.0 + (a1 - a0) / (d1 - d0) if d1 > d0 else 0.0
            st.recent_accept_rate = (a1 - a0) / (dt1 - dt0) if dt1 > dt0 else 0.0
            st.recent_gen_tok_s = (g1 - g0) / (t1 - t0) if t1 > t0 else 0.0
        return st

    def _bucket(self) -> tuple[int, float, int, int]:
        c, sl = self.core.counters, self.slots
        return c.prefill_tokens, c.prefill_s, sl.predicted_steps, sl.predicted_us

    def _bucket_rates(self) -> tuple[float, float]:
        """Prompt and generation tokens/s since the last reset (llama.cpp's
        `bucket::n_per_second`: 0 without time)."""
        now, base = self._bucket(), self._bucket_base
        tokens, secs = now[0] - base[0], now[1] - base[1]
        steps, us = now[2] - base[2], now[3] - base[3]
        return (tokens / secs if secs > 0 else 0.0, steps / us * 1e6 if us > 0 else 0.0)

    def reset_buckets(self) -> None:
        """Start the rate gauges' window again (llama.cpp does it on every scrape)."""
        self._bucket_base = self._bucket()

    async def run(self) -> None:
        """Step forever (cancel the task to stop)."""
        loop = asyncio.get_running_loop()
        core = self.core
        anchor = loop.time()
        while True:
            began = loop.time()
            result = core.step()
            if result is None:
                self._wake.clear()
                await self._wake.wait()
                anchor = loop.time()
                continue
            deadline = anchor + result.cost.total
            delay = deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            now = loop.time()
            late = now - deadline
            if late > REANCHOR_S:
                anchor = now
                self.lag.add(result.cost.total, late)
            else:
                anchor = deadline
                self.lag.add(result.cost.total, 0.0)
            c = core.counters
            self._recent.append((now, c.drafts, c.draft_tokens, c.accepted_tokens,
                                 c.generation_tokens))
            for seq in result.admitted:
                if not seq.key.started:
                    seq.key.started = began
            st = self._stats
            st.iteration_tokens.observe(result.prefill_tokens + sum(n for _, n in result.emitted))
            for seq, n in result.emitted:
                stream = seq.key
                if not stream.first:
                    stream.first = now
                else:
                    st.itl.observe(now - stream.last)
                stream.last = now
                stream.push(n, seq.finished)
                if seq.finished:
                    self._release(stream)
