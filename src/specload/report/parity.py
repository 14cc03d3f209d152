"""Output parity: does every arm return the replies the arm without speculation returns?

Greedy speculative decoding should change how fast tokens come, never which: at
temperature 0 a speculating server should stream the text a plain one does. Each rung
keeps its replies by prompt (`report/replies.py`); for every arm but the reference (the
first spec-off arm), at every rung, the replies to the prompts both arms sent are
compared: the share that are identical, and for the others the median position of
their first difference, in bytes of text and (by the reference reply's own bytes per
token) in tokens. Kernels whose results depend on the batch can change greedy output
with the batch size, speculation or not, so the reference arm is compared with itself
too: the same prompt at two rungs, or in two repeats of one (the batch-variance floor;
a run sends a prompt again only once it has sent the whole set). An arm whose replies
differ beyond that floor, by more than the noise of the counts, is flagged. Replies
sampled at a temperature above 0 differ by design and are not compared.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pandas as pd

from specload.report.replies import Key, Reply
from specload.report.run_files import ArmSource
from specload.runfiles.manifest import Manifest
from specload.runfiles.reply_digest import BLOCK_BYTES, first_difference

_Z = 1.96  # the counts' 95% intervals


@dataclass(frozen=True, slots=True)
class Agreement:
    """Replies to the same prompts compared: how many, how many identical, and where the
    others first differ (medians; NaN when all are identical)."""

    compared: int
    identical: int
    first_diff_bytes: float = math.nan
    first_diff_tokens: float = math.nan

    @property
    def share(self) -> float:
        return self.identical / self.compared if self.compared else math.nan

    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the share of replies that differ."""
        return _wilson(self.compared - self.identical, self.compared)

    def words(self) -> str:
        if not self.compared:
            return "no prompt in common"
        text = f"{self.share:.0%} identical of {self.compared}"
        if self.identical < self.compared and math.isfinite(self.first_diff_tokens):
            text += f", the others from token ~{self.first_diff_tokens:.0f}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "identical": self.identical, "share": self.share,
                "first_diff_bytes_median": self.first_diff_bytes,
                "first_diff_tokens_median": self.first_diff_tokens}


@dataclass(frozen=True, slots=True)
class ArmParity:
    """One arm's replies against the reference arm's, rung by rung and over all rungs."""

    arm: str
    rungs: list[tuple[str, Agreement]]
    overall: Agreement
    beyond_floor: bool  # differs more than the reference differs from itself


@dataclass(frozen=True, slots=True)
class Parity:
    """Every arm's output parity with the reference arm, and the reference's own floor."""

    reference: str
    temperature: float | None  # None: not recorded (a run without a manifest)
    floor: Agreement  # the reference arm against itself, same prompt at two rungs
    arms: list[ArmParity] = field(default_factory=list)

    @property
    def compared(self) -> bool:
        return not self.temperature

    def lines(self) -> list[str]:
        if not self.compared:
            return [f"replies: not compared (temperature {self.temperature:g}: sampled "
                    "replies differ between arms by design)"]
        heading = ("replies against " + self.reference + " (same prompt, same rung; "
                   + ("temperature not recorded, taken as 0" if self.temperature is None
                      else "temperature 0") + "):")
        labels = list(dict.fromkeys(label for a in self.arms for label, _ in a.rungs))
        lines = [heading]
        for label in labels:
            parts = [f"{a.arm} {got.words()}" for a in self.arms
                     for at, got in a.rungs if at == label]
            lines.append(f"  {label}: " + "; ".join(parts))
        lines.append(f"  {self.reference} against itself (the batch-variance floor): "
                     + self.floor_words())
        for a in self.arms:
            if a.overall.identical < a.overall.compared:
                lines.append(f"  {a.arm}: replies differ from {self.reference}'s "
                             + ("beyond" if a.beyond_floor else "within the noise of")
                             + f" that floor ({a.overall.words()})")
        return lines

    def floor_words(self) -> str:
        if self.floor.compared:
            return f"{self.floor.words()} (same prompt at two rungs or repeats)"
        return "not measured: no prompt was sent twice"

    def warnings(self) -> list[tuple[str, str]]:
        """(arm, message) for each arm whose greedy replies differ beyond the floor."""
        if not self.compared:
            return []
        return [(a.arm, f"at temperature 0 {a.arm}'s replies differ from {self.reference}'s "
                        f"for the same prompts ({a.overall.words()}), beyond "
                        f"{self.reference}'s own batch-variance floor ({self.floor_words()}): "
                        "its speculation changes the output")
                for a in self.arms if a.beyond_floor]

    def table(self) -> pd.DataFrame:
        """One row per arm and rung: the comparison's counts and first difference."""
        columns = ["arm", "rung", *Agreement(0, 0).as_dict()]
        return pd.DataFrame([{"arm": a.arm, "rung": label, **got.as_dict()}
                             for a in self.arms for label, got in a.rungs], columns=columns)

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "temperature": self.temperature,
                "compared": self.compared, "floor": self.floor.as_dict(),
                "arms": [{"arm": a.arm, "overall": a.overall.as_dict(),
                          "beyond_floor": a.beyond_floor,
                          "rungs": [{"rung": label, **got.as_dict()} for label, got in a.rungs]}
                         for a in self.arms]}


