"""Warnings where a speculation setting did not take effect, read off each arm's tokens per
step: its tokens per chunk, for an engine that streams one chunk per step (an arm that
streams one event per token, `acceptance.per_token_arms`, shows nothing here; the
server's acceptance counts only the steps that drafted, so it cannot tell either).

- **Speculation stopped**: a fixed-k arm (`spec: on`) that accepted drafts at its first
  rungs and from some rung on emits one token per step (under `STOPPED_BELOW`) has
  stopped speculating, and the rest of its curve is a spec-off
  curve under a spec-on name. TensorRT-LLM does this by design once the rolling
  acceptance falls below `acceptance_rate_threshold`: "speculation will be disabled
  permanently" (DecodingBaseConfig; its log says "[SpeculationGate] Speculative
  decoding disabled"). The warning names the rung where it happened.
- **Drafting above the bound**: a verification arm whose schedule has a k = 0 tier but
  that still accepted drafts (above `DRAFTING_ABOVE` tokens per step) at rungs where
  its own batch was above the tier's start: the schedule did not take effect there. On
  vLLM with an MTP drafter the known cause is Model Runner V2 ignoring the scheduler's
  dynamic k (vLLM issue #51510; the Dynamic SD docs run `VLLM_USE_V2_MODEL_RUNNER=0`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from specload.report.envelope import k0_start, own_batch
from specload.report.quality import warning
from specload.report.run_files import ArmSource

STOPPED_BELOW = 1.05  # tokens per step this close to 1: no draft survives
SPECULATING_FROM = 1.2  # ... and this far from it: drafts are accepted
DRAFTING_ABOVE = 1.1  # a k = 0 tier's server emitting more than this still drafts


def _steps(summary: pd.DataFrame, arm: str) -> pd.DataFrame:
    """The arm's rungs: C, tokens per step (per chunk) and the server's batch."""
    rows = summary.loc[summary["arm"] == arm]
    cols = ["concurrency", "tokens_per_chunk", "server_running_mean"]
    return rows.reindex(columns=cols).sort_values("concurrency")


def stopped(summary: pd.DataFrame, arms: Sequence[ArmSource],
            per_token: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Fixed-k arms that stopped speculating mid-ladder: the first rung of the run of
    rungs at one token per step that ends the ladder, after rungs that accepted drafts."""
    out = []
    for arm in arms:
        if arm.spec != "on" or arm.name in per_token:
            continue
        rows = _steps(summary, arm.name).dropna(subset=["tokens_per_chunk"])
        lengths = rows["tokens_per_chunk"].to_numpy()
        flat = lengths < STOPPED_BELOW
        if not flat[-1:].all() or not (lengths >= SPECULATING_FROM).any():
            continue
        first = len(flat) - int(np.argmin(flat[::-1]))  # where the closing flat run starts
        at = int(rows["concurrency"].iloc[first])
        before = float(lengths[first - 1]) if first else float("nan")
        out.append(warning(
            "speculation_stopped",
            f"{arm.name} stopped speculating at C={at}: its tokens per step fell from "
            f"{before:.2f} to {lengths[first]:.2f} and stayed at one token per step, so its "
            "curve from there is a spec-off curve. An engine that turns speculation off for "
            "good once acceptance falls does this (TensorRT-LLM's acceptance_rate_threshold; "
            "its log says '[SpeculationGate] Speculative decoding disabled'): drop the "
            "threshold, or start the server again per rung", arm=arm.name, concurrency=at))
    return out


def drafting_above_bound(summary: pd.DataFrame, arms: Sequence[ArmSource],
                         schedules: dict[str, list[list[int]] | None],
                         methods: dict[str, str | None],
                         per_token: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Verification arms that still drafted where their schedule says k = 0."""
    out = []
    for arm in arms:
        start = k0_start(schedules.get(arm.name))
        if arm.role != "verify" or start is None or arm.name in per_token:
            continue
        rows = _steps(summary, arm.name)
        above = rows[(own_batch(rows) >= start) & (rows["tokens_per_chunk"] > DRAFTING_ABOVE)]
        if above.empty:
            continue
        where = ", ".join(f"C={c:g} ({a:.2f})" for c, a in
                          zip(above["concurrency"], above["tokens_per_chunk"], strict=True))
        cause = ("; on vLLM with an MTP drafter, Model Runner V2 ignores the scheduler's "
                 "dynamic k (vLLM issue #51510): start it with VLLM_USE_V2_MODEL_RUNNER=0, "
                 "as the Dynamic SD docs do" if arm.engine == "vllm"
                 and methods.get(arm.name) == "mtp" else "")
        out.append(warning(
            "drafting_above_bound",
            f"{arm.name} still drafted above its bound (k = 0 from batch {start}): "
            f"tokens per step at {where}; the schedule did not take effect there{cause}",
            arm=arm.name, concurrency=int(above["concurrency"].iloc[0])))
    return out
