"""Child-process plumbing shared by the runner, the tests and the scripts.

`free_port` asks the OS for a free TCP port on loopback (for a master port or a server
started with an explicit port); `stop_process_group` stops a child started in its own
session and everything it spawned; `log_tail` gives the last lines of a child's log for a
one-line error message.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on `host` a moment ago."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def stop_process_group(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM the process group led by `proc`, then SIGKILL whatever is left."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; sweep up any member of its group still running.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log joined on one line ("" when unreadable)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
