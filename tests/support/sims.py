"""Simulated servers for tests, started with the runner's launcher and always stopped."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from specload.runner.sim_launcher import SimOptions, SimProcess, launch

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
    options = SimOptions(profile=profile, spec=spec, k=k, seed=seed, faults=tuple(faults),
                         trace_path=tmp_dir / f"sim-trace-{tag}.jsonl" if trace else None,
                         extra_args=("--flavor", flavor, *extra_args))
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
