"""How many draft tokens each step drafts and verifies: one `DraftControl` per spec mode.

`EngineCore` asks its control three things per step: how many positions to draft for
a batch of this size (`draft_k`), which of the drafted tokens the target verifies
(`verify`, after the batch is formed: all of them but under a verify budget) and, once
the step's drafts are judged, what was accepted (`observe`, for a controller that
learns). A fixed k and a batch-size schedule are stateless; the engines' own adaptive
controllers (`--spec adaptive`) are one module each, found in `core.ADAPTIVE` by the
name the server's flavour gives (`flavors.Flavor.adaptive`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from specload.sim.acceptance import AcceptanceSampler, k_for_batch
from specload.sim.cost_model import CostModel
from specload.sim.profile import Profile
from specload.sim.scheduler import Batch


class DraftControl(Protocol):
    """What decides each step's draft length."""

    max_k: int  # the most positions a step drafts (one labelled per-position counter each)

    def draft_k(self, batch_size: int) -> int:
        """Positions each decoding request drafts in a step of about `batch_size`."""
        ...

    def verify(self, batch: Batch) -> None:
        """Trim what the formed batch verifies (`BatchFormer.verify_only`), if at all."""
        ...

    def observe(self, batch: Batch, accepted: Sequence[int]) -> None:
        """The step's accepted drafts, per decoding request."""
        ...


@dataclass(slots=True)
class Stateless:
    """k from the batch size alone: a fixed k, or a vLLM-form schedule of k by batch size."""

    k_for: Callable[[int], int]
    max_k: int

    def draft_k(self, batch_size: int) -> int:
        return self.k_for(batch_size)

    def verify(self, batch: Batch) -> None:
        return None

    def observe(self, batch: Batch, accepted: Sequence[int]) -> None:
        return None


def fixed(k: int) -> Stateless:
    return Stateless(lambda _: k, k)


def schedule(ranges: Sequence[tuple[int, int, int]]) -> Stateless:
    return Stateless(lambda b: k_for_batch(ranges, b), max((k for _, _, k in ranges),
                                                           default=0))


@dataclass(frozen=True, slots=True)
class Inputs:
    """What an adaptive controller may read: the profile, the server's draft length
    (its `num_speculative_tokens`), the step prices and the acceptance tables."""

    profile: Profile
    k: int
    cost_model: CostModel
    sampler: AcceptanceSampler
