"""Child-process plumbing shared by the runner, the tests and the scripts.

`free_port` asks the OS for a free TCP port on loopback (for a master port or a server
started with an explicit port); `spawn_group` starts a child in its own session with its
output in a log file, and `stop_process_group` stops it and everything it spawned;
`log_tail` gives the last lines of a child's log for a one-line error message. While a
sweep owns a run folder (`runner/ownership.py`), every child `spawn_group` starts is on
record in `CHILDREN` until it is stopped, so a sweep killed outright leaves a list of
what it had running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from specload.runner import placement


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on `host` a moment ago."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Children:
    """The children a sweep has running, kept in a file of the run folder (none: in
    memory only) as `{pid: {"started": create time, "what": ..., "arm": ...}}`."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.running: dict[int, dict[str, Any]] = {}

    def started(self, proc: subprocess.Popen[Any], what: str, arm: str | None) -> None:
        try:
            started = psutil.Process(proc.pid).create_time()
        except psutil.Error:  # already gone: nothing to leave behind
            return
        self.running[proc.pid] = {"started": started, "what": what, "arm": arm}
        self._save()

    def stopped(self, proc: subprocess.Popen[Any]) -> None:
        if self.running.pop(proc.pid, None) is not None:
            # a record that cannot be rewritten (a full disk) only lists a dead process
            with contextlib.suppress(OSError):
                self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        fd, tmp = tempfile.mkstemp(prefix=".children-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({str(pid): v for pid, v in self.running.items()}, fh)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


CHILDREN = Children()


def spawn_group(args: Sequence[str] | str, log_path: Path, *, what: str | None,
                arm: str | None = None, shell: bool = False,
                env: Mapping[str, str] | None = None,
                cpus: frozenset[int] | None = None) -> subprocess.Popen[bytes]:
    """Start a child in its own session (a Ctrl-C in the terminal reaches only the runner,
    which then stops its children in order), its output appended to `log_path`, on the
    CPUs `cpus` (None: wherever this process may run), and put it on record as `what`
    until `stop_process_group` stops it (`what` None: a short-lived helper the caller
    waits for, not put on record)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            args, shell=shell, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env=None if env is None else dict(env),
            preexec_fn=placement.pinned(cpus))
    if what is not None:
        try:
            CHILDREN.started(proc, what, arm)
        except BaseException:  # not on record (a full disk): not left running either
            stop_process_group(proc, timeout=5.0)
            raise
    return proc


def stop_process_group(proc: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM the process group led by `proc`, then SIGKILL whatever is left. A stopped
    group (SIGSTOP, a debugger) is continued so that it can act on the SIGTERM."""
    try:
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
                if sig == signal.SIGTERM:
                    os.killpg(proc.pid, signal.SIGCONT)
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            # The leader is gone; sweep up any member of its group still running.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
    finally:
        CHILDREN.stopped(proc)


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log joined on one line ("" when unreadable)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
