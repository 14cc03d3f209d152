"""Standard output piped into a reader that stops early (`specload report RUN | head`).

Python ignores SIGPIPE, so writing to a pipe whose reader has gone raises
`BrokenPipeError` instead of ending the process as it ends a C tool. `discard_if_gone`,
called on that error, tells that case apart from a broken connection to a server and
points standard output at the null device, so that nothing written later, nor Python's
own flush at exit, fails again (the recipe of Python's `signal` module documentation,
"Note on SIGPIPE").
"""

from __future__ import annotations

import os
import select
import sys


def discard_if_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it; if so, whatever it
    still gets (its buffer included) goes nowhere from now on."""
    if not _reader_gone():
        return False
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)
    return True


def _reader_gone() -> bool:
    """poll(2) reports POLLERR on the write end of a pipe with no reader."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object, or closed
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))
