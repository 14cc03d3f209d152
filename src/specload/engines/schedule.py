"""A schedule of draft lengths by batch size, and the writer of it in an engine's syntax.

A schedule is a tuple of `Tier`s covering batch sizes from 1 up: each tier's last batch
size (None: no upper bound) and its draft length k (0: no speculation). Each engine that
switches by batch size has a `Writer` in its own module (`engines/vllm.py`, ...) that
turns a schedule into that engine's setting, keeping the method and draft model the
spec-on arm ran with (`SpecSettings`) and leaving a visible placeholder for what the run
does not tell, and bundles the setting as data, its files, the line that applies them,
the README's use of each file and what a verification arm's start line gets in the
engine's placeholder. `tests/support/engine_rules.py` re-implements the engines' rules.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specload.engines.spec_command import SpecSettings

K_PLACEHOLDER = "<k>"
METHOD_PLACEHOLDER = "<method: eagle3, eagle, mtp, ngram, draft_model, ...>"
MODEL_PLACEHOLDER = "<draft model or EAGLE head>"
# End of the last vLLM range: larger than any max_num_seqs (the engine's dense lookup
# stops at max_num_seqs, vllm/v1/spec_decode/dynamic/utils.py).
BATCH_SIZE_CEILING = 65536
# Methods that run without a separate draft model in vLLM (vllm/config/speculative.py:
# mtp uses the target model's own layers, ngram looks up the prompt).
NO_DRAFT_MODEL = ("mtp", "ngram", "ngram_gpu", "suffix")

Draft = int | str  # a draft length, or a placeholder when the run does not tell it


@dataclass(frozen=True, slots=True)
class Tier:
    """Batch sizes from the previous tier's last + 1 up to `last` draft `k` tokens."""

    last: int | None
    k: Draft


def threshold_schedule(last_on: int, k: Draft) -> tuple[Tier, ...]:
    """Speculate with k draft tokens up to batch size last_on, not at all above."""
    return (Tier(last_on, k), Tier(None, 0))


def starts(tiers: Sequence[Tier]) -> list[int]:
    """The first batch size of each tier."""
    return [1] + [t.last + 1 for t in tiers[:-1] if t.last is not None]


def max_k(tiers: Sequence[Tier]) -> Draft:
    """The largest draft length of a schedule (the placeholder if any k is unknown)."""
    ks = [t.k for t in tiers]
    return max(k for k in ks if isinstance(k, int)) if all(isinstance(k, int) for k in ks) \
        else next(k for k in ks if isinstance(k, str))


def describe(tiers: Sequence[Tier]) -> str:
    """'3 draft tokens at batch sizes 1-15, none from 16' for a schedule."""
    parts = []
    for first, tier in zip(starts(tiers), tiers, strict=True):
        where = (f"from {first}" if tier.last is None else
                 f"at batch size {first}" if tier.last == first else
                 f"at batch sizes {first}-{tier.last}")
        parts.append(f"none {where}" if tier.k == 0 else f"{tier.k} draft tokens {where}")
    return ", ".join(parts)


def ranges(tiers: Sequence[Tier]) -> list[list[Draft]]:
    """The schedule as inclusive [start, end, k] ranges (vLLM's form, and the
    simulator's `--adaptive-schedule`); the open last tier ends at BATCH_SIZE_CEILING."""
    return [[first, tier.last if tier.last is not None else BATCH_SIZE_CEILING, tier.k]
            for first, tier in zip(starts(tiers), tiers, strict=True)]


def as_json(data: Any) -> str:
    """Indented JSON with each innermost list on one line ([1, 15, 3], not five lines)."""
    text = json.dumps(data, indent=2)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: json.dumps(json.loads(m.group(0))), text) + "\n"


class Writer(ABC):
    """One engine's setting of a schedule, for an engine that switches by batch size."""

    names: tuple[str, ...] = ()  # the files it writes, the first the one a placeholder names
    summary_key: str | None = None  # summary.json's field holding `setting`

    @abstractmethod
    def setting(self, tiers: Sequence[Tier], spec: SpecSettings) -> Any:
        """The setting as data."""

    @abstractmethod
    def files(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> dict[str, str]:
        """Each file's name and text, `folder` being where they are written."""

    @abstractmethod
    def apply(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        """How to apply the setting, the words after the engine's name."""

    @abstractmethod
    def uses(self, folder: str) -> dict[str, str]:
        """How each file is used, for the README's table."""

    def fill(self, tiers: Sequence[Tier], spec: SpecSettings, folder: Path) -> str:
        """What the engine's placeholder in `command.verify_command` becomes; `folder`
        is the absolute path of the files."""
        return str(folder / self.names[0])
