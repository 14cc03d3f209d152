"""Arm servers: start a server for an arm, wait until it is ready, watch it, stop it.

Three kinds, one interface (`ArmServer`): the built-in simulator started as a
`specload sim --port 0` subprocess whose ready line gives its URL; a server started
and stopped by the user's shell commands; and an already-running base URL. The last
two are ready when their `ready_url` answers 2xx, or else `/health` and then
`/v1/models` (`health_checks.readiness`); a failure says what each answered. While a run
goes, a server is watched by `health_checks.Liveness` (alive while tokens stream; probed only
after a silence; dead on refused connections or a long silence) and, where the runner
started it, by its process. Every child runs in its own process group with its output
in a log file in the arm folder, so stopping it reaches every process it spawned and a
Ctrl-C in the terminal reaches only the runner, which then shuts children down in
order. Failures raise `ServerError` with one line.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
from abc import ABC, abstractmethod
from pathlib import Path
from urllib.parse import urlsplit

from specload.config.scenario import Arm
from specload.runner import health_checks, placement
from specload.runner.metrics_sources import Expositions, PrometheusQuery, Reading
from specload.runner.processes import log_tail, spawn_group, stop_process_group
from specload.runner.sim_launcher import LaunchError, SimOptions, SimProcess, launch

SIM_READY_TIMEOUT_S = 60.0
READY_PROBE_TIMEOUT_S = 5.0


class ServerError(Exception):
    """An arm's server could not be started, became unreachable, or died."""


