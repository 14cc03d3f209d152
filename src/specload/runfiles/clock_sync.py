"""Clock offsets between a Locust master and its workers: the estimate and the judgment.

Rung windows are cut on the master's clock and request times are stamped on each
worker's. The master measures every worker's offset with an NTP-style exchange (RFC
5905, section 8): it sends its time t1; the worker notes when the message arrived (t2)
and when it answers (t3), both on its own clock; the master notes when the answer
arrived (t4). Then

    offset = ((t2 - t1) + (t3 - t4)) / 2     (worker clock minus master clock)
    rtt    = (t4 - t1) - (t3 - t2)

and the true offset lies within rtt / 2 of the estimate whatever the two directions
took. A round is a few exchanges; its best estimate is the one with the shortest round
trip (a busy event loop on either side only ever makes a round trip longer). This
module is pure: the master's side is `loadgen/worker_watch.py`, which judges each
worker's rounds with `problem`, and the report's is `report/clock_align.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Issue #14: a worker's offset is doubtful beyond 5 ms of uncertainty (rtt / 2) or when
# it moves between two rounds by more than 5 ms beyond their uncertainties.
UNCERTAINTY_LIMIT_S = 0.005
JUMP_LIMIT_S = 0.005
# A round: exchanges per round, apart so that one busy moment does not spoil them all,
# and how often a worker is measured again.
EXCHANGES_PER_ROUND = 5
EXCHANGE_SPACING_S = 0.05
ROUND_EVERY_S = 10.0
# An uncertain round is measured again soon; only this many in a row make the offset
# uncertain (on a loaded machine a busy moment spoils a round now and then).
RETRY_AFTER_S = 1.0
DOUBTFUL_IN_A_ROW = 3


@dataclass(frozen=True, slots=True)
class Exchange:
    """One ping and its answer: t1 and t4 on the master's clock, t2 and t3 on the worker's."""

    t1: float
    t2: float
    t3: float
    t4: float

    @property
    def offset(self) -> float:
        return ((self.t2 - self.t1) + (self.t3 - self.t4)) / 2

    @property
    def rtt(self) -> float:
        return (self.t4 - self.t1) - (self.t3 - self.t2)

    @property
    def midpoint(self) -> float:
        """When on the master's clock the offset was measured."""
        return (self.t1 + self.t4) / 2


@dataclass(frozen=True, slots=True)
class Measurement:
    """A round's result for one worker (times in seconds, `ts` on the master's clock)."""

    ts: float
    offset_s: float
    rtt_s: float
    exchanges: int

    @property
    def uncertainty_s(self) -> float:
        return self.rtt_s / 2

    @property
    def sure(self) -> bool:
        return self.uncertainty_s <= UNCERTAINTY_LIMIT_S


def measure(exchanges: Iterable[Exchange]) -> Measurement | None:
    """The round's estimate: its exchange with the shortest round trip (None if none)."""
    done = list(exchanges)
    if not done:
        return None
    best = min(done, key=lambda e: e.rtt)
    return Measurement(best.midpoint, best.offset, max(best.rtt, 0.0), len(done))


def usable(rounds: Sequence[Measurement]) -> list[Measurement]:
    """The rounds to trust: the sure ones (within `UNCERTAINTY_LIMIT_S`) if there are any."""
    sure = [m for m in rounds if m.sure]
    return sure or list(rounds)


@dataclass(frozen=True, slots=True)
class Problem:
    """A doubtful offset: `kind` (`records.EVENT_KINDS`), since when (master's clock)."""

    kind: str
    since: float
    sentence: str


def problem(rounds: Sequence[Measurement]) -> Problem | None:
    """What the latest of a worker's rounds (oldest first) makes doubtful, if anything:
    "clock_uncertain" when it is the `DOUBTFUL_IN_A_ROW`-th uncertain round in a row (a
    single one is a busy moment, measured again `RETRY_AFTER_S` later), or "clock_jump"
    when it is sure and moved from the last sure round by more than `JUMP_LIMIT_S`
    beyond their uncertainties."""
    if not rounds:
        return None
    current = rounds[-1]
    last_sure = next((i for i in range(len(rounds) - 2, -1, -1) if rounds[i].sure), None)
    if not current.sure:
        first = 0 if last_sure is None else last_sure + 1
        if len(rounds) - first != DOUBTFUL_IN_A_ROW:
            return None
        return Problem("clock_uncertain", rounds[first].ts,
                       f"clock offset {_ms(current.offset_s)} uncertain by "
                       f"±{current.uncertainty_s * 1e3:.1f} ms in {DOUBTFUL_IN_A_ROW} rounds "
                       f"in a row (round trip {current.rtt_s * 1e3:.1f} ms; limit "
                       f"±{UNCERTAINTY_LIMIT_S * 1e3:g} ms)")
    if last_sure is None:
        return None
    previous = rounds[last_sure]
    moved = current.offset_s - previous.offset_s
    if abs(moved) <= JUMP_LIMIT_S + previous.uncertainty_s + current.uncertainty_s:
        return None
    return Problem("clock_jump", previous.ts,
                   f"clock offset jumped by {moved * 1e3:+.1f} ms in "
                   f"{current.ts - previous.ts:.0f} s (from {_ms(previous.offset_s)} to "
                   f"{_ms(current.offset_s)}): the clock was stepped")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:+.1f} ms"
