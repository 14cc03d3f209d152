"""The simulated server's own count of what it sent, per rung: every sim sweep checks itself.

A `sim:` arm's folder holds the simulator's trace (`records.SERVER_TRACE_NAME`): one JSON
line per request with every chunk's emit time and token count. Tokens emitted inside a
rung's measure window, per second, are what the client's system tok/s (tokens by
arrival time) must come close to; the report shows both and `quality` warns when they
differ by more than 1%. Runs without a trace (real servers) get no such column.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson

from specload.report.windows import Window
from specload.runfiles.records import LEGACY_SERVER_TRACE_NAME, SERVER_TRACE_NAME


def trace_path(prefix: Path) -> Path | None:
    """The trace beside a repeat's Locust files, if the arm has one."""
    for name in (SERVER_TRACE_NAME, LEGACY_SERVER_TRACE_NAME):
        path = prefix.parent / name
        if path.is_file() and path.stat().st_size > 0:
            return path
    return None


def emitted(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Emit times and token counts of every chunk in a trace (complete lines only)."""
    times: list[float] = []
    tokens: list[int] = []
    with path.open("rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break  # a line the server was still writing
            for t, n in orjson.loads(line).get("chunks") or ():
                times.append(t)
                tokens.append(n)
    return np.asarray(times, dtype=float), np.asarray(tokens, dtype=float)


def trace_tok_s(prefix: Path, windows: Sequence[Window]) -> list[float]:
    """Tokens the server emitted inside each window, per second (NaN without a trace)."""
    path = trace_path(prefix)
    if path is None:
        return [float("nan")] * len(windows)
    times, tokens = emitted(path)
    return [float(tokens[(times >= w.start) & (times < w.end)].sum()) / w.length
            for w in windows]
