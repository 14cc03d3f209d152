"""CPU sets in the Linux list format (`0`, `0-3`, `0,2-3`), pure: parsed, written and split.

The scenario's `placement` and a command arm's `cpus` give sets in this format, the one
`taskset -c`, `/proc/PID/status`'s `Cpus_allowed_list` and vLLM's
`VLLM_CPU_OMP_THREADS_BIND` use, so a value can be copied between them. `split_apart`
is the `placement: apart` rule: the load processes take the last CPUs of the usable
set, the servers the rest. Applying a set to a process is the runner's
(`runner/placement.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PART = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse(text: str) -> frozenset[int]:
    """`"0,2-3"` -> {0, 2, 3}; ValueError with a one-line reason for anything else."""
    cpus: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        m = _PART.match(part)
        if not m:
            raise ValueError(f"expected a CPU list such as 0, 0-3 or 0,2-3, got {text!r}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"CPU range {part} runs backwards (write {hi}-{lo})")
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def words(cpus: Iterable[int]) -> str:
    """{0, 2, 3} -> `"0,2-3"`: runs folded into ranges, as the kernel writes them."""
    ordered = sorted(set(cpus))
    runs: list[list[int]] = []
    for c in ordered:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def split_apart(usable: Iterable[int], load_cpus: int) -> tuple[frozenset[int], frozenset[int]]:
    """(servers, load): the last `load_cpus` of the usable CPUs (at least one, and at
    least one left for the servers) for the load, the rest for the servers. Needs two
    usable CPUs or more."""
    ordered = sorted(set(usable))
    if len(ordered) < 2:
        raise ValueError(f"{len(ordered)} usable CPU: nothing to keep apart")
    n = min(max(1, load_cpus), len(ordered) - 1)
    return frozenset(ordered[:-n]), frozenset(ordered[-n:])
