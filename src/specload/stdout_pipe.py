"""Standard output piped into a reader that stops early (`specload report RUN | head`).

Python ignores SIGPIPE, so writing to a pipe whose reader has gone raises
`BrokenPipeError` instead of ending the process as it ends a C tool. `reader_gone` tells
that case apart from a broken connection to a server, and `discard_rest` points standard
output at the null device, so that nothing written later, nor Python's own flush at exit,
fails again (the recipe of Python's `signal` module documentation, "Note on SIGPIPE").
"""

from __future__ import annotations

import os
import select
import sys


def reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll(2) reports
    POLLERR on the write end of a pipe with no reader)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object, or closed
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def discard_rest() -> None:
    """Send whatever standard output still gets (its buffer included) nowhere."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    finally:
        os.close(null)
