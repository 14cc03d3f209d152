"""SGLang's adaptive speculation (`--speculative-adaptive`, strategy `ema`) as a
`DraftControl`: a step count per batch-size tier, moved by a smoothed acceptance.

As `python/sglang/srt/speculative/adaptive_spec_params.py` and
`adaptive_step_router.py` do it: a batch goes to the tier with the largest batch-size
key at or below its size, and each tier keeps its own state: its current step count
(one of its candidates; 0 turns speculation off), an exponential moving average of the
accepted draft tokens per request (`ema = (1 - alpha)·ema + alpha·batch mean`, updated
only while it drafts, starting at the step count less one) and how many batches it has
run. After `warmup_batches` it decides every `update_interval` batches: from 0 it probes
the next candidate up; otherwise it steps down while the average is at or below the
lower candidate less 0.5 (0.5 when that candidate is 0) plus the tier's down hysteresis,
else up while it is above the current candidate less 0.5 plus the up hysteresis. A tier
starts at the server's step count when that is a candidate, else at its middle
candidate. SGLang pads the batch size to its next CUDA-graph size before choosing the
tier; the simulator has no CUDA graphs and takes the batch size as it is.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from specload.sim.draft_control import Inputs
from specload.sim.profile import EmaTier
from specload.sim.scheduler import Batch


@dataclass(slots=True)
class TierState:
    """One tier's decisions so far."""

    tier: EmaTier
    steps: int
    ema: float
    batches: int = 0

    def decide(self) -> None:
        cands = sorted(self.tier.candidate_steps)
        i = cands.index(self.steps)
        if self.steps == 0:
            if i + 1 < len(cands):
                self.steps = cands[i + 1]
                if self.ema < 0:
                    self.ema = self.steps - 1.0
            return
        start = i
        while i > 0 and self.ema <= ((0.5 if cands[i - 1] == 0 else cands[i - 1] - 0.5)
                                     + self.tier.down_hysteresis):
            i -= 1
        if i == start:
            while i + 1 < len(cands) and self.ema > cands[i] - 0.5 + self.tier.up_hysteresis:
                i += 1
        self.steps = cands[i]


class EmaTierControl:
    """Step counts by batch-size tier, each tier moved by its own smoothed acceptance."""

    def __init__(self, inputs: Inputs) -> None:
        params = inputs.profile.speculative.ema_tiers
        self._alpha = params.ema_alpha
        self._warmup, self._every = params.warmup_batches, params.update_interval
        self._keys = sorted(params.tiers)
        self._states = [_start(params.tiers[key], inputs.k) for key in self._keys]
        self.max_k = max(max(t.candidate_steps) for t in params.tiers.values())
        self._last: TierState | None = None

    def state(self, batch_size: int) -> TierState:
        """The tier a batch of this size goes to."""
        return self._states[max(0, bisect_right(self._keys, batch_size) - 1)]

    def draft_k(self, batch_size: int) -> int:
        tier = self._last = self.state(batch_size)
        tier.batches += 1
        past = tier.batches - self._warmup
        if past > 0 and past % self._every == 0:
            tier.decide()
        return tier.steps

    def verify(self, batch: Batch) -> None:
        return None

    def observe(self, batch: Batch, accepted: Sequence[int]) -> None:
        tier = self._last
        if tier is None or not tier.steps or not accepted:
            return
        mean = sum(accepted) / len(accepted)
        tier.ema = (1.0 - self._alpha) * tier.ema + self._alpha * mean


def _start(tier: EmaTier, steps: int) -> TierState:
    cands = sorted(tier.candidate_steps)
    first = steps if steps in cands else cands[len(cands) // 2]
    return TierState(tier, first, first - 1.0)
