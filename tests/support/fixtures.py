"""pytest fixtures over the support helpers (registered by tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import e2e, locust_runs, sweeps
from tests.support.sims import SimFactory, sim_factory
from tests.support.workers import SpecloadWorker


@pytest.fixture
def sim_server(tmp_path: Path) -> Iterator[SimFactory]:
    """`sim_server(profile=..., spec=..., ...)` starts a simulated server for this test."""
    with sim_factory(tmp_path) as factory:
        yield factory


@pytest.fixture(scope="module")
def module_sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimFactory]:
    """Like `sim_server`, but servers live until the test module ends (share them)."""
    with sim_factory(tmp_path_factory.mktemp("sim")) as factory:
        yield factory


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    """`write_scenario(data, name="scenario.yaml")` writes YAML into the test's folder."""
    return lambda data, name="scenario.yaml": sweeps.write_scenario(tmp_path, data, name)


@pytest.fixture
def run_sweep(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_sweep(*args, timeout=240)` runs `specload sweep` in the test's folder."""
    return lambda *args, **kw: sweeps.run_sweep(tmp_path, *args, **kw)


@pytest.fixture
def background_sweep(tmp_path: Path) -> Iterator[Callable[..., sweeps.BackgroundSweep]]:
    """`background_sweep(*args, env=None)` starts a sweep; it is killed at the end."""
    started: list[sweeps.BackgroundSweep] = []

    def start(*args: str, env: dict[str, str] | None = None) -> sweeps.BackgroundSweep:
        sweep = sweeps.BackgroundSweep(list(args), tmp_path, env)
        started.append(sweep)
        return sweep

    yield start
    for sweep in started:
        sweep.kill()
        sweep.stop_what_it_left()


@pytest.fixture
def specload_worker(tmp_path: Path) -> Iterator[Callable[..., SpecloadWorker]]:
    """`specload_worker(port, processes=2)` runs `specload worker 127.0.0.1`; killed at the end."""
    started: list[SpecloadWorker] = []

    def start(port: int, processes: int = 2) -> SpecloadWorker:
        worker = SpecloadWorker(tmp_path, port, processes)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


@pytest.fixture
def locust_run(tmp_path: Path) -> Callable[..., locust_runs.LocustRun]:
    """`locust_run(locustfile, host, users=10, run_time="10s", extra=[...])`."""
    return lambda *args, **kw: locust_runs.run_locust(tmp_path, *args, **kw)


@pytest.fixture
def master_ports() -> list[str]:
    """Arguments giving a distributed run its own free master port."""
    return locust_runs.master_port_args()


@pytest.fixture
def fake_stream_server() -> Iterator[Callable[..., str]]:
    """`fake_stream_server(*args, env=None)` starts the fake server; returns its URL."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> str:
        proc, url = locust_runs.start_fake_stream_server(*args, env=env)
        procs.append(proc)
        return url

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def e2e_sweep(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shared end-to-end sweep (see tests/support/e2e.py), run once per session: xdist
    workers share it through their common base folder."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, above each worker's own
    return e2e.shared_e2e(base / "e2e-shared")


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A CA and a certificate for 127.0.0.1 (see tests/support/tls.py)."""
    from tests.support.tls import make_tls_files

    return make_tls_files(tmp_path_factory.mktemp("tls"))
