"""The traffic mix by prompt category: which categories a run sends, and in what shares.

Acceptance, and so the speedup and C*, depends on the kind of text, and a team's traffic
is a mix of kinds. `request.categories` names the categories to send and their weights
(`code:0.5,chat:0.5`, or a YAML mapping); left empty, the prompt set is sent as it is.
`CategoryMix.deal` turns the prompt set into the list a seeded `PromptOrder` walks: each
selected category's prompts, repeated in turn, in as many places as its weight asks, so
that the requests follow the mix whatever the categories' sizes. Pure and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specload.errors import UserError
from specload.traffic.prompts import Prompt

USAGE = "expected CATEGORY:WEIGHT,... (e.g. code:0.5,chat:0.5) or a mapping of them"


@dataclass(frozen=True, slots=True)
class CategoryMix:
    """Categories and their shares of the requests (the weights, summing to 1)."""

    shares: tuple[tuple[str, float], ...]

    @classmethod
    def parse(cls, value: str | Mapping[str, float]) -> CategoryMix:
        """`code:0.5,chat:0.5` (a bare `code` weighs 1) or {code: 0.5, chat: 0.5}; the
        weights are normalised. UserError for anything else."""
        pairs = (list(value.items()) if isinstance(value, Mapping)
                 else [_pair(part) for part in str(value).split(",") if part.strip()])
        if not pairs:
            raise UserError(f"categories {value!r}: {USAGE}")
        names = [name for name, _ in pairs]
        if len(set(names)) != len(names):
            raise UserError(f"categories {value!r}: a category is named twice")
        weights = []
        for name, weight in pairs:
            w = _weight(weight)
            if not (isinstance(name, str) and name and math.isfinite(w) and w > 0):
                raise UserError(f"categories {value!r}: each weight must be more than 0 "
                                f"({name}: {weight!r})")
            weights.append(w)
        total = sum(weights)
        return cls(tuple((n, w / total) for n, w in zip(names, weights, strict=True)))

    def text(self) -> str:
        return ",".join(f"{name}:{share:.6g}" for name, share in self.shares)

    def words(self) -> str:
        """`code 50%, chat 50%`, for the report."""
        return ", ".join(f"{name} {share:.0%}" for name, share in self.shares)

    def deal(self, prompts: Sequence[Prompt]) -> list[Prompt]:
        """The prompts laid out for the mix: every prompt of a selected category at least
        once, each category in as many places as its share of the whole."""
        by_category: dict[str, list[Prompt]] = {}
        for p in prompts:
            by_category.setdefault(p.category, []).append(p)
        missing = [name for name, _ in self.shares if name not in by_category]
        if missing:
            raise UserError(f"categories: the prompt set has no {', '.join(missing)} "
                            f"prompts (it has {', '.join(sorted(by_category))})")
        places = max(math.ceil(len(by_category[name]) / share) for name, share in self.shares)
        out: list[Prompt] = []
        for name, share in self.shares:
            own = by_category[name]
            out += [own[i % len(own)] for i in range(max(1, round(share * places)))]
        return out


def _pair(part: str) -> tuple[str, str]:
    name, _, weight = part.strip().partition(":")
    return name.strip(), weight.strip() or "1"


def _weight(weight: object) -> float:
    if isinstance(weight, bool):
        return math.nan
    try:
        return float(weight)  # type: ignore[arg-type]  # any YAML value; refusals caught
    except (TypeError, ValueError):
        return math.nan