class ArmServer(ABC):
    """A server under test, as seen by the runner."""

    def __init__(self, arm: Arm, api_key: str | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.arm = arm
        self.api_key = api_key
        self.tls = tls
        self.base_url = ""
        self.ready_results: list[health_checks.ProbeResult] = []
        self._liveness: health_checks.Liveness | None = None
        self._models_body: bytes | None = None

    def metrics(self, api_key: str | None, tls: ssl.SSLContext | None,
                timeout_s: float = 2.0) -> Reading:
        """Where the arm's engine series are read (a Prometheus server, its replicas'
        /metrics, or `/metrics` of its URL), with the sweep's key and TLS trust (a
        simulated server's too)."""
        arm = self.arm
        if arm.prometheus is not None:
            return PrometheusQuery(arm.prometheus.url, arm.prometheus.selector, timeout_s, tls)
        urls = arm.metrics_urls or [f"{self.base_url}/metrics"]
        return Expositions(urls, timeout_s, api_key, tls)

    @property
    def explicit_ready_url(self) -> str | None:
        return self.arm.ready_url

    @abstractmethod
    def start(self, log_path: Path) -> str:
        """Start (or find) the server and wait until it is ready; returns its base URL."""

    def process_problem(self) -> str | None:
        """Why the server's process is gone, if the runner started one."""
        return None

    def problem(self, last_chunk_at: float | None) -> str | None:
        """None while the server looks alive, else why it does not."""
        gone = self.process_problem()
        if gone:
            return gone
        if self._liveness is None:
            url = self.ready_results[-1].url if self.ready_results else (
                self.explicit_ready_url or self.base_url + health_checks.READY_PATHS[0])
            self._liveness = health_checks.Liveness(
                url, lambda u, t: health_checks.probe(u, t, self.api_key, self.tls),
                self.arm.stall_after_s)
        return self._liveness.check(last_chunk_at)

    def silent_since(self) -> float | None:
        """When the silence that `problem` judges began, once it has judged one."""
        return self._liveness.silent_since if self._liveness is not None else None

    def check_ready(self, timeout: float = READY_PROBE_TIMEOUT_S) -> bool:
        self.ready_results = health_checks.readiness(self.base_url, self.explicit_ready_url,
                                              timeout, self.api_key, self.tls)
        return self.ready_results[-1].ok

    def not_ready(self) -> str:
        return health_checks.describe(self.ready_results)

    def models_body(self) -> bytes | None:
        """The server's `/v1/models` answer (None when it gives none), asked once."""
        if self._models_body is None:
            result = next((r for r in self.ready_results
                           if r.ok and r.url.endswith("/v1/models")), None)
            if result is None:
                result = health_checks.probe(self.base_url + "/v1/models",
                                             READY_PROBE_TIMEOUT_S, self.api_key, self.tls)
            self._models_body = result.body if result.ok else b""
        return self._models_body or None

    def models(self) -> list[str] | None:
        """The model ids the server lists (None when it does not answer /v1/models)."""
        body = self.models_body()
        return health_checks.listed_models(body) if body is not None else None

    def stop(self) -> None:  # noqa: B027 - an already-running server has nothing to stop
        """Stop the server if the runner started it."""


class SimServer(ArmServer):
    """The built-in simulated server, `specload sim --port 0` in a subprocess."""

    def __init__(self, arm: Arm, trace_path: Path | None = None,
                 cpus: frozenset[int] | None = None) -> None:
        super().__init__(arm)
        sim = arm.sim
        assert sim is not None
        self.options = SimOptions(sim.settings(), trace_path=trace_path,
                                  extra_args=tuple(sim.extra_args()), cpus=cpus)
        self.process: SimProcess | None = None
        self.draft_k: int | None = None

    def command(self) -> list[str]:
        return self.options.command()

    def start(self, log_path: Path) -> str:
        try:
            self.process = launch(self.options, log_path, ready_timeout_s=SIM_READY_TIMEOUT_S,
                                  arm=self.arm.name)
        except LaunchError as exc:
            raise ServerError(str(exc)) from None
        self.base_url = self.process.url
        self.draft_k = self.process.draft_k
        return self.base_url

    def process_problem(self) -> str | None:
        return self.process.problem() if self.process is not None else None

    def problem(self, last_chunk_at: float | None) -> str | None:
        # our own server: alive while its process runs
        return self.process_problem()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


class CommandServer(ArmServer):
    """A server started and stopped by the user's shell commands."""

    def __init__(self, arm: Arm, api_key: str | None = None,
                 tls: ssl.SSLContext | None = None, cpus: frozenset[int] | None = None
                 ) -> None:
        super().__init__(arm, api_key, tls)
        assert arm.command is not None
        self.spec = arm.command
        self.cpus = cpus
        self.base_url = self.spec.base_url
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def explicit_ready_url(self) -> str | None:
        return self.spec.ready_url or self.arm.ready_url

    def start(self, log_path: Path) -> str:
        self.log_path = log_path
        if _listening(self.base_url):
            raise ServerError(
                f"something already listens at {self.base_url} before the start command "
                "ran: another server holds that port (stop it, or give the arm its own "
                "port); its answers would be taken for this arm's")
        self.proc = spawn_group(placement.fill(self.spec.start, self.cpus), log_path,
                                shell=True, what="server (start command)", arm=self.arm.name,
                                cpus=self.cpus)
        deadline = time.monotonic() + self.spec.ready_timeout_s
        while time.monotonic() < deadline:
            if self.check_ready():
                return self.base_url
            # A start command may exit 0 after launching a daemon (`docker run -d`).
            code = self.proc.poll()
            if code not in (None, 0):
                raise ServerError(
                    f"start command exited with status {code} before the server was ready "
                    f"({self.not_ready()}): {log_tail(log_path)}")
            time.sleep(0.5)
        self.stop()
        raise ServerError(f"not ready after {self.spec.ready_timeout_s:.0f} s "
                          f"({self.not_ready()}; start command log: {log_path})")

    def process_problem(self) -> str | None:
        code = self.proc.poll() if self.proc is not None else None
        if code not in (None, 0):
            return f"start command exited with status {code}: {log_tail(self.log_path)}" \
                if self.log_path else f"start command exited with status {code}"
        return None

    def stop(self) -> None:
        if self.spec.stop:
            log = self.log_path or Path(os.devnull)
            stopper = spawn_group(placement.fill(self.spec.stop, self.cpus), log, shell=True,
                                  what=None)
            try:
                stopper.wait(timeout=self.spec.stop_timeout_s)
            except subprocess.TimeoutExpired:
                stop_process_group(stopper, timeout=2.0)
        if self.proc is not None:
            stop_process_group(self.proc, timeout=self.spec.stop_timeout_s)
            self.proc = None


def _listening(url: str, timeout: float = 1.0) -> bool:
    """Whether a TCP connection to the URL's host and port is accepted."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class UrlServer(ArmServer):
    """An already-running server: checked for readiness, never started or stopped."""

    def __init__(self, arm: Arm, api_key: str | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        super().__init__(arm, api_key, tls)
        assert arm.url is not None
        self.base_url = arm.url

    def start(self, log_path: Path) -> str:
        if not self.check_ready():
            raise ServerError(f"server at {self.base_url} is not ready "
                              f"({self.not_ready()}); start it or set the arm's ready_url")
        return self.base_url


def server_for(arm: Arm, trace_path: Path | None, api_key: str | None,
               tls: ssl.SSLContext | None = None, cpus: frozenset[int] | None = None
               ) -> ArmServer:
    """The `ArmServer` for an arm's kind, started on `cpus` if it is started here."""
    if arm.sim is not None:
        return SimServer(arm, trace_path if arm.sim.trace else None, cpus)
    if arm.command is not None:
        return CommandServer(arm, api_key, tls, cpus)
    return UrlServer(arm, api_key, tls)
