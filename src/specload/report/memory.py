"""Keep freed memory inside the process while a report is measured.

Measuring one repeat allocates and frees numpy and Arrow temporaries of a few MB
thousands of times. By default glibc returns freed memory to the kernel as soon as a
few MB of it are free, so the next temporary faults fresh pages in again; on a virtual
machine a page fault costs microseconds, and this churn took longer than the
arithmetic. Raising glibc's trim threshold keeps those pages, and raising its mmap
threshold to the maximum serves temporaries up to that size from the reusable heap.
Nothing is done on other C libraries.
"""

from __future__ import annotations

import ctypes
import sys

_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2**20  # the largest value glibc accepts on 64-bit systems
TRIM_THRESHOLD = 2**30


def keep_freed_memory() -> bool:
    """Tune glibc's malloc for reuse; True when it was tuned."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
