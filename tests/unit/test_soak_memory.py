"""The soak's memory check reads each process's RSS floor, not two points of its sawtooth.

The simulator hands freed heap pages back every `TRIM_PERIOD_S`, so under load its RSS
climbs by a few MiB and drops again at each trim. A CI soak once failed ("sim grew
10.1%") because it compared one sample at each end, two points of that sawtooth: the
series below is such a sawtooth over a flat floor. A heap that really grows still fails.
"""

from __future__ import annotations

from collections.abc import Callable

import psutil

from tests.support import script_module

soak = script_module("soak")

MIB = 1024 * 1024
PERIOD = soak.TRIM_PERIOD_S


def _sawtooth(live_mib: Callable[[float], float], t0: float = 24.0,
              freed_mib: float = 7.0) -> list[tuple[float, int]]:
    """RSS sampled twice a second from just after a trim to just before the third one after
    it: the live heap plus freed pages piling up until each trim."""
    out, t = [], t0
    while t <= t0 + 2.95 * PERIOD:
        freed = freed_mib * ((t - t0) % PERIOD) / PERIOD
        out.append((t, int((live_mib(t) + freed) * MIB)))
        t += soak.SAMPLE_EVERY_S
    return out


def _sample(series: list[tuple[float, int]]) -> soak.Sample:
    return soak.Sample("sim", psutil.Process(), born=0.0, rss=series)


def test_a_flat_heap_under_a_trim_sawtooth_has_no_growth() -> None:
    series = _sawtooth(lambda t: 63.0)
    first, last = series[0][1], series[-1][1]
    assert 100 * (last - first) / first > 10  # what one sample at each end read in CI
    assert abs(_sample(series).growth_pct) < 1


def test_a_growing_heap_still_fails() -> None:
    series = _sawtooth(lambda t: 60.0 + 0.2 * t)  # 12 MiB a minute of live objects
    growth = _sample(series).growth_pct
    assert growth > 10
    assert soak.floor(series, first=True) == series[0][1]


def test_the_floor_windows_each_hold_a_trim() -> None:
    assert soak.FLOOR_WINDOW_S > PERIOD
    series = [(0.0, 5), (10.0, 3), (PERIOD + 10.0, 9), (2 * PERIOD + 20.0, 7), (3 * PERIOD, 8)]
    assert soak.floor(series, first=True) == 3
    assert soak.floor(series, first=False) == 7
    assert soak.floor([], first=True) is None
