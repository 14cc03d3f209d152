"""`specload engines`: the registered engines as a table, built-in and installed alike.

One row per engine: its id (what a scenario's `engine:` takes), display name, where it
came from (built-in, or the package whose `specload.engines` entry point added it), the
placeholder its load switch fills in `command.verify_command`, whether it has an adaptive
mode of its own (`spec: adaptive`), the simulator flavours
that imitate it, and where its responses tell one request's drafts.
"""

from __future__ import annotations

import argparse

from specload import engines
from specload.engines.entry import Engine


def row(engine: Engine) -> dict[str, str]:
    """One engine's cells."""
    spec = engine.speculation
    return {"id": engine.id, "name": engine.name, "from": engines.ORIGIN.get(engine.id, "?"),
            "load switch": engine.switch.placeholder if engine.switch else "-",
            "own adaptive mode": "yes" if engine.adaptive else "-",
            "sim flavours": ", ".join(engine.sim_flavors) or "-",
            "per-request drafts": ".".join(spec.section) + f".{{{spec.drafted}, "
                                  f"{spec.accepted}}}" if spec else "-"}


def table(rows: list[dict[str, str]]) -> str:
    """Columns padded to their widest cell, a heading line first."""
    heads = list(rows[0])
    widths = {h: max(len(h), *(len(r[h]) for r in rows)) for h in heads}
    lines = ["  ".join(h.ljust(widths[h]) for h in heads).rstrip()]
    lines += ["  ".join(r[h].ljust(widths[h]) for h in heads).rstrip() for r in rows]
    return "\n".join(lines)


def reference() -> str:
    """docs/engines.md's table: every built-in engine's row, and the /metrics series it
    is read by (a test keeps the page so)."""
    lines = ["| id | name | load switch | own adaptive mode | sim flavours | per-request "
             "drafts | /metrics series read |", "|---|---|---|---|---|---|---|"]
    for e in engines.REGISTRY.values():
        if engines.ORIGIN.get(e.id) != "built-in":
            continue
        cells = {**row(e), "series": "; ".join(f"`{s.key}` ({s.meaning})" for s in e.series)
                 or "-"}
        cells.pop("from")
        if e.adaptive:
            cells["own adaptive mode"] = e.adaptive.how
        lines.append("| " + " | ".join(cells.values()) + " |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    print(table([row(e) for e in engines.REGISTRY.values()]))
    return 0
