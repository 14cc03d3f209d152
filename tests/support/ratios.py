"""The range a ratio of counter increases can take when some of its terms fall on the
edges of the window it is read over (counters sampled once a second, read at the edges
between two samples, take in any share of what happened between them)."""

from __future__ import annotations


def ratio_range(whole: list[tuple[float, float]], partial: list[tuple[float, float]]
                ) -> tuple[float, float]:
    """The least and greatest sum(b) / sum(a) of `whole` (a, b) pairs plus any share of
    each of `partial`: taking in a share moves the ratio towards that pair's own, so the
    extremes take in whole pairs, those beyond the running ratio first."""
    def extreme(sign: float) -> float:
        a, b = sum(p[0] for p in whole), sum(p[1] for p in whole)
        for x, y in sorted(partial, key=lambda p: sign * p[1] / p[0], reverse=True):
            if a and sign * y / x <= sign * b / a:
                break
            a, b = a + x, b + y
        return b / a
    return extreme(-1.0), extreme(1.0)
