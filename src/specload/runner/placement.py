"""CPU placement: which CPUs the servers a sweep starts and its load processes run on.

A server and a load generator on one host compete for its cores. A CPU-bound server
(OpenMP or ggml threads that spin while they wait for work) takes every cycle of the
cores it runs on, and a load process woken on one of them waits for the CPU: its
timestamps run late and its users sit idle, so it offers less than C. The scenario's
`placement` (`apart`, or CPU lists for `servers` and `load`) and a command arm's
`cpus` say where each runs; `plan` resolves them against the CPUs this process may use
(an unknown CPU is an error, a set shared by a server and the load a warning), and
`pinned` gives the function that applies a set to a child between its fork and its
exec (`sched_setaffinity`, inherited by every thread and process it starts). `{cpus}`
and `{ncpus}` in a command arm's lines become its set and the set's size, for the
engine's own thread settings (llama.cpp's `-t`, vLLM's `VLLM_CPU_OMP_THREADS_BIND`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from specload.config.scenario import Arm, Scenario
from specload.errors import UserError
from specload.host import cpu_sets

CPUS_PLACEHOLDER = "{cpus}"
NCPUS_PLACEHOLDER = "{ncpus}"
GUIDE = "docs/real-engines.md, one host for server and load"

Cpus = frozenset[int]


def usable() -> Cpus:
    """The CPUs this process may run on (its affinity: a container's cpuset sets it)."""
    return frozenset(os.sched_getaffinity(0))


@dataclass(frozen=True)
class CpuPlan:
    """The resolved placement: the servers' and the load's CPU sets (None: unpinned,
    every usable CPU), and the lines to tell the user about it."""

    usable: Cpus
    servers: Cpus | None = None
    load: Cpus | None = None
    lines: list[str] = field(default_factory=list)

    def for_arm(self, arm: Arm) -> Cpus | None:
        """The CPUs of the arm's server (None: unpinned, or not started here)."""
        if arm.url is not None:
            return None
        if arm.command is not None and arm.command.cpus is not None:
            return cpu_sets.parse(arm.command.cpus)
        return self.servers


def _checked(cpus: Cpus, what: str, have: Cpus) -> Cpus:
    gone = cpus - have
    if gone:
        raise UserError(f"{what}: CPU {cpu_sets.words(gone)} is not one this process may "
                        f"use (it may use {cpu_sets.words(have)})")
    return cpus


def _load_share(scenario: Scenario, processes: int | None, have: Cpus) -> int:
    """How many CPUs `apart` gives the load: one per local load process (`-1`, one per
    core: half of them)."""
    n = processes if processes is not None else scenario.processes
    return 1 if n in (None, 1) else max(1, len(have) // 2) if n == -1 else int(n)


def plan(scenario: Scenario, processes: int | None = None, have: Cpus | None = None
         ) -> CpuPlan:
    """The scenario's placement on this machine; UserError for a CPU it cannot use."""
    have = have if have is not None else usable()
    placed = scenario.placement
    local = [a for a in scenario.arms if a.url is None]
    servers = load = None
    lines: list[str] = []
    if placed is not None and placed.apart:
        if len(have) < 2:
            lines.append(f"note: placement apart: this process may use only CPU "
                         f"{cpu_sets.words(have)}, so servers and load share it")
        else:
            servers, load = cpu_sets.split_apart(have, _load_share(scenario, processes, have))
    elif placed is not None:
        servers = _checked(cpu_sets.parse(placed.servers), "placement.servers", have) \
            if placed.servers else None
        load = _checked(cpu_sets.parse(placed.load), "placement.load", have) \
            if placed.load else None
    cpu_plan = CpuPlan(have, servers, load, lines)
    for i, arm in enumerate(scenario.arms):
        if arm.command is not None and arm.command.cpus is not None:
            _checked(cpu_sets.parse(arm.command.cpus), f"arms[{i}].command.cpus", have)
    lines += describe(cpu_plan, local)
    return cpu_plan


def describe(cpu_plan: CpuPlan, local: Iterable[Arm]) -> list[str]:
    """Where each runs, and a warning for each server that shares CPUs with the load; with
    no placement, a note where the sweep starts servers of the user's (an engine's
    threads may spin; the simulator's do not)."""
    local = list(local)
    placed = {a.name: cpu_plan.for_arm(a) for a in local}
    if cpu_plan.load is None and not any(placed.values()):
        if any(a.command for a in local) and len(cpu_plan.usable) >= 2:
            return [f"note: servers started here and the load share every CPU; "
                    f"`placement: apart` keeps them apart ({GUIDE})"]
        return []
    load = cpu_plan.load or cpu_plan.usable
    where = ", ".join(f"{name} on CPU {cpu_sets.words(cpus or cpu_plan.usable)}"
                      for name, cpus in placed.items())
    out = [f"placement: load on CPU {cpu_sets.words(load)}" + (f"; {where}" if where else "")]
    for name, cpus in placed.items():
        shared = (cpus or cpu_plan.usable) & load
        if shared:
            out.append(f"warning: placement: the load and arm {name}'s server share CPU "
                       f"{cpu_sets.words(shared)}: a busy server delays the load's "
                       f"timestamps and holds its concurrency down ({GUIDE})")
    return out


def fill(line: str, cpus: Cpus | None, have: Cpus | None = None) -> str:
    """A command line with `{cpus}` and `{ncpus}` filled in (unpinned: every usable CPU)."""
    if CPUS_PLACEHOLDER not in line and NCPUS_PLACEHOLDER not in line:
        return line
    cpus = cpus or have or usable()
    return (line.replace(CPUS_PLACEHOLDER, cpu_sets.words(cpus))
            .replace(NCPUS_PLACEHOLDER, str(len(cpus))))


def pinned(cpus: Cpus | None) -> Callable[[], None] | None:
    """What a child runs before its exec to take the CPU set (None: nothing to do)."""
    if not cpus:
        return None
    chosen = set(cpus)
    return lambda: os.sched_setaffinity(0, chosen)


def allowed(pid: int) -> Cpus:
    """The CPUs a running process may use, as its `/proc/PID/status` says."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return cpu_sets.parse(line.split(":", 1)[1].strip())
    raise ValueError(f"/proc/{pid}/status has no Cpus_allowed_list")
