"""The settings a context map gives: k by batch size and context length, and per engine.

Each context's pair has its own decision (`recommend`: speculate up to a batch size, at
every one measured, or at none). The grid puts them side by side: the context axis is
cut halfway (in log tokens) between the contexts measured, and each band of contexts
takes its context's batch-size schedule. Its files, in `recommended/context-grid/`:
- `context-grid.json`, neutral: every cell `[batch_lo, batch_hi, ctx_lo, ctx_hi, k]` and
  how each context's row was measured (its pair, C* and interval, the batch bound);
- `vllm-speculative-config.json`: the batch-size schedule for the declared context mix
  (`context_mix`, equal shares by default). The mix's speedup at each C is the contexts'
  speedups weighted by their shares; its crossover is the schedule's bound, at the
  batch the contexts' spec-on servers ran there, weighted the same. Only for a vLLM
  version that accepts PR #48944's 5-item form (`vllm.takes_context_grid`) is the file
  the grid itself;
- `README.md`: the grid in words and, for engines without a context axis, one
  deployment per context band routed by prompt length, with what each band measured.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specload.engines import schedule as es
from specload.engines import vllm
from specload.engines.spec_command import SpecSettings
from specload.report.context_map import ContextMap, ContextRow, tokens_words
from specload.report.crossover import Crossover, log_crossing
from specload.report.recommend import Decision, batch_at

GRID_FOLDER = "context-grid"
GRID_FILE = "context-grid.json"
README_FILE = "README.md"
FILES = (GRID_FILE, vllm.VLLM_FILE, README_FILE)  # every file the folder may hold


@dataclass(frozen=True, slots=True)
class Band:
    """One context band of the grid: its measured row and its batch-size schedule."""

    row: ContextRow
    ctx_lo: int
    ctx_hi: int  # inclusive; the last band's is `CTX_CEILING`
    tiers: tuple[es.Tier, ...]

    def cells(self) -> list[list[es.Draft]]:
        """`[batch_lo, batch_hi, ctx_lo, ctx_hi, k]` per tier (k: a placeholder where the
        run does not tell it)."""
        return [[lo, hi, self.ctx_lo, self.ctx_hi, k] for lo, hi, k in es.ranges(self.tiers)]


CTX_CEILING = 1 << 24  # the last band's end: longer than any model's context


@dataclass(frozen=True, slots=True)
class MixSchedule:
    """The batch-size schedule for a context mix, and how it was found."""

    shares: dict[str, float]  # by context spec, summing to 1
    tiers: tuple[es.Tier, ...]
    c_star: float | None  # the mix's crossover in C (None: none within the rungs)
    batch: float | None  # the batch size the contexts' spec-on servers ran at it


def _tiers(decision: Decision, k: es.Draft) -> tuple[es.Tier, ...]:
    if decision.tiers:
        return tuple(es.Tier(t.last, k if t.k else 0) for t in decision.tiers)
    return (es.Tier(None, k if decision.action == "keep_on" else 0),)


def bands(cmap: ContextMap, decisions: Mapping[str, Decision], k: es.Draft) -> list[Band]:
    """Each context's band of the grid, edges halfway between neighbours in log tokens."""
    tokens = [r.tokens for r in cmap.rows]
    edges = [math.ceil(math.sqrt(a * b)) for a, b in itertools.pairwise(tokens)]
    lows, highs = [0, *edges], [e - 1 for e in edges] + [CTX_CEILING]
    return [Band(r, lo, hi, _tiers(decisions[r.context], k))
            for r, lo, hi in zip(cmap.rows, lows, highs, strict=True)]


def mix_schedule(cmap: ContextMap, mix: Mapping[str, float] | None, k: es.Draft
                 ) -> MixSchedule:
    """The batch-size schedule of the mix (`mix`: shares by context; None: equal)."""
    rows = cmap.rows
    raw = {r.context: float((mix or {}).get(r.context, 0.0 if mix else 1.0)) for r in rows}
    total = sum(raw.values()) or 1.0
    shares = {c: v / total for c, v in raw.items()}
    table = cmap.speedup.dropna(axis=1)  # the rungs every context measured
    weights = np.array([shares[r.context] for r in rows])
    speedup = weights @ table.to_numpy()
    levels = [float(c) for c in table.columns]
    if not levels or (speedup > 1).all():
        return MixSchedule(shares, (es.Tier(None, k if levels else 0),), None, None)
    if (speedup <= 1).all():
        return MixSchedule(shares, (es.Tier(None, 0),), None, None)
    last_on = int(np.flatnonzero(speedup > 1)[-1])
    if last_on == len(levels) - 1:
        return MixSchedule(shares, (es.Tier(None, k),), None, None)
    c_star = log_crossing(levels[last_on], levels[last_on + 1], float(speedup[last_on]),
                          float(speedup[last_on + 1]))
    batches = [(shares[r.context], batch_at(r.pair.speedup, c_star)) for r in rows]
    known = [(w, b) for w, b in batches if b is not None and w > 0]
    batch = (sum(w * b for w, b in known) / sum(w for w, _ in known)) if known else None
    bound = max(1, math.floor(batch if batch is not None else c_star))
    return MixSchedule(shares, es.threshold_schedule(bound, k), c_star, batch)


