"""Arm servers: start a server for an arm, wait until it is ready, watch it, stop it.

Three kinds, one interface (`ArmServer`): the built-in simulator started as a
`specload sim --port 0` subprocess whose ready line gives its URL; a server started
and stopped by the user's shell commands, ready when its readiness URL answers 2xx
(stopped by the stop command, then by signals to the start command's process group);
and an already-running base URL, only checked for readiness. Every child runs in its
own process group with its output in a log file in the arm folder, so stopping it
reaches every process it spawned and a Ctrl-C in the terminal reaches only the runner,
which then shuts children down in order. Failures raise `ServerError` with one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path

from specload.scenario import Arm

READY_LINE = re.compile(r"specload-sim listening on (http://\S+)")
# The simulator's start-up banner names the draft length it uses (`spec on k=4`).
DRAFT_K = re.compile(r"spec (?:on|adaptive) k=(\d+)")
SIM_READY_TIMEOUT_S = 60.0


class ServerError(Exception):
    """An arm's server could not be started, became unreachable, or died."""


def http_ok(url: str, timeout: float = 2.0, api_key: str | None = None) -> bool:
    """True when GET `url` answers with a 2xx status within `timeout` seconds."""
    req = urllib.request.Request(url)
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop_process_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
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


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _spawn(args: list[str] | str, log_path: Path, shell: bool = False) -> subprocess.Popen:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            args, shell=shell, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )


class ArmServer(ABC):
    """A server under test, as seen by the runner."""

    def __init__(self, arm: Arm, api_key: str | None = None) -> None:
        self.arm = arm
        self.api_key = api_key
        self.base_url = ""

    @property
    def metrics_url(self) -> str:
        return self.arm.metrics_url or f"{self.base_url}/metrics"

    @property
    def ready_url(self) -> str:
        return self.arm.ready_url or f"{self.base_url}/health"

    @abstractmethod
    def start(self, log_path: Path) -> str:
        """Start (or find) the server and wait until it is ready; returns its base URL."""

    @abstractmethod
    def problem(self) -> str | None:
        """None while the server looks alive, else why it does not."""

    def stop(self) -> None:  # noqa: B027 - an already-running server has nothing to stop
        """Stop the server if the runner started it."""


class SimServer(ArmServer):
    """The built-in simulated server, `specload sim --port 0` in a subprocess."""

    def __init__(self, arm: Arm, trace_path: Path | None = None) -> None:
        super().__init__(arm)
        self.trace_path = trace_path
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.draft_k: int | None = None

    def command(self) -> list[str]:
        sim = self.arm.sim
        assert sim is not None
        cmd = [sys.executable, "-m", "specload.cli", "sim", "--profile", sim.profile,
               "--spec", sim.spec, "--host", "127.0.0.1", "--port", "0",
               "--seed", str(sim.seed)]
        if sim.k is not None:
            cmd += ["-k", str(sim.k)]
        if self.trace_path is not None:
            cmd += ["--trace", str(self.trace_path)]
        for fault in sim.faults:
            cmd += ["--fault", fault]
        return cmd

    def start(self, log_path: Path) -> str:
        self.log_path = log_path
        # The log is appended to across resumed attempts: read only this start's output.
        offset = log_path.stat().st_size if log_path.exists() else 0
        self.proc = _spawn(self.command(), log_path)
        deadline = time.monotonic() + SIM_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            with log_path.open("rb") as fh:
                fh.seek(offset)
                text = fh.read().decode(errors="replace")
            match = READY_LINE.search(text)
            if match:
                self.base_url = match.group(1).rstrip("/")
                k = DRAFT_K.search(text)
                self.draft_k = int(k.group(1)) if k else None
                return self.base_url
            if self.proc.poll() is not None:
                raise ServerError(
                    f"simulated server exited with status {self.proc.returncode} before it "
                    f"was ready: {_tail(log_path)}"
                )
            time.sleep(0.05)
        self.stop()
        raise ServerError(f"simulated server not ready after {SIM_READY_TIMEOUT_S:.0f} s")

    def problem(self) -> str | None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = _tail(self.log_path) if self.log_path else ""
            return f"simulated server exited with status {self.proc.returncode}: {tail}"
        return None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)
            self.proc = None


class CommandServer(ArmServer):
    """A server started and stopped by the user's shell commands."""

    def __init__(self, arm: Arm, api_key: str | None = None) -> None:
        super().__init__(arm, api_key)
        assert arm.command is not None
        self.spec = arm.command
        self.base_url = self.spec.base_url
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def ready_url(self) -> str:
        return self.spec.ready_url or self.arm.ready_url or f"{self.base_url}/health"

    def start(self, log_path: Path) -> str:
        self.log_path = log_path
        self.proc = _spawn(self.spec.start, log_path, shell=True)
        deadline = time.monotonic() + self.spec.ready_timeout_s
        while time.monotonic() < deadline:
            if http_ok(self.ready_url, api_key=self.api_key):
                return self.base_url
            # A start command may exit 0 after launching a daemon (`docker run -d`).
            code = self.proc.poll()
            if code not in (None, 0):
                raise ServerError(
                    f"start command exited with status {code} before {self.ready_url} "
                    f"was ready: {_tail(log_path)}"
                )
            time.sleep(0.5)
        self.stop()
        raise ServerError(
            f"{self.ready_url} not ready after {self.spec.ready_timeout_s:.0f} s "
            f"(start command log: {log_path})"
        )

    def problem(self) -> str | None:
        if self.proc is not None and self.proc.poll() is None:
            return None
        if http_ok(self.ready_url, api_key=self.api_key):
            return None
        return f"server stopped answering at {self.ready_url}"

    def stop(self) -> None:
        if self.spec.stop:
            log = self.log_path or Path(os.devnull)
            stopper = _spawn(self.spec.stop, log, shell=True)
            try:
                stopper.wait(timeout=self.spec.stop_timeout_s)
            except subprocess.TimeoutExpired:
                stop_process_group(stopper, timeout=2.0)
        if self.proc is not None:
            stop_process_group(self.proc, timeout=self.spec.stop_timeout_s)
            self.proc = None


class UrlServer(ArmServer):
    """An already-running server: checked for readiness, never started or stopped."""

    def __init__(self, arm: Arm, api_key: str | None = None) -> None:
        super().__init__(arm, api_key)
        assert arm.url is not None
        self.base_url = arm.url

    def start(self, log_path: Path) -> str:
        if not http_ok(self.ready_url, timeout=5.0, api_key=self.api_key):
            raise ServerError(
                f"server at {self.base_url} is not reachable ({self.ready_url} did not "
                "answer 2xx); start it or set the arm's ready_url"
            )
        return self.base_url

    def problem(self) -> str | None:
        if http_ok(self.ready_url, api_key=self.api_key):
            return None
        return f"server stopped answering at {self.ready_url}"


def server_for(arm: Arm, trace_path: Path | None, api_key: str | None) -> ArmServer:
    """The `ArmServer` for an arm's kind."""
    if arm.sim is not None:
        return SimServer(arm, trace_path if arm.sim.trace else None)
    if arm.command is not None:
        return CommandServer(arm, api_key)
    return UrlServer(arm, api_key)
