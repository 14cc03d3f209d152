"""Prometheus text exposition of the simulated engine, under vLLM V1 metric names.

Counters and gauges come from the engine core; TTFT and end-to-end latency are
histograms with vLLM's buckets; `specload_sim_engine_*` series expose how late the
real-time engine runs against its own schedule. Rendering is hand-written (a dozen
series) so the engine keeps plain ints on its hot path.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)


class Histogram:
    """A cumulative-bucket histogram."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.count += 1

    def render(self, name: str, labels: str, help_text: str) -> list[str]:
        lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
        cum = 0
        for bound, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            cum += n
            le = "+Inf" if bound == float("inf") else repr(float(bound))
            lines.append(f'{name}_bucket{{{labels},le="{le}"}} {cum}')
        lines.append(f"{name}_sum{{{labels}}} {self.total!r}")
        lines.append(f"{name}_count{{{labels}}} {self.count}")
        return lines


@dataclass(slots=True)
class Sample:
    """One numeric series: (name without _total for counters, kind, help, value)."""

    name: str
    kind: str  # "counter" or "gauge"
    help: str
    value: float


def render(samples: Sequence[Sample], histograms: Sequence[tuple[str, str, Histogram]],
           labels: str) -> str:
    """Prometheus text format 0.0.4 for the given series."""
    lines: list[str] = []
    for s in samples:
        lines.append(f"# HELP {s.name} {s.help}")
        lines.append(f"# TYPE {s.name} {s.kind}")
        suffix = "_total" if s.kind == "counter" else ""
        lines.append(f"{s.name}{suffix}{{{labels}}} {float(s.value)!r}")
    for name, help_text, hist in histograms:
        lines.extend(hist.render(name, labels, help_text))
    return "\n".join(lines) + "\n"
