"""Virtual-time closed-loop runs of the engine core: steady-state throughput, no sleeping.

Steady state here means: C users each send a request (the profile's default prompt and
output lengths, output exactly `output_tokens` as with `ignore_eos`, or drawn per
request by a draw such as `workload.LengthSpec.sample`), and the moment one finishes its
user sends the next one, `CLIENT_RTT_S` later (the loopback round trip a real client
adds). The first `2·C` completions are warm-up; throughput is measured over the next
`max(3·C, 30)` completions (`DRAWN_WINDOWS` times as many when lengths are drawn, so
that their mean settles) as tokens emitted in that window divided by its length (token-
time accounting, as the load generator does). The same `EngineCore` the real-time server
uses runs the steps; only the clock differs. A prompt may begin with a prefix every
request shares (`shared_prefix_tokens`: one document, kept by the prefix cache). With
`categories`, the requests take those prompt categories in turn (a mix: the profile's
`acceptance_by_category` applies to each), and the point also gives each category's mean
end-to-end time (arrival to last token, queueing included).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from specload.sim.core import EngineCore, SpecMode
from specload.sim.profile import Profile
from specload.sim.scheduler import Seq
from specload.sim.textgen import CHARS_PER_TOKEN

CLIENT_RTT_S = 0.001
DRAWN_WINDOWS = 10


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """Steady-state figures at one concurrency."""

    users: int
    output_tok_s: float  # system output tokens per second
    per_user_tok_s: float  # mean 1 / TPOT of requests finished in the window
    ttft_ms: float  # mean server-side TTFT of those requests
    mean_batch: float  # mean requests per step
    tokens_per_chunk: float  # mean tokens a request emits per step that emits any
    preemptions_per_s: float
    window_s: float  # virtual seconds measured
    accept_len: float = 0.0  # 1 + accepted / drafts over the window; 0 without drafts
    # per prompt category (runs with `categories`): the mean arrival-to-last-token seconds
    e2e_s_by_category: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(slots=True)
class _Req:
    user: int
    arrival: float
    first: float | None = None


@dataclass(slots=True)
class _Tally:
    """What the measuring window saw."""

    tokens: int = 0
    chunks: int = 0
    steps: int = 0
    batch_sum: int = 0
    tpot_rates: list[float] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)
    e2e: dict[str, list[float]] = field(default_factory=dict)

    def finished(self, seq: Seq, req: _Req, t: float) -> None:
        assert req.first is not None
        self.ttfts.append(req.first - req.arrival)
        if seq.category is not None:
            self.e2e.setdefault(seq.category, []).append(t - req.arrival)
        if seq.target_tokens > 1 and t > req.first:
            self.tpot_rates.append((seq.target_tokens - 1) / (t - req.first))


def run_closed_loop(profile: Profile, mode: SpecMode, k: int | None, users: int, *,
                    seed: int = 0, prompt_tokens: int | None = None,
                    output_tokens: int | Callable[[random.Random], int] | None = None,
                    rtt_s: float = CLIENT_RTT_S,
                    categories: Sequence[str] = (), adaptive: str | None = None,
                    shared_prefix_tokens: int | None = None) -> CurvePoint:
    """Simulate `users` closed-loop users until steady state; see the module docstring.
    `adaptive` names the engine controller `--spec adaptive` runs (`core.ADAPTIVE`)."""
    core = EngineCore(profile, mode, k, seed, adaptive=adaptive)
    prompt = prompt_tokens or profile.workload.prompt_tokens
    shared = min(prompt - 1, profile.workload.shared_prefix_tokens
                 if shared_prefix_tokens is None else shared_prefix_tokens)
    output = output_tokens or profile.workload.output_tokens
    drawn = random.Random(seed)
    length = (lambda: output(drawn)) if callable(output) else (lambda: output)
    warm_done = 2 * users
    stop_at = warm_done + max(3 * users, 30) * (DRAWN_WINDOWS if callable(output) else 1)
    arrivals: list[tuple[float, int]] = [(0.0, u) for u in range(users)]
    t = 0.0
    completed = sent = pre0 = drafts0 = accepted0 = 0
    start: float | None = None
    tally = _Tally()
    while completed < stop_at:
        while arrivals and arrivals[0][0] <= t:
            at, user = heapq.heappop(arrivals)
            category = categories[sent % len(categories)] if categories else None
            sent += 1
            core.add(Seq(key=_Req(user, at), prompt_tokens=prompt, target_tokens=length(),
                         category=category, blocks=_blocks(core, prompt, shared, sent)))
        res = core.step()
        if res is None:
            t = arrivals[0][0]
            continue
        t += res.cost.total
        measuring = start is not None
        if measuring:
            tally.steps += 1
            tally.batch_sum += res.batch_size
        for seq, n in res.emitted:
            req: _Req = seq.key
            if req.first is None:
                req.first = t
            if measuring:
                tally.tokens += n
                tally.chunks += 1
            if seq.finished:
                completed += 1
                heapq.heappush(arrivals, (t + rtt_s, req.user))
                if measuring:
                    tally.finished(seq, req, t)
        if start is None and completed >= warm_done:
            start = t
            pre0 = core.counters.preemptions
            drafts0, accepted0 = core.counters.drafts, core.counters.accepted_tokens
    window = t - (start or 0.0)
    drafts = core.counters.drafts - drafts0
    accept_len = 1 + (core.counters.accepted_tokens - accepted0) / drafts if drafts else 0.0
    return _point(users, tally, window, core.counters.preemptions - pre0, accept_len)


def _blocks(core: EngineCore, prompt: int, shared: int, n: int) -> tuple[int, ...]:
    """The prefix cache's keys of request `n`'s prompt: its first `shared` tokens the
    same for every request, the rest its own."""
    if not shared:
        return ()
    own = f"{n:08x}" * -(-(prompt - shared) * CHARS_PER_TOKEN // 8)
    return core.block_keys("s" * shared * CHARS_PER_TOKEN + own[:(prompt - shared)
                                                               * CHARS_PER_TOKEN])


def _point(users: int, tally: _Tally, window: float, preemptions: int,
           accept_len: float) -> CurvePoint:
    return CurvePoint(
        users=users,
        output_tok_s=tally.tokens / window if window > 0 else 0.0,
        per_user_tok_s=(sum(tally.tpot_rates) / len(tally.tpot_rates) if tally.tpot_rates
                        else 0.0),
        ttft_ms=1000 * sum(tally.ttfts) / len(tally.ttfts) if tally.ttfts else 0.0,
        mean_batch=tally.batch_sum / tally.steps if tally.steps else 0.0,
        tokens_per_chunk=tally.tokens / tally.chunks if tally.chunks else 0.0,
        preemptions_per_s=preemptions / window if window > 0 else 0.0,
        window_s=window,
        e2e_s_by_category={c: sum(v) / len(v) for c, v in sorted(tally.e2e.items())},
        accept_len=accept_len,
    )