def grid_data(found: Sequence[Band]) -> dict[str, object]:
    """The neutral grid file's content."""
    return {
        "what": "draft length k (0: no speculation) by batch size (running requests) and "
                "context length (prompt tokens), measured by specload",
        "cells": [cell for band in found for cell in band.cells()],
        "cell_form": ["batch_lo", "batch_hi", "ctx_lo", "ctx_hi", "k"],
        "measured": [{
            "context": b.row.context, "ctx_lo": b.ctx_lo, "ctx_hi": b.ctx_hi,
            "spec_on": b.row.pair.on.name, "spec_off": b.row.pair.off.name,
            "verdict": b.row.pair.crossover.verdict, "c_star": b.row.pair.crossover.c_star,
            "interval": b.row.pair.interval.as_dict() if b.row.pair.interval else None,
            "rungs": [float(c) for c in b.row.pair.speedup["concurrency"]],
            "schedule": es.describe(b.tiers)} for b in found],
    }


def _on_to(cross: Crossover) -> float:
    """Up to which C a pair's decision speculates: inf (past every rung), 0 (nowhere)."""
    if cross.speculate_to is None:
        return 0.0
    return cross.speculate_to if cross.off_above else math.inf


def routing_gain(band: Band, mixed: MixSchedule) -> str:
    """What routing this band to its own deployment measured against the mix's
    schedule: the rungs where the two decide differently, and the best gain there."""
    own = _on_to(band.row.pair.crossover)
    mix_on = mixed.tiers[0].k != 0
    shared = mixed.c_star if mixed.c_star is not None else (math.inf if mix_on else 0.0)
    table = band.row.pair.speedup
    gains = [(float(c), s - 1.0 if c <= own else 1.0 / s - 1.0)
             for c, s in zip(table["concurrency"], table["speedup"], strict=True)
             if (c <= own) != (c <= shared) and s > 0]
    if not gains:
        return "the same as the mix's schedule at every rung measured"
    c, best = max(gains, key=lambda g: g[1])
    return (f"decides otherwise than the mix's schedule at C = "
            f"{', '.join(f'{g[0]:g}' for g in gains)}: up to {best:+.0%} tok/s (C = {c:g})")


def _span(band: Band) -> str:
    """`prompts under 2k tokens`, `prompts of 2k-9.5k tokens`, `prompts of 9.5k and more`."""
    if band.ctx_lo == 0:
        return f"prompts under {tokens_words(band.ctx_hi + 1)} tokens"
    if band.ctx_hi == CTX_CEILING:
        return f"prompts of {tokens_words(band.ctx_lo)} tokens and more"
    return f"prompts of {tokens_words(band.ctx_lo)}-{tokens_words(band.ctx_hi + 1)} tokens"


def _band_words(band: Band) -> str:
    return (f"{_span(band)} (measured at {band.row.label}): {es.describe(band.tiers)}; "
            f"speculation pays {band.row.reach()}")


def files(cmap: ContextMap, decisions: Mapping[str, Decision], spec: SpecSettings,
          mix: Mapping[str, float] | None, vllm_version: str | None
          ) -> dict[str, str]:
    """Every file of the grid's folder, by name."""
    k: es.Draft = spec.k if spec.k is not None else es.K_PLACEHOLDER
    found = bands(cmap, decisions, k)
    grid = grid_data(found)
    mixed = mix_schedule(cmap, mix, k)
    if vllm.takes_context_grid(vllm_version):
        config = vllm.vllm_context_grid_config(
            [cell for band in found for cell in band.cells()], k, spec)
        vllm_words = (f"vLLM {vllm_version} takes the grid itself (PR #48944's "
                      f"5-item form, contexts aggregated by {vllm.CONTEXT_AGG})")
    else:
        config = vllm.vllm_speculative_config(mixed.tiers, spec)
        named = f"vLLM {vllm_version}" if vllm_version else "vLLM (no engine_version named)"
        vllm_words = (f"{named} switches by batch size only: the file is the schedule for "
                      f"the context mix " + ", ".join(f"{tokens_words(r.tokens)} "
                                                      f"{mixed.shares[r.context]:.0%}"
                                                      for r in cmap.rows)
                      + f": {es.describe(mixed.tiers)}"
                      + (f" (the mix's crossover C = {mixed.c_star:.3g}"
                         + (f", batch {mixed.batch:.3g})" if mixed.batch else ")")
                         if mixed.c_star else "")
                      + ". Its 5-item grid form (`speculative_token_schedule`, PR #48944) "
                        "is in no release yet: name a vLLM version that has it "
                        "(`engine_version`) and this file becomes the grid")
    lines = [f"# Speculation by batch size and context length ({cmap.sentence()})", "",
             f"`{GRID_FILE}` holds the grid: k for each batch-size range and context range "
             "(cells `[batch_lo, batch_hi, ctx_lo, ctx_hi, k]`), and how each context "
             "was measured.", "", *[f"- {_band_words(b)}" for b in found], "",
             f"`{vllm.VLLM_FILE}`: {vllm_words}.", "",
             "Engines without a context axis: run one deployment per context band, each "
             "with its band's schedule, and route requests by prompt length (a router "
             "that counts prompt tokens, or the client's own class of request). What "
             "each band's own deployment measured against one schedule for the mix:", "",
             *[f"- {_span(b)}: {routing_gain(b, mixed)}" for b in found]]
    return {GRID_FILE: es.as_json(grid), vllm.VLLM_FILE: es.as_json(config),
            README_FILE: "\n".join(lines) + "\n"}
