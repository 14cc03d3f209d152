"""The sweep's progress lines: one per finished rung, with elapsed time, ETA and live tok/s.

Rungs are detected from the rungs file the ladder shape appends to as each rung ends.
Live tok/s comes from the server's generated-tokens counter over the rung's measure
window when the server exposes one (vLLM, SGLang, the simulator), otherwise from the
per-request rows that ended inside the window (an approximation: the report counts
tokens by arrival time).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from specload.records import REQUESTS_SUFFIX, RUNGS_SUFFIX
from specload.runner.metrics_scrape import MetricsSampler


def fmt_s(seconds: float) -> str:
    """`75` -> `1m15s`, `9` -> `9s`."""
    m, s = divmod(max(0, int(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def rungs_rows(prefix: Path) -> list[dict[str, str]]:
    """Rows of `<prefix>_rungs.csv` so far (none before the first rung ends)."""
    try:
        with Path(str(prefix) + RUNGS_SUFFIX).open(newline="") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        return []


def client_tok_s(prefix: Path, t0: float, t1: float) -> float | None:
    """Approximate tok/s from per-request rows that ended inside [t0, t1]."""
    path = Path(str(prefix) + REQUESTS_SUFFIX)
    if not path.exists() or t1 <= t0:
        return None
    tokens = 0
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            try:
                if t0 <= float(row["end"]) <= t1:
                    tokens += int(row["output_tokens"] or 0)
            except (KeyError, ValueError):
                continue
    return tokens / (t1 - t0)


def live_tok_s(
    row: dict[str, str], sampler: MetricsSampler | None, prefix: Path
) -> tuple[float | None, str]:
    """Output tok/s over a rungs row's measure window, and where the number came from."""
    t0, t1 = float(row["measure_start"]), float(row["measure_end"])
    rate = sampler.generated_tok_s(t0, t1) if sampler else None
    if rate is not None:
        return rate, "server"
    return client_tok_s(prefix, t0, t1), "client, by request end"


def progress_line(
    label: str, row: dict[str, str], ladder: Sequence[int], elapsed_s: float,
    remaining_s: float, rate: float | None, source: str,
) -> str:
    live = f"{rate:.1f} tok/s ({source})" if rate is not None else "tok/s n/a"
    rung = list(ladder).index(int(row["users"])) + 1
    return (
        f"[{label}] rung {rung}/{len(ladder)} C={row['users']} done | "
        f"elapsed {fmt_s(elapsed_s)}, ETA {fmt_s(remaining_s)} | {live}"
    )
