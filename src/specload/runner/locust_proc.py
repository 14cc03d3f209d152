"""Build the `locust` command line for one arm and run it as a watched subprocess.

The runner never imports Locust (it monkey-patches the interpreter with gevent); it
runs `python -m locust -f <packaged locustfile> --headless --csv PREFIX
--csv-full-history --host URL` with the rungs (the ladder, or an open workload's rates),
the request and workload settings and the load mode (the locustfile and the option
passing the rungs are the workload kind's, `traffic/kinds.py`): one process,
`--processes N` on this machine, or a master (`--master --expect-workers N
--master-bind-host H`) that workers started elsewhere connect to; with workers, the
users of a lost one restart on the others (`--enable-rebalancing`).
Locust's exit status is made independent of request failures (`--exit-code-on-error
0`), so a non-zero status means Locust itself failed. Its log goes to a file in the arm
folder; stopping sends SIGINT to Locust (it then stops the users, collects the workers'
last rows, writes its CSVs and quits) and, after a grace period, SIGKILL to its process
group. Not SIGTERM: headless Locust 2.47 installs its SIGTERM handler only after a load
shape has finished, so during a ladder SIGTERM kills it on the spot, losing the rows of
the rung in progress and orphaning `--processes` workers.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import specload
from specload.config.scenario import RequestSettings, Scenario, Workload
from specload.config.settings import Request, Windows, to_args
from specload.config.settings import Workload as SettingsWorkload
from specload.runfiles.manifest import PromptFitEntry
from specload.runner.processes import free_port, spawn_group, stop_process_group
from specload.traffic.kinds import KINDS, USERS
from specload.traffic.prompt_fit import Fit, cut_text, skip_text
from specload.traffic.prompts import run_seed

_LOADGEN = Path(specload.__file__).resolve().parent / "loadgen"
LOCUSTFILES = {kind.name: _LOADGEN / kind.locustfile for kind in KINDS.values()}
LOCUSTFILE = LOCUSTFILES[USERS.name]


@dataclass(frozen=True, slots=True)
class LoadMode:
    """How load is generated: processes on this machine, or a master and its workers."""

    processes: int | None = None
    workers: int | None = None
    master_bind_host: str = "127.0.0.1"
    master_bind_port: int = 5557
    workers_wait_s: int = 300

    @classmethod
    def from_scenario(cls, scenario: Scenario, processes: int | None = None) -> LoadMode:
        dist = scenario.distributed
        if dist is not None:
            return cls(None, dist.workers, dist.master_bind_host, dist.master_bind_port,
                       dist.workers_wait_s)
        return cls(processes if processes is not None else scenario.processes)


def request_args(req: RequestSettings) -> list[str]:
    """The users' Locust options for a scenario's request settings."""
    return to_args(req, Request)


# A worker that stops sending heartbeats is marked missing after ~4 s; only with this
# option does Locust 2.47's master dispatch its users again at once over the remaining
# workers (`MasterRunner.heartbeat_worker`), instead of at the next rung.
REBALANCE = "--enable-rebalancing"


def workload_args(workload: Workload, levels: Sequence[float]) -> list[str]:
    """The rungs (the kind's `--ladder` or `--rates`) and the workload's Locust options."""
    return [*KINDS[workload.kind].axis.arg(levels),
            *to_args(workload, SettingsWorkload)]


def load_mode_args(mode: LoadMode) -> list[str]:
    """Locust options for the load mode: master/workers, local processes, or neither."""
    if mode.workers:
        return ["--master", "--expect-workers", str(mode.workers),
                "--master-bind-host", mode.master_bind_host,
                "--master-bind-port", str(mode.master_bind_port),
                "--expect-workers-max-wait", str(mode.workers_wait_s), REBALANCE]
    if mode.processes not in (None, 1):
        # Locust's implicit master would listen on every interface at 5557: keep it on
        # loopback, on a free port so that concurrent sweeps do not collide.
        port = str(free_port())
        return ["--processes", str(mode.processes), "--master-bind-host", "127.0.0.1",
                "--master-bind-port", port, "--master-port", port, REBALANCE]
    return []


def locust_command(
    scenario: Scenario, host: str, prefix: Path, levels: Sequence[float], mode: LoadMode,
    fit: PromptFitEntry | None = None, arm: str | None = None,
) -> list[str]:
    """The full command line for one arm (or the missing rungs of one), sending the
    prompt set as `fit` left it (or the prompt length of `arm`'s context)."""
    return [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILES[scenario.workload.kind]),
        "--headless", "--only-summary", "--exit-code-on-error", "0",
        "--csv", str(prefix), "--csv-full-history", "--host", host,
        *workload_args(scenario.workload, levels),
        *to_args(scenario, Windows),
        *request_args(_from_rung(scenario, levels, arm)), *fit_args(fit),
        *load_mode_args(mode),
    ]


def _from_rung(scenario: Scenario, levels: Sequence[float], arm: str | None
               ) -> RequestSettings:
    """The request settings of `arm`'s run of `levels`, its seed that of its first rung."""
    ladder = list(scenario.levels)
    first = ladder.index(levels[0]) if levels and levels[0] in ladder else 0
    req = scenario.request if arm is None else scenario.request_for(arm)
    return req.model_copy(update={"seed": run_seed(req.seed, first)}) if first else req


def fit_args(fit: PromptFitEntry | None) -> list[str]:
    """The options that leave out and shorten the prompts the context check chose."""
    if fit is None:
        return []
    chosen = Fit(fit.context, skip=tuple(fit.skip), cut=fit.cut)
    return to_args(SimpleNamespace(skip_prompts=skip_text(chosen), cut_prompts=cut_text(chosen)),
                   Request)


def worker_command(mode: LoadMode) -> str:
    """What to run on each load machine to join this master (N: its worker processes)."""
    host = mode.master_bind_host
    if host in ("0.0.0.0", "::", "*", ""):
        host = socket.gethostname()
    return f"specload worker {shlex.quote(host)} --port {mode.master_bind_port} --processes N"


class LocustProcess:
    """One running `locust` with its log file."""

    def __init__(self, cmd: list[str], log_path: Path, arm: str | None = None,
                 cpus: frozenset[int] | None = None) -> None:
        self.proc = spawn_group(cmd, log_path, what="Locust", arm=arm,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, cpus=cpus)
        self.log_path = log_path

    def poll(self) -> int | None:
        return self.proc.poll()

    def stop(self, grace_s: float = 20.0) -> int | None:
        """Ask Locust to finish (it writes its CSVs), then make sure it is gone."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGINT)
                self.proc.wait(timeout=grace_s)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        stop_process_group(self.proc, timeout=2.0)
        return self.proc.returncode
