"""`specload worker`: Locust workers on a load machine, started again for every arm of a sweep.

A sweep starts a new Locust master for every arm and repeat and quits it at the end, and
a Locust worker's life is tied to one master (Locust 2.47, `locust/runners.py`,
`WorkerRunner`): the master's "quit" message ends it; a master that vanishes without one
ends it after 60 s without heartbeats (`MASTER_HEARTBEAT_TIMEOUT`); and a worker started
while no master listens sends `client_ready` every 5 s (`CONNECT_TIMEOUT`) and gives up
with a `ConnectionError` after 60 retries (`CONNECT_RETRY_COUNT`), about 5 minutes. So this
command runs `python -m locust -f - --worker --processes N` in a loop, one console line
per start, and the new workers wait for the next master. `-f -` has each start download
the master's own locustfile (`argument_parser.download_locustfile_from_master`): an arm's
workload kind decides the locustfile and its user classes (`traffic/kinds.py`), and a
worker with another one's fails every spawn (`KeyError: 'ChatSessionUser'`). Locust
writes the download under the temporary directory, so each start gets its own
(`TMPDIR`): two workers on one file system never import a file the other is writing.
Locust's own output (at `--loglevel WARNING` unless asked otherwise) is passed through.

SIGINT or SIGTERM stops it: SIGINT goes to the whole Locust process group, because the
`--processes` parent ignores the first SIGINT and waits for its forked workers
(`locust/main.py`), and each worker then stops its users and sends its last rows and a
"quit" to the master. Locust's shutdown chatter is not shown; one line says it stopped.
After a grace period (or a second signal) whatever is left is killed. The exit status is
130 after SIGINT, like the other subcommands, and 0 after SIGTERM, which is how
Kubernetes, Docker and systemd stop a service. Output piped into a reader that goes
away (`specload worker ... | head`) stops it the same way, with status 141 (SIGPIPE's).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import IO

from specload.errors import UserError
from specload.host import stdout_pipe
from specload.host.pools import usable_cores
from specload.runner.processes import stop_process_group
from specload.runner.progress import fmt_s

DEFAULT_PORT = 5557
POLL_S = 0.1
RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 30.0
# Locust failing this soon after a start is broken (bad option, unknown host), not done.
QUICK_FAILURE_S = 10.0
# Workers stopping their users and handing their last rows to the master.
STOP_GRACE_S = 15.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

Say = Callable[[str], None]


def say(msg: str) -> None:
    print(f"specload worker: {msg}", flush=True)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """Where the master is and how many worker processes this machine runs."""

    master_host: str
    port: int = DEFAULT_PORT
    processes: int = 1
    loglevel: str = "WARNING"

    def problems(self) -> list[str]:
        out = []
        if not self.master_host.strip():
            out.append("MASTER_HOST must not be empty")
        if not 1 <= self.port <= 65535:
            out.append(f"--port must be between 1 and 65535, got {self.port}")
        if self.processes < 1:
            out.append(f"--processes must be 1 or more, got {self.processes}")
        if self.loglevel not in LOG_LEVELS:
            out.append(f"--loglevel must be one of {', '.join(LOG_LEVELS)}, got {self.loglevel}")
        return out

    def locust_command(self) -> list[str]:
        return [sys.executable, "-m", "locust", "-f", "-", "--worker",
                "--master-host", self.master_host, "--master-port", str(self.port),
                "--processes", str(self.processes), "--loglevel", self.loglevel]

    def describe(self) -> str:
        return (f"{self.processes} Locust worker process(es) waiting for master "
                f"{self.master_host}:{self.port}")


def next_delay(status: int, ran_s: float, last_delay_s: float) -> float:
    """Seconds before the next start: short after a normal end (the master quit, or none
    came within Locust's retries), doubling up to a cap while Locust fails at once."""
    if status != 0 and ran_s < QUICK_FAILURE_S:
        return min(MAX_RESTART_DELAY_S, max(RESTART_DELAY_S, 2 * last_delay_s))
    return RESTART_DELAY_S


class StopRequest:
    """The signals received so far; the first asks for a clean stop, a second for a kill."""

    def __init__(self) -> None:
        self.signals: list[int] = []

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)

    @property
    def requested(self) -> bool:
        return bool(self.signals)

    @property
    def forced(self) -> bool:
        return len(self.signals) > 1

    def sleep(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True as soon as a stop is requested."""
        deadline = time.monotonic() + seconds
        while not self.requested and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return self.requested

    @contextmanager
    def installed(self) -> Iterator[StopRequest]:
        old = {s: signal.signal(s, self) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)


class LocustWorkers:
    """One `locust --worker --processes N` in its own process group, output passed through.

    When standard output is the `out` and its reader has gone, the rest of the output is
    dropped and `request` gets a SIGPIPE: the workers stop as after Ctrl-C."""

    def __init__(self, cmd: list[str], out: IO[str], request: StopRequest) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="specload-worker-")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": self._tmp.name},
            start_new_session=True, text=True, errors="replace",
        )
        self.quiet = False
        self._pump = threading.Thread(target=self._copy, args=(out, request), daemon=True)
        self._pump.start()

    def _copy(self, out: IO[str], request: StopRequest) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # read to the end, so that Locust never blocks
            if self.quiet:
                continue
            try:
                out.write(line)
                out.flush()
            except BrokenPipeError:
                if out is not sys.stdout or not stdout_pipe.discard_if_gone():
                    raise
                self.quiet = True
                request(signal.SIGPIPE, None)

    def poll(self) -> int | None:
        return self.proc.poll()

    def stop(self, request: StopRequest) -> None:
        """SIGINT to every worker process, then kill what is left after the grace period."""
        self.quiet = True
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        while (self.proc.poll() is None and not request.forced
               and time.monotonic() < deadline):
            time.sleep(POLL_S)
        self.reap()

    def reap(self) -> int:
        """Make sure no process of the group is left; the leader's exit status."""
        stop_process_group(self.proc, timeout=2.0)
        self._pump.join(timeout=2.0)
        self._tmp.cleanup()
        return self.proc.returncode


def serve(settings: WorkerSettings, out: IO[str] | None = None, tell: Say = say) -> int:
    """Start workers again and again until SIGINT or SIGTERM; the exit status."""
    request = StopRequest()
    starts, delay, previous = 0, 0.0, ""
    with request.installed():
        while not request.sleep(delay):
            starts += 1
            suffix = " (Ctrl-C to stop)" if starts == 1 else previous
            tell(f"start {starts}: {settings.describe()}{suffix}")
            began = time.monotonic()
            workers = LocustWorkers(settings.locust_command(), out or sys.stdout, request)
            while workers.poll() is None and not request.requested:
                time.sleep(POLL_S)
            if request.requested:
                workers.stop(request)
                break
            status = workers.reap()
            ran_s = time.monotonic() - began
            delay = next_delay(status, ran_s, delay)
            previous = f" (the previous ones ended after {fmt_s(ran_s)}, status {status})"
            if delay > RESTART_DELAY_S:
                tell(f"Locust exited with status {status} after {ran_s:.1f} s; "
                     f"next start in {delay:.0f} s")
    first = request.signals[0]
    tell(f"stopped by {signal.Signals(first).name} after {starts} start(s); "
         "no worker left running")
    return 0 if first == signal.SIGTERM else 128 + first  # SIGINT 130, SIGPIPE 141


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload worker`; returns the exit status."""
    settings = WorkerSettings(
        master_host=args.master_host, port=args.port,
        processes=args.processes if args.processes is not None else usable_cores(),
        loglevel=args.loglevel.upper(),
    )
    problems = settings.problems()
    if problems:
        raise UserError("; ".join(problems))
    return serve(settings)
