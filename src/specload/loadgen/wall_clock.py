"""The one wall clock of a load process, and the test seam that shifts it.

Every time a Locust process of specload stamps (a request's start and end, the
in-flight watermark, client stats, the rungs, the master's clock exchanges) comes from
`now()`, and kernel receive stamps are moved by the same `SHIFT_S` (`reader.py`), so
that a process's times all agree with each other. `SPECLOAD_CLOCK_OFFSET_S` is for
tests only: it makes one process's clock run that many seconds ahead (negative:
behind), as a load machine with a wrong clock would, so that the master's offset
measurement and the report's correction can be checked. Locust's own timestamps are
not shifted (specload reads none of them across machines).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

OFFSET_ENV = "SPECLOAD_CLOCK_OFFSET_S"
SHIFT_S = float(os.environ.get(OFFSET_ENV) or 0.0)


def _shifted() -> float:
    return time.time() + SHIFT_S


# `time.time` itself when nothing is shifted: this is called several times per request.
now: Callable[[], float] = _shifted if SHIFT_S else time.time
