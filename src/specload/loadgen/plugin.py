"""Installing specload into a Locust process: the one call each locustfile makes.

Importing a module of the load generator changes nothing in Locust. `install` hooks them
in: specload's Locust arguments (`options`), the per-process context and its checks
(`context`), the CPU and event-loop-lag probe (`health_probe`), the web UI's Tokens tab
(`tokens_tab`), the master's watch over its workers (`worker_watch`), the request
recorder (`recorder`), the live figures for Prometheus (`prom_export`), the
non-yielding keep-alive check (`keepalive.install`, a patch of geventhttpclient), and
spawn messages that a worker reads without parsing Locust's options again per key
(`spawn_message`, a patch of Locust). A locustfile names the parts
it adds on top: the ladder's arguments (`shape`), the sessions' and open loop's
(`workload_options`), the open loop's plan messages (`open_loop`). Each part is
installed once per process, however many locustfiles import each other
(`locustfiles/ladder.py` re-exports the package's), in the order the listeners must
run; `loop_clock`'s listener is moved after them all at every call, so that
`--run-time` counts from after their start-up work.
"""

from __future__ import annotations

from types import ModuleType

from specload.loadgen import (
    health_probe,
    keepalive,
    loop_clock,
    options,
    process_state,
    prom_export,
    recorder,
    spawn_message,
    tokens_tab,
    worker_watch,
)

CORE: tuple[ModuleType, ...] = (options, process_state, health_probe, tokens_tab, worker_watch,
                                 recorder, prom_export, keepalive, spawn_message)
_installed: set[str] = set()


def install(*parts: ModuleType) -> None:
    """Install the core parts, then `parts` (modules with an `install()`), each once."""
    for part in (*CORE, *parts):
        if part.__name__ not in _installed:
            _installed.add(part.__name__)
            part.install()
    loop_clock.install()