class Outcome(NamedTuple):
    """One reply against its reference: the same, or where they part (bytes, tokens)."""

    same: bool
    at_bytes: int | None = None
    at_token: float | None = None  # None where the reference's length is not known


def compare(pairs: Iterable[tuple[Reply, Reply]]) -> list[Outcome]:
    """Each (reply, reference reply) pair compared."""
    out = []
    for reply, ref in pairs:
        if reply.digest == ref.digest:
            out.append(Outcome(True))
            continue
        at = first_difference(reply.blocks, ref.blocks)
        token = (min(at + BLOCK_BYTES / 2, ref.size) * ref.tokens / ref.size  # mid-block
                 if at is not None and ref.size and ref.tokens else None)
        out.append(Outcome(False, at, token))
    return out


def agreement(outcomes: Iterable[Outcome]) -> Agreement:
    """The counts and first-difference medians of compared pairs."""
    found = list(outcomes)
    where = [o.at_bytes for o in found if o.at_bytes is not None]
    tokens = [o.at_token for o in found if o.at_token is not None]
    return Agreement(len(found), sum(o.same for o in found),
                     statistics.median(where) if where else math.nan,
                     statistics.median(tokens) if tokens else math.nan)


def _common(a: Mapping[Key, Reply], b: Mapping[Key, Reply]) -> list[tuple[Reply, Reply]]:
    return [(a[k], b[k]) for k in a.keys() & b.keys()]


def _wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + _Z**2 / (2 * n)) / (1 + _Z**2 / n)
    half = _Z * math.sqrt(p * (1 - p) / n + _Z**2 / (4 * n * n)) / (1 + _Z**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _beyond(got: Agreement, floor: Agreement) -> bool:
    """More replies differ than the floor's, beyond both counts' noise (no floor measured:
    beyond none differing)."""
    if not got.compared or got.identical == got.compared:
        return False
    lo, _ = got.interval()
    return lo > (floor.interval()[1] if floor.compared else 0.0)


def _label(row: pd.Series) -> str:
    rate, speed = row.get("rate"), row.get("speed")
    if speed is not None and pd.notna(speed):
        return f"speed {speed:g}x"
    if rate is not None and pd.notna(rate):
        return f"{rate:g}/s"
    return f"C={row['concurrency']:g}"


def _by_run(per_rep: pd.DataFrame, arm: str) -> dict[tuple[str, int], dict[Key, Reply]]:
    """An arm's replies per (rung label, repeat)."""
    return {(_label(row), int(row["rep"])): got
            for _, row in per_rep[per_rep["arm"] == arm].iterrows()
            if isinstance(got := row.get("replies"), dict)}


def _by_rung(runs: Mapping[tuple[str, int], dict[Key, Reply]]) -> dict[str, dict[Key, Reply]]:
    """Replies per rung label, the repeats' merged (the first reply per key)."""
    merged: dict[str, dict[Key, Reply]] = {}
    for (label, _), got in runs.items():
        into = merged.setdefault(label, {})
        for key, reply in got.items():
            into.setdefault(key, reply)
    return merged


def temperature_of(manifest: Manifest | None) -> float | None:
    """The run's sampling temperature from its scenario; None without a manifest."""
    if manifest is None:
        return None
    request = manifest.scenario.get("request") or {}
    return float(request.get("temperature") or 0.0)


def analyse(per_rep: pd.DataFrame, arms: Sequence[ArmSource],
            manifest: Manifest | None) -> Parity | None:
    """Every arm's parity with the first spec-off arm (in a run of several contexts,
    the arms at its context: other prompts share no reply); None without a spec-off arm
    and another to compare with it, or without fingerprinted replies."""
    if "replies" not in per_rep:
        return None
    off = next((a for a in arms if a.role == "spec_off"), None)
    if off is None:
        return None
    reference = off.name
    arms = [a for a in arms if a.context == off.context]
    if len(arms) < 2:
        return None
    runs = _by_run(per_rep, reference)
    ref = _by_rung(runs)
    if not any(ref.values()):
        return None
    labels = list(ref)
    floor = agreement(compare(pair for a, b in itertools.combinations(runs, 2)
                              for pair in _common(runs[a], runs[b])))
    found = []
    for arm in (a.name for a in arms if a.name != reference):
        mine = _by_rung(_by_run(per_rep, arm))
        per_rung = {label: compare(_common(mine[label], ref[label]))
                    for label in labels if label in mine}
        overall = agreement(itertools.chain.from_iterable(per_rung.values()))
        found.append(ArmParity(arm, [(label, agreement(o)) for label, o in per_rung.items()],
                               overall, _beyond(overall, floor)))
    return Parity(reference, temperature_of(manifest), floor, found)
