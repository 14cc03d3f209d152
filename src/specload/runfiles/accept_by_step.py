"""Acceptance along a request: its verification steps in bins, as one text cell.

An engine that lists a request's verification steps in order (vLLM's
`per_step_accepted` with `--per-request-spec-decode-metrics detailed`) tells how many
drafts the target accepted at its first step, its second, and so on. The record keeps
them binned by the step's number, in powers of two (step 1, steps 2-3, 4-7, 8-15, ...,
`STEP_BINS` bins, the last open), as `steps:accepted` per bin separated by spaces
("1:3 2:5 4:9"): a few dozen bytes however long the reply, and bins of any number of
requests add up. A bin's acceptance length is `1 + accepted / steps` (the target's own
token counts). A request whose every step drafted has its n-th step at about output
token `1 + n × acceptance length`; vLLM lists only the steps that drafted, so where a
drafter sometimes proposes nothing (n-gram) the steps are the drafting ones. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

STEP_BINS = 10  # steps 1, 2-3, ..., 256-511, 512 on


def bin_of(step: int) -> int:
    """The bin of the request's `step`-th verification step (from 1)."""
    return min(step.bit_length() - 1, STEP_BINS - 1)


def label(index: int) -> str:
    """A bin's steps, as the figure names them: "1", "2-3", ..., "512+"."""
    lo = 1 << index
    if index == STEP_BINS - 1:
        return f"{lo}+"
    hi = (lo << 1) - 1
    return str(lo) if hi == lo else f"{lo}-{hi}"


def encode(per_step_accepted: Sequence[int]) -> str:
    """The cell of one request's accepted drafts per step, in order ("" for none)."""
    steps = [0] * STEP_BINS
    accepted = [0] * STEP_BINS
    for n, a in enumerate(per_step_accepted, start=1):
        b = bin_of(n)
        steps[b] += 1
        accepted[b] += a
    used = max((b + 1 for b in range(STEP_BINS) if steps[b]), default=0)
    return " ".join(f"{steps[b]}:{accepted[b]}" for b in range(used))


def decode(cell: str) -> list[tuple[int, int]]:
    """(steps, accepted) per bin from a cell ([] for an empty or unreadable one)."""
    out = []
    for part in cell.split():
        steps, _, accepted = part.partition(":")
        if not (steps.isdigit() and accepted.isdigit()):
            return []
        out.append((int(steps), int(accepted)))
    return out[:STEP_BINS]


def add(cells: Iterable[str]) -> tuple[list[int], list[int]]:
    """Steps and accepted drafts per bin over many requests' cells."""
    steps = [0] * STEP_BINS
    accepted = [0] * STEP_BINS
    for cell in cells:
        for b, (s, a) in enumerate(decode(cell)):
            steps[b] += s
            accepted[b] += a
    return steps, accepted
