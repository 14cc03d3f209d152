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
module is pure: the master's side is `loadgen/worker_watch.py`, the report's
`report/clock.py`, and both judge measurements with `problems`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Issue #14: a worker's offset is doubtful beyond 5 ms of uncertainty (rtt / 2) or when
# it moves between two rounds by more than 5 ms beyond their uncertainties.
UNCERTAINTY_LIMIT_S = 0.005
JUMP_LIMIT_S = 0.005
# A round: exchanges per round, a few ms apart so that one busy moment does not spoil
# them all, and how often a worker is measured again.
EXCHANGES_PER_ROUND = 5
ROUND_EVERY_S = 10.0


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


def measure(exchanges: Iterable[Exchange]) -> Measurement | None:
    """The round's estimate: its exchange with the shortest round trip (None if none)."""
    done = list(exchanges)
    if not done:
        return None
    best = min(done, key=lambda e: e.rtt)
    return Measurement(best.midpoint, best.offset, max(best.rtt, 0.0), len(done))


def problems(previous: Measurement | None, current: Measurement) -> list[tuple[str, str]]:
    """(kind, sentence) for what is doubtful about `current`: "clock_uncertain" or
    "clock_jump" (from `previous`, the same worker's last round)."""
    found = []
    if current.uncertainty_s > UNCERTAINTY_LIMIT_S:
        found.append(("clock_uncertain",
                      f"clock offset {_ms(current.offset_s)} uncertain by "
                      f"±{current.uncertainty_s * 1e3:.1f} ms (round trip "
                      f"{current.rtt_s * 1e3:.1f} ms; limit "
                      f"±{UNCERTAINTY_LIMIT_S * 1e3:g} ms)"))
    if previous is not None:
        moved = current.offset_s - previous.offset_s
        allowed = JUMP_LIMIT_S + previous.uncertainty_s + current.uncertainty_s
        if abs(moved) > allowed:
            found.append(("clock_jump",
                          f"clock offset jumped by {moved * 1e3:+.1f} ms in "
                          f"{current.ts - previous.ts:.0f} s (from {_ms(previous.offset_s)} "
                          f"to {_ms(current.offset_s)}): the clock was stepped"))
    return found


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:+.1f} ms"
