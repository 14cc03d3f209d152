"""The engines' /metrics series as the sampler and the report read them, from the registry.

Each registered engine's entry (`specload.engines`) lists its series: what each means
(generated tokens, running requests, acceptance length, ...) and how its label sets
combine into one number per sample (`Series`). These functions read every entry at
call time, so an engine registered later is sampled and read too: the series in the
registry's order (vLLM first), by name, by meaning, and the latency histograms whose
`_sum` and `_count` are kept. The series' sources are cited next to each entry.
"""

from __future__ import annotations

from specload import engines
from specload.engines import Meaning, Series

__all__ = ["Meaning", "Series", "by_name", "histograms", "names", "names_of", "series"]


def series() -> tuple[Series, ...]:
    """Every registered engine's series, in the registry's order."""
    return tuple(s for e in engines.REGISTRY.values() for s in e.series)


def by_name() -> dict[str, Series]:
    return {s.name: s for s in series()}


def histograms() -> tuple[str, ...]:
    """The latency histograms whose `_sum` and `_count` are kept (window means)."""
    return tuple(h for e in engines.REGISTRY.values() for h in e.histograms)


def names(meaning: Meaning) -> tuple[str, ...]:
    """The kept names (`Series.key`) with this meaning, in the registry's order."""
    return tuple(s.key for s in series() if s.meaning == meaning)


def names_of(meaning: Meaning, engine: str | None) -> tuple[str, ...]:
    """The series with this meaning that `engine` exposes, or every engine's when it is
    unknown or exposes none."""
    entry = engines.get(engine)
    own = tuple(s.key for s in entry.series if s.meaning == meaning) if entry else ()
    return own or names(meaning)
