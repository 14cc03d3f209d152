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

import os
import subprocess
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path

from specload.runner.processes import log_tail, stop_process_group
from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch
from specload.scenario import Arm

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
        sim = arm.sim
        assert sim is not None
        self.options = SimOptions(profile=sim.profile, spec=sim.spec, k=sim.k, seed=sim.seed,
                                  faults=tuple(sim.faults), trace_path=trace_path)
        self.process: SimProcess | None = None
        self.draft_k: int | None = None

    def command(self) -> list[str]:
        return self.options.command()

    def start(self, log_path: Path) -> str:
        try:
            self.process = launch(self.options, log_path, ready_timeout_s=SIM_READY_TIMEOUT_S)
        except LaunchError as exc:
            raise ServerError(str(exc)) from None
        self.base_url = self.process.url
        self.draft_k = self.process.draft_k
        return self.base_url

    def problem(self) -> str | None:
        return self.process.problem() if self.process is not None else None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


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
                    f"was ready: {log_tail(log_path)}"
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
