"""Simulated servers for tests, started with the runner's launcher and always stopped.

`sim_in_thread` runs one in the test's own process instead (a thread with its own event
loop), for a flavour the test adds at run time, which a child process would not see.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from specload.cli import build_parser
from specload.runner.sim_launcher import SimOptions, SimProcess, launch
from specload.sim.server import build_api, engine_profile, serve

READY_TIMEOUT_S = 30.0


def start_sim(
    tmp_dir: Path,
    profile: str = "h100-llama8b-eagle3",
    spec: str = "on",
    k: int | None = None,
    seed: int = 0,
    faults: Sequence[str] = (),
    trace: bool = True,
    extra_args: Sequence[str] = (),
    flavor: str = "vllm",
) -> SimProcess:
    """One simulated server on 127.0.0.1 and a free port, its log and trace in `tmp_dir`."""
    tag = time.monotonic_ns()
    options = SimOptions.of(profile=profile, spec=spec, k=k, seed=seed, faults=tuple(faults),
                               flavor=flavor, extra_args=tuple(extra_args),
                               trace_path=tmp_dir / f"sim-trace-{tag}.jsonl" if trace else None)
    return launch(options, tmp_dir / f"sim-{tag}.log", ready_timeout_s=READY_TIMEOUT_S)


class SimFactory:
    """`factory(profile=..., spec=..., ...)` starts a server; `stop_all` stops every one."""

    def __init__(self, tmp_dir: Path) -> None:
        self.tmp_dir = tmp_dir
        self.started: list[SimProcess] = []

    def __call__(self, **kwargs: object) -> SimProcess:
        server = start_sim(self.tmp_dir, **kwargs)  # type: ignore[arg-type]
        self.started.append(server)
        return server

    def stop_all(self) -> None:
        for server in self.started:
            server.stop()


@contextmanager
def sim_factory(tmp_dir: Path) -> Iterator[SimFactory]:
    factory = SimFactory(tmp_dir)
    try:
        yield factory
    finally:
        factory.stop_all()


async def _serve(args: object, started: threading.Event, stop: asyncio.Event,
                 url: list[str]) -> None:
    def ready(where: str) -> None:
        url.append(where)
        started.set()

    api = build_api(args, engine_profile(args))  # type: ignore[arg-type]
    await serve(api, "127.0.0.1", 0, stop=stop, ready=ready)


@contextmanager
def sim_in_thread(*sim_args: str) -> Iterator[str]:
    """`specload sim SIM_ARGS` served from a thread of this process; yields its URL."""
    args = build_parser().parse_args(["sim", *sim_args])
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    started = threading.Event()
    url: list[str] = []
    thread = threading.Thread(target=loop.run_until_complete,
                              args=(_serve(args, started, stop, url),), daemon=True)
    thread.start()
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while not started.wait(0.05):
            assert thread.is_alive() and time.monotonic() < deadline, \
                "the in-process simulator did not start"
        yield url[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()
