"""The engine registry: one entry per inference engine, the only list of engines there is.

Each engine is one module of this package holding everything about it (its `Engine`
entry, /metrics series, schedule writer and caveats; the types in `entry.py`, schedules
in `schedule.py`, start-command parsing in `spec_command.py`). The registry is the
built-in modules' entries and then every entry point of the `specload.engines` group
(a third-party package's `[project.entry-points."specload.engines"]`, each naming an
`Engine`), loaded when this package is first imported: the sweep, the Locust processes
and the report all find the same engines. The scenario validates `engine:`,
`sim.flavor` and the placeholders against it; the sampler and the report read the
series through `engines/metrics.py`; the report writes every switch's setting and the runner
fills the verification arm's start line. An arm's engine is the scenario's `engine:`,
else guessed from its start command, else the engine its sim flavour imitates (vLLM when
it has none). `register` adds an engine to this process alone.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from specload.engines import llamacpp, ollama, sglang, tgi, trtllm, vllm
from specload.engines.entry import (
    ACCEPTANCE,
    ACCEPTED_DRAFTS,
    MODELS_ROUTE,
    OTHER,
    ContextWindow,
    Engine,
    LoadSwitch,
    Meaning,
    RequestSpeculation,
    Series,
    SyntheticAcceptance,
    fill_acceptance,
)

__all__ = ["ACCEPTANCE", "ACCEPTED_DRAFTS", "ENTRY_POINTS", "MODELS_ROUTE", "ORIGIN",
           "OTHER", "REGISTRY", "ContextWindow", "Engine", "LoadSwitch", "Meaning",
           "RequestSpeculation", "Series", "SyntheticAcceptance", "fill_acceptance"]

ENTRY_POINTS = "specload.engines"  # the entry point group a package adds engines in
BUILT_IN = (vllm.ENGINE, sglang.ENGINE, trtllm.ENGINE, tgi.ENGINE, llamacpp.ENGINE,
            ollama.ENGINE)
GENERIC = Engine(OTHER, "this engine", generic=True)


def _installed() -> tuple[tuple[Engine, str], ...]:
    """The engines the installed packages add through the entry point group, each with
    where it came from; one that does not load is skipped with a one-line warning."""
    found = []
    for point in entry_points(group=ENTRY_POINTS):
        where = f"{point.dist.name if point.dist else 'entry point'} ({point.value})"
        try:
            engine = point.load()
        except Exception as exc:  # a broken plug-in must not stop every command
            print(f"specload: warning: engine {point.name!r} from {where} skipped: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if not isinstance(engine, Engine):
            print(f"specload: warning: engine {point.name!r} from {where} skipped: a "
                  f"{type(engine).__name__}, not a specload.engines.Engine", file=sys.stderr)
            continue
        found.append((engine, where))
    return tuple(found)


REGISTRY: dict[str, Engine] = {}
ORIGIN: dict[str, str] = {}  # where each entry came from: "built-in" or its package


def register(engine: Engine, origin: str = "registered") -> None:
    """Add an engine, before `other` (which stays last: it matches what nothing else does)."""
    if engine.id in REGISTRY:
        raise ValueError(f"engine {engine.id!r} is registered already")
    other = REGISTRY.pop(OTHER, GENERIC)
    REGISTRY[engine.id] = engine
    REGISTRY[OTHER] = other
    ORIGIN[engine.id] = origin


def request_speculation() -> tuple[RequestSpeculation, ...]:
    """Every registered engine's per-request speculation fields, each once."""
    return tuple(dict.fromkeys(e.speculation for e in REGISTRY.values() if e.speculation))


def ids() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(engine: str | None) -> Engine | None:
    """The entry of an engine id; None when it is None or not registered."""
    return REGISTRY.get(engine) if engine else None


def name_of(engine: str) -> str:
    """An engine's display name (an id not registered stands for itself)."""
    entry = REGISTRY.get(engine)
    return entry.name if entry else engine


def switches() -> tuple[tuple[Engine, LoadSwitch], ...]:
    """The engines that switch speculation by batch size, each with its switch, in the
    registry's order."""
    return tuple((e, e.switch) for e in REGISTRY.values() if e.switch is not None)


def load_aware(engine: str | None) -> bool:
    """Whether a schedule is the recommendation for this engine: it switches by load, or
    it is not known (None, `other`), so every switch's setting is given."""
    if engine is None:
        return True
    entry = REGISTRY.get(engine)
    return entry is not None and (entry.switch is not None or entry.generic)


def per_token_events(engine: str | None) -> bool:
    entry = get(engine)
    return entry is not None and entry.per_token_events


def sim_flavors() -> tuple[str, ...]:
    """Every simulator flavour the registry names, in its order."""
    return tuple(f for e in REGISTRY.values() for f in e.sim_flavors)


def verify_placeholders() -> tuple[str, ...]:
    """The placeholders of `command.verify_command`, one per load switch."""
    return tuple(switch.placeholder for _, switch in switches())


def engine_from_command(command: str | None) -> str | None:
    """The engine a start command launches, or None when nothing gives it away.

    The first entry whose pattern matches wins: a Docker command running one engine may
    mention other words, so the broad pattern (Ollama's) comes after the specific ones.
    """
    if not command:
        return None
    for entry in REGISTRY.values():
        if entry.command is not None and entry.command.search(command):
            return entry.id
    return None


def _of_flavor(flavor: str) -> str:
    return next((e.id for e in REGISTRY.values() if flavor in e.sim_flavors), OTHER)


def resolve_engine(arm: Mapping[str, Any] | None,
                   recorded: str | None = None) -> tuple[str | None, str]:
    """(engine, how it is known) for one arm of a scenario given as plain data.

    `recorded` is the manifest's own `engine` field when the runner wrote one. The
    second item says where the answer came from: "scenario", "command", "sim flavor",
    "sim default" or "unknown" (engine None).
    """
    if recorded:
        return recorded, "scenario"
    arm = arm or {}
    if arm.get("engine"):
        return str(arm["engine"]), "scenario"
    command = arm.get("command")
    start = command.get("start") if isinstance(command, Mapping) else None
    guessed = engine_from_command(start if isinstance(start, str) else None)
    if guessed:
        return guessed, "command"
    sim = arm.get("sim")
    if isinstance(sim, Mapping):
        flavor = sim.get("flavor")
        if isinstance(flavor, str) and flavor:
            return _of_flavor(flavor), "sim flavor"
        return "vllm", "sim default"
    return None, "unknown"


for _engine in BUILT_IN:
    register(_engine, "built-in")
for _engine, _where in _installed():
    if _engine.id in REGISTRY:
        print(f"specload: warning: engine {_engine.id!r} from {_where} skipped: the id is "
              f"taken ({ORIGIN[_engine.id]})", file=sys.stderr)
    else:
        register(_engine, _where)
ORIGIN[OTHER] = "built-in"
