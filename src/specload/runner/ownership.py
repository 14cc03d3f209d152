"""One sweep at a time in a run folder, and nothing left running by one that was killed.

`owning(run_dir)` holds an advisory lock (`flock`) on `RUN_DIR/.specload.lock`, with the
owner's pid written in it, for as long as a sweep runs in the folder: a second
`specload sweep --resume` of the same folder is refused with the owner's pid. The
kernel drops the lock with the process, so the file a killed sweep (`kill -9`, the OOM
killer, a lost session) leaves behind is stale at once and is simply taken over. While
it owns the folder, the sweep keeps the children it has running (servers, Locust) on
record in `RUN_DIR/.specload-children.json` (`processes.CHILDREN`); a clean exit leaves
the record empty. What is still on record when the next sweep takes the folder over was
orphaned: `owning` first stops every such process group that still runs (the recorded
pid, started at the recorded time: a reused pid is never touched) and names any it
cannot stop.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from specload.errors import UserError
from specload.runner.processes import CHILDREN

LOCK_NAME = ".specload.lock"
CHILDREN_NAME = ".specload-children.json"
STOP_WAIT_S = 10.0


@contextlib.contextmanager
def owning(run_dir: Path) -> Iterator[list[str]]:
    """Own `run_dir` for the block: its lock held, what a killed sweep left running
    stopped (yields a line for each), its children on record."""
    path = run_dir / LOCK_NAME
    fh = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "unknown"
            raise UserError(f"{run_dir} is in use by another specload sweep (pid {owner}); "
                            "wait for it to end or stop it first") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        lines, kept = _reap_orphans(run_dir)
        CHILDREN.running = kept
        CHILDREN.path = run_dir / CHILDREN_NAME
        try:
            yield lines
        finally:
            CHILDREN.path = None
            if not CHILDREN.running:
                (run_dir / CHILDREN_NAME).unlink(missing_ok=True)
            path.unlink(missing_ok=True)
    finally:
        fh.close()  # closing drops the lock


def _group(pid: int, started: float) -> list[psutil.Process]:
    """The processes still running in the group a child led, if the child is the one on
    record or its group outlived it (members are never older than their leader)."""
    members = []
    for proc in psutil.process_iter(["pid", "create_time"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) == pid and proc.info["create_time"] >= started - 0.01:
                members.append(proc)
    return members


def _stop(members: list[psutil.Process]) -> list[psutil.Process]:
    """SIGTERM, then SIGKILL after a wait; the members still alive after both."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in members:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
                proc.resume()  # a stopped process acts on its SIGTERM once continued
        _, members = psutil.wait_procs(members, timeout=STOP_WAIT_S)
        if not members:
            break
    return members


def _reap_orphans(run_dir: Path) -> tuple[list[str], dict[int, dict[str, Any]]]:
    """Stop what a killed sweep of this folder left running: a line for each, and the
    record of what could not be stopped (kept for the next try)."""
    try:
        record: dict[str, Any] = json.loads((run_dir / CHILDREN_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return [], {}
    lines, kept = [], {}
    for pid_text, child in record.items():
        pid = int(pid_text)
        what = str(child.get("what", "process"))
        arm = f" of arm {child['arm']}" if child.get("arm") else ""
        members = _group(pid, float(child.get("started", 0.0)))
        if not members:
            continue
        left = _stop(members)
        if left:
            kept[pid] = child
            lines.append(f"could not stop the {what}{arm} left running by a killed sweep: "
                         f"pid(s) {', '.join(str(p.pid) for p in left)}; stop it by hand")
        else:
            lines.append(f"stopped the {what}{arm} left running by a killed sweep (pid {pid})")
    return lines, kept
