"""Give the C heap's free pages back to the OS now and then, so RSS tracks live memory.

Under a steady load the simulator's live Python objects do not grow, yet its resident
size does: glibc keeps pages of freed medium-sized blocks (per-request RNG state, trace
lines, request objects) scattered through its heap and reuses them only in part
(docs/benchmarks.md, "Soak", has the measurement). `malloc_trim(0)` hands those pages
back; `trim_forever` calls it every `TRIM_PERIOD_S` from the event loop. Elsewhere than
glibc it does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import sys
from collections.abc import Callable

TRIM_PERIOD_S = 30.0


def _load_malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_malloc_trim = _load_malloc_trim()


def trim() -> bool:
    """Return free heap pages to the OS; False where that is not possible."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True


async def trim_forever(period_s: float = TRIM_PERIOD_S) -> None:
    """Trim every `period_s` seconds until cancelled; returns at once where it cannot trim."""
    if _malloc_trim is None:
        return
    while True:
        await asyncio.sleep(period_s)
        trim()
