"""The answer over two axes: speedup and C* by concurrency and by context length.

A run whose arms ran at several prompt lengths (the scenario's `contexts:`;
`ArmSource.context`) has one spec-on/spec-off pair per length. Each pair's speedup per
C is a row of the map, and its crossover (C* with its interval, or "always" / "never")
is C* as a function of context. Long contexts make a decode step's KV reads outweigh its
weights, so verifying several tokens costs relatively less and C* rises with context,
up to lengths where speculation pays at every C measured (MagicDec, arXiv 2408.11049;
vLLM RFC #48627). The break-even contour is where the map's speedup is 1: between two
rungs of a row it lies at that row's C*, which `lines` reads out as a sentence a person
can act on ("speculation pays up to C = 24 at 512-token contexts, ... and at every C
measured from 16k"). A row's lengths are read from the spec text, its mean standing for
a distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.crossover import ALWAYS, CROSSES, NEVER, PairResult
from specload.report.run_files import ArmSource
from specload.traffic.shapes import LengthSpec

# what a verdict without a C* says of a context
REACH = {ALWAYS: "at every C measured", NEVER: "at no C measured"}
UNCLEAR = "with no clear crossover"


def tokens_words(tokens: float) -> str:
    """`512`, `2k`, `8k`, `1.5k`, `32k`: a context length as people say it."""
    if tokens < 1000:
        return f"{tokens:.0f}"
    k = tokens / 1024 if tokens % 1024 == 0 else tokens / 1000
    return f"{k:.3g}k"


def context_words(spec: str) -> str:
    """A context's length in words: `8k`, or a distribution's `uniform:400:600`."""
    length = LengthSpec.parse(spec)
    return tokens_words(length.a) if length.kind == "fixed" else spec


@dataclass(frozen=True, slots=True)
class ContextRow:
    """One context's pair: its length (the spec, its mean tokens) and its crossover."""

    context: str
    tokens: float
    pair: PairResult

    @property
    def label(self) -> str:
        return context_words(self.context)

    def reach(self) -> str:
        """`up to C = 24 (95%: 21-27)`, `at every C measured`, `at no C measured`."""
        found = self.pair.crossover
        if found.verdict == CROSSES and found.c_star is not None:
            text = f"up to C = {found.c_star:.3g}"
            span = self.pair.interval
            if span is not None and not (span.below or span.above):
                text += f" ({span.level:.0%}: {span.lo:.3g}-{span.hi:.3g})"
            return text
        if found.verdict not in REACH and found.below is not None:
            return f"up to C = {found.below:g} at least (within the noise above)"
        return REACH.get(found.verdict, UNCLEAR)


@dataclass(slots=True)
class ContextMap:
    """A run's speedup by context and concurrency, and C* per context."""

    rows: list[ContextRow]  # by mean tokens
    speedup: pd.DataFrame  # context spec x concurrency

    def sentence(self) -> str:
        """One sentence over every context; a run of contexts at the end where
        speculation pays at every C measured reads `from 16k`."""
        rows = self.rows
        tail = len(rows)
        while tail > 0 and rows[tail - 1].pair.crossover.verdict == ALWAYS:
            tail -= 1
        if tail == 0:
            return (f"speculation pays at every C measured, at every context from "
                    f"{rows[0].label} to {rows[-1].label} tokens")
        parts = [f"{r.reach()} at {r.label}-token contexts" for r in rows[:tail]]
        if tail < len(rows):
            parts.append(f"at every C measured from {rows[tail].label}")
        if len(parts) > 1:
            parts[-1] = "and " + parts[-1]
        return "speculation pays " + ", ".join(parts)

    def rises(self) -> bool | None:
        """Whether C* rises (never falls) with context; None with fewer than two known."""
        order = [_reach_key(r) for r in self.rows]
        known = [x for x in order if not math.isnan(x)]
        return None if len(known) < 2 else known == sorted(known)

    def lines(self) -> list[str]:
        out = ["by context length: " + self.sentence()]
        rises = self.rises()
        if rises is False:
            out.append("  C* does not rise with context here: a context's pair may be "
                       "within its noise, or its KV reads may not yet outweigh the weights "
                       "(docs/measurement.md, the context axis)")
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "contexts": [r.context for r in self.rows],
            "tokens": [r.tokens for r in self.rows],
            "concurrency": [float(c) for c in self.speedup.columns],
            "speedup": [[None if math.isnan(x) else float(x) for x in row]
                        for row in self.speedup.to_numpy()],
            "sentence": self.sentence(),
            "c_star": {r.context: {"spec_on": r.pair.on.name, "spec_off": r.pair.off.name,
                                   **r.pair.crossover.as_dict(),
                                   "interval": (r.pair.interval.as_dict()
                                                if r.pair.interval else None)}
                       for r in self.rows},
        }


def _reach_key(row: ContextRow) -> float:
    found = row.pair.crossover
    if found.verdict == ALWAYS:
        return math.inf
    if found.verdict == NEVER:
        return 0.0
    return found.c_star if found.verdict == CROSSES and found.c_star is not None else math.nan


def analyse_contexts(arms: Sequence[ArmSource], pairs: Sequence[PairResult]
                     ) -> ContextMap | None:
    """The run's context map, or None unless its pairs ran at two contexts or more (the
    first pair of each context)."""
    by_context: dict[str, PairResult] = {}
    for p in pairs:
        if p.on.context is not None and p.on.context == p.off.context:
            by_context.setdefault(p.on.context, p)
    if len(by_context) < 2:
        return None
    rows = sorted((ContextRow(c, LengthSpec.parse(c).mean, p) for c, p in by_context.items()),
                  key=lambda r: r.tokens)
    speedup = pd.DataFrame({r.context: r.pair.speedup.set_index("concurrency")["speedup"]
                            for r in rows}).T.sort_index(axis=1)
    speedup = speedup.reindex([r.context for r in rows]).astype(float)
    speedup.columns = np.asarray(speedup.columns, dtype=float)
    return ContextMap(rows, speedup)
