"""Virtual-time closed-loop runs of the engine core: steady-state throughput, no sleeping.

Steady state here means: C users each send a request (the profile's default prompt
and output lengths, output exactly `output_tokens` as with `ignore_eos`), and the
moment one finishes its user sends the next one, `CLIENT_RTT_S` later (the loopback
round trip a real client adds). The first `2·C` completions are warm-up; throughput
is measured over the next `max(3·C, 30)` completions as tokens emitted in that
window divided by its length (token-time accounting, as the load generator does).
The same `EngineCore` the real-time server uses runs the steps; only the clock differs.
"""

from __future__ import annotations

import heapq
from dataclasses import asdict, dataclass

from specload.sim.core import EngineCore, SpecMode
from specload.sim.profile import Profile
from specload.sim.scheduler import Seq

CLIENT_RTT_S = 0.001


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

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(slots=True)
class _Req:
    user: int
    arrival: float
    first: float | None = None


def run_closed_loop(profile: Profile, mode: SpecMode, k: int | None, users: int, *,
                    seed: int = 0, prompt_tokens: int | None = None,
                    output_tokens: int | None = None,
                    rtt_s: float = CLIENT_RTT_S) -> CurvePoint:
    """Simulate `users` closed-loop users until steady state; see the module docstring."""
    core = EngineCore(profile, mode, k, seed)
    prompt = prompt_tokens or profile.workload.prompt_tokens
    output = output_tokens or profile.workload.output_tokens
    warm_done = 2 * users
    stop_at = warm_done + max(3 * users, 30)
    arrivals: list[tuple[float, int]] = [(0.0, u) for u in range(users)]
    t = 0.0
    completed = 0
    start: float | None = None
    tokens = chunks = steps = batch_sum = pre0 = 0
    tpot_rates: list[float] = []
    ttfts: list[float] = []
    while completed < stop_at:
        while arrivals and arrivals[0][0] <= t:
            at, user = heapq.heappop(arrivals)
            core.add(Seq(key=_Req(user, at), prompt_tokens=prompt, target_tokens=output))
        res = core.step()
        if res is None:
            t = arrivals[0][0]
            continue
        t += res.cost.total
        measuring = start is not None
        if measuring:
            steps += 1
            batch_sum += res.batch_size
        for seq, n in res.emitted:
            req: _Req = seq.key
            if req.first is None:
                req.first = t
            if measuring:
                tokens += n
                chunks += 1
            if seq.finished:
                completed += 1
                heapq.heappush(arrivals, (t + rtt_s, req.user))
                if measuring:
                    ttfts.append(req.first - req.arrival)
                    if output > 1 and t > req.first:
                        tpot_rates.append((output - 1) / (t - req.first))
        if start is None and completed >= warm_done:
            start = t
            pre0 = core.counters.preemptions
    window = t - (start or 0.0)
    return CurvePoint(
        users=users,
        output_tok_s=tokens / window if window > 0 else 0.0,
        per_user_tok_s=sum(tpot_rates) / len(tpot_rates) if tpot_rates else 0.0,
        ttft_ms=1000 * sum(ttfts) / len(ttfts) if ttfts else 0.0,
        mean_batch=batch_sum / steps if steps else 0.0,
        tokens_per_chunk=tokens / chunks if chunks else 0.0,
        preemptions_per_s=(core.counters.preemptions - pre0) / window if window > 0 else 0.0,
        window_s=window,
    )
