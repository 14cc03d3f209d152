"""Pure CPU-bound work spread over this machine's cores: how many cores this process may
run on, and a map over jobs in worker processes that falls back to this process where
one core (or one job) leaves nothing to share. Results come back in the jobs' order, so
a deterministic job list gives the same answer however many processes ran it."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

J = TypeVar("J")
R = TypeVar("R")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which a container's cpuset sets)."""
    return len(os.sched_getaffinity(0))


def _context() -> multiprocessing.context.BaseContext:
    # Forking a process that runs other threads can copy a held lock; fork only when alone.
    return multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")


def map_jobs(fn: Callable[[J], R], jobs: Sequence[J], processes: int | None = None) -> list[R]:
    """`[fn(j) for j in jobs]`, in up to `processes` worker processes (default: one per
    usable core); `fn` and the jobs must pickle."""
    workers = min(len(jobs), processes or usable_cores())
    if workers <= 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        return list(pool.map(fn, jobs))
