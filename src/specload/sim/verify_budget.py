"""vLLM's adaptive verification as a `DraftControl`: draft every request's block, verify
only the budget that pays.

vLLM's `AdaptiveVerificationManager` (`vllm/v1/worker/gpu/spec_decode/
adaptive_verification.py`, PR #47808; `enable_adaptive_verification` in the speculative
config) scores every (request, position) draft slot by its chance to survive (the
product of the per-position acceptance probabilities up to it), and each step picks
one batch-wide budget B of draft tokens: the B that maximises expected tokens per unit
of step time, (decoding requests + the top B survival scores) / (draft cost by request
count + verify cost of the target tokens), a global argmax because the cost curve is
not smooth. The B best slots win; survival falls along a block, so each request keeps a
prefix of its drafts. The drafter still drafts the whole block: trimming saves only the
target's work. Here the survival scores are the profile's acceptance tables (by prompt
category where it has them), a calibrated confidence without per-token knowledge; the
slots of one level (one category's requests at one draft position) tie, and the budget
is searched in eighths of a level, each candidate priced with the cost model on the
step itself, as the engine prices it from the step costs it profiles at start-up. A
step so verified pays the profile's `verify_budget.step_s` (`cost_model.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specload.sim.draft_control import Inputs
from specload.sim.scheduler import Batch, BatchFormer

# a slot level is priced in this many parts: the budget's resolution within a level
SLICES = 8


class VerifyBudgetControl:
    """A fixed draft length, and a verify budget per step."""

    def __init__(self, inputs: Inputs) -> None:
        self.max_k = inputs.k
        self._cost = inputs.cost_model.cost
        self._survival = inputs.sampler.survival

    def draft_k(self, batch_size: int) -> int:
        return self.max_k

    def observe(self, batch: Batch, accepted: Sequence[int]) -> None:
        return None

    def verify(self, batch: Batch) -> None:
        decode = batch.decode
        if not decode or not batch.shape.k:
            return
        n = len(decode)
        drafted = [seq.sched_k for seq in decode]
        groups: dict[str | None, list[int]] = {}
        for i, seq in enumerate(decode):
            groups.setdefault(seq.category, []).append(i)
        # a slot level: the requests of one category at one draft position, by survival
        levels = sorted(((p, j, cat) for cat, members in groups.items()
                         for j, p in enumerate(self._survival(
                             max(drafted[i] for i in members), cat, n), start=1)),
                        key=lambda level: (-level[0], level[1]))
        BatchFormer.verify_only(batch, [0] * n)
        shape = replace(batch.shape, varlen=True)
        expected = float(n)  # each request's own sampled token
        best_rate, best = expected / self._cost(shape).total, [0] * n
        verified = [0] * n
        for p, j, cat in levels:
            members = [i for i in groups[cat] if drafted[i] >= j]
            step = -(-len(members) // SLICES)
            for at in range(0, len(members), step):
                part = members[at:at + step]
                m = len(part)
                shape.tokens += m
                shape.kv_read_tokens += m
                shape.kv_window_tokens += m if shape.window else 0
                shape.logit_tokens += m
                shape.drafts += m
                shape.attn_token_ctx += sum(decode[i].computed for i in part) + m * (1 + 2 * j)
                expected += p * m
                for i in part:
                    verified[i] = j
                rate = expected / self._cost(shape).total
                if rate > best_rate:
                    best_rate, best = rate, list(verified)
        BatchFormer.verify_only(batch, best)
        batch.shape.varlen = True
