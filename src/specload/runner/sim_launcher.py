"""Start `specload sim` as a subprocess and wait for its ready line: the one way to do it.

The runner's `sim:` arms, the tests and the benchmark scripts all start simulated
servers through `launch`: it runs `python -m specload.cli sim --port 0 ...` in its own
process group with stdout and stderr appended to a log file, waits until the log shows
`specload-sim listening on URL` (written after the socket listens), and returns a
`SimProcess` with the URL, the draft length the server announced and ways to stop it.
The log is read from its size at launch, so one log can serve several launches (a
resumed sweep appends to the same `server.log`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from specload.config.settings import Simulator, to_args
from specload.runner.processes import log_tail, spawn_group, stop_process_group

READY_LINE = re.compile(r"specload-sim listening on (https?://\S+)")
# The start-up banner names the draft length it uses (`spec on k=4`).
DRAFT_K = re.compile(r"spec on k=(\d+)")
READY_TIMEOUT_S = 60.0


class LaunchError(RuntimeError):
    """The simulator exited or did not become ready; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class SimOptions:
    """What to pass to `specload sim`: its settings (`settings.Simulator`, whose defaults
    are the simulator's own) and where and how it runs."""

    settings: Simulator = field(default_factory=Simulator)
    trace_path: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0
    extra_args: Sequence[str] = field(default_factory=tuple)
    # what runs the command, e.g. `ip netns exec NS` for a server on another test host
    wrapper: Sequence[str] = field(default_factory=tuple)
    cpus: frozenset[int] | None = None  # where it runs (None: wherever the caller may)

    @classmethod
    def of(cls, **keys: Any) -> SimOptions:
        """Options from keyword arguments, `settings.Simulator`'s among them (`profile`,
        `spec`, `faults`, ...)."""
        names = {f.name for f in fields(Simulator)}
        own = {k: v for k, v in keys.items() if k not in names}
        return cls(Simulator(**{k: v for k, v in keys.items() if k in names}), **own)

    def command(self) -> list[str]:
        cmd = [*self.wrapper, sys.executable, "-m", "specload.cli", "sim",
               "--host", self.host, "--port", str(self.port),
               *to_args(self.settings, Simulator)]
        if self.trace_path is not None:
            cmd += ["--trace", str(self.trace_path)]
        return cmd + list(self.extra_args)


@dataclass
class SimProcess:
    """A running simulated server."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    options: SimOptions
    draft_k: int | None = None

    @property
    def trace_path(self) -> Path | None:
        return self.options.trace_path

    def problem(self) -> str | None:
        """None while the process runs, else how it ended (with the log's last lines)."""
        if self.proc.poll() is None:
            return None
        return f"simulated server exited with status {self.proc.returncode}: " \
               f"{log_tail(self.log_path)}"

    def read_trace(self) -> list[dict[str, Any]]:
        """Trace records written so far (complete lines only)."""
        path = self.trace_path
        if path is None or not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines(keepends=True)
                if line.endswith("\n") and line.strip()]

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") \
            if self.log_path.exists() else ""

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop the server's process group (SIGTERM, then SIGKILL); returns its status."""
        stop_process_group(self.proc, timeout)
        return self.proc.returncode


def launch(options: SimOptions, log_path: Path, *, ready_timeout_s: float = READY_TIMEOUT_S,
           env: Mapping[str, str] | None = None, arm: str | None = None) -> SimProcess:
    """Start a simulated server and wait for its ready line; LaunchError if it fails."""
    offset = log_path.stat().st_size if log_path.exists() else 0
    proc = spawn_group(options.command(), log_path, what="simulated server", arm=arm,
                       env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                       cpus=options.cpus)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        with log_path.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode(errors="replace")
        match = READY_LINE.search(text)
        if match:
            k = DRAFT_K.search(text)
            return SimProcess(match.group(1).rstrip("/"), proc, log_path, options,
                              int(k.group(1)) if k else None)
        if proc.poll() is not None:
            raise LaunchError(f"simulated server exited with status {proc.returncode} before "
                              f"it was ready: {log_tail(log_path)}")
        time.sleep(0.02)
    stop_process_group(proc)
    raise LaunchError(f"simulated server not ready after {ready_timeout_s:.0f} s: "
                      f"{log_tail(log_path)}")
