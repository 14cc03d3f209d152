"""Seeded sampling of how many draft tokens the target accepts.

The profile gives conditional acceptance rates per draft position: α_j = P(position j
accepted | positions < j accepted). A request that drafted k tokens accepts the longest
accepted prefix, so P(accepted ≥ j) = α_1·…·α_j; one uniform draw against those
cumulative products samples exactly that distribution. The step then emits the accepted
tokens plus the target's own (bonus) token.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import accumulate
from operator import mul


def survival(rates: Sequence[float], k: int) -> list[float]:
    """P(accepted ≥ j) for j = 1..k."""
    return list(accumulate(rates[:k], mul))


def expected_tokens_per_step(rates: Sequence[float], k: int) -> float:
    """E[accepted + 1]: tokens one speculating request emits per step."""
    return 1.0 + sum(survival(rates, k))


def k_for_batch(schedule: Sequence[tuple[int, int, int]], batch_size: int) -> int:
    """k from a vLLM-style [[lo, hi, k], ...] schedule; 0 (off) outside every range."""
    for lo, hi, k in schedule:
        if lo <= batch_size <= hi:
            return k
    return 0


class AcceptanceSampler:
    """Draws accepted-draft counts from one seeded RNG (the engine's only randomness)."""

    def __init__(self, rates: Sequence[float], seed: int) -> None:
        self._rates = tuple(rates)
        self._rng = random.Random(seed)
        self._survival = {k: tuple(survival(self._rates, k)) for k in range(len(rates) + 1)}

    def sample(self, k: int) -> int:
        """Accepted drafts (0..k) for one request that drafted k tokens."""
        u = self._rng.random()
        accepted = 0
        for p in self._survival[k]:
            if u >= p:
                break
            accepted += 1
        return accepted
