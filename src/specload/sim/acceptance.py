"""Seeded sampling of how many draft tokens the target accepts.

The profile gives conditional acceptance rates per draft position: α_j = P(position j
accepted | positions < j accepted). A request that drafted k tokens accepts the longest
accepted prefix, so P(accepted ≥ j) = α_1·…·α_j; one uniform draw against those
cumulative products samples exactly that distribution. The step then emits the accepted
tokens plus the target's own (bonus) token. `rates_for_length` scales the rates to a
target mean, the simulator's benchmarking mode (`--acceptance-length`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import accumulate
from operator import mul


def survival(rates: Sequence[float], k: int) -> list[float]:
    """P(accepted ≥ j) for j = 1..k."""
    return list(accumulate(rates[:k], mul))


def expected_tokens_per_step(rates: Sequence[float], k: int) -> float:
    """E[accepted + 1]: tokens one speculating request emits per step."""
    return 1.0 + sum(survival(rates, k))


def rates_for_length(rates: Sequence[float], k: int, length: float) -> list[float]:
    """The first `k` rates scaled by one factor (each at most 1) so that a step drafting
    `k` tokens emits `length` tokens on average (accepted + 1); ValueError outside
    [1, k + 1]. The benchmarking modes of the engines fix the same mean (vLLM's
    synthetic_acceptance_length, llama.cpp's --spec-synth-len)."""
    if not 1.0 <= length <= k + 1:
        raise ValueError(f"an acceptance length of {length:g} needs 1 <= length <= k + 1 "
                         f"= {k + 1}")
    base = list(rates[:k])

    def emitted(f: float) -> float:
        return expected_tokens_per_step([min(1.0, f * r) for r in base], k)

    lo, hi = 0.0, 1.0 / max(min(base), 1e-12)
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if emitted(mid) < length else (lo, mid)
    return [min(1.0, hi * r) for r in base]


def _survivals(rates: Sequence[float]) -> dict[int, tuple[float, ...]]:
    return {k: tuple(survival(rates, k)) for k in range(len(rates) + 1)}


def k_for_batch(schedule: Sequence[tuple[int, int, int]], batch_size: int) -> int:
    """k from a vLLM-style [[lo, hi, k], ...] schedule; 0 (off) outside every range."""
    for lo, hi, k in schedule:
        if lo <= batch_size <= hi:
            return k
    return 0


class AcceptanceSampler:
    """Draws accepted-draft counts from one seeded RNG (the engine's only randomness), at
    the rates of the request's category where `by_category` has them, else at those of
    the largest batch size in `by_batch` not above the requests the step decodes."""

    def __init__(self, rates: Sequence[float], seed: int,
                 by_category: Mapping[str, Sequence[float]] | None = None,
                 by_batch: Mapping[int, Sequence[float]] | None = None) -> None:
        self._rng = random.Random(seed)
        self._survival = _survivals(rates)
        self._by_category = {c: _survivals(r) for c, r in (by_category or {}).items()}
        self._by_batch = sorted((b, _survivals(r)) for b, r in (by_batch or {}).items())
        self._for_batch: dict[int, dict[int, tuple[float, ...]]] = {}

    def batch_table(self, batch: int) -> dict[int, tuple[float, ...]]:
        """P(accepted >= j) by k for a step decoding `batch` requests."""
        table = self._for_batch.get(batch)
        if table is None:
            table = self._survival
            for smallest, survivals in self._by_batch:
                if smallest > batch:
                    break
                table = survivals
            self._for_batch[batch] = table
        return table

    def survival(self, k: int, category: str | None = None, batch: int = 1
                 ) -> tuple[float, ...]:
        """P(accepted >= j), j = 1..k, for a request of `category` in a step decoding
        `batch` requests."""
        table = self._by_category.get(category) if category else None
        if table is None:
            table = self.batch_table(batch) if self._by_batch else self._survival
        return table[k]

    def sample(self, k: int, category: str | None = None, batch: int = 1) -> int:
        """Accepted drafts (0..k) for one request that drafted k tokens in a step
        decoding `batch` requests."""
        u = self._rng.random()
        accepted = 0
        for p in self.survival(k, category, batch):
            if u >= p:
                break
            accepted += 1
        return accepted
