"""What a real llama-server sweep's run folder holds, read the way the tier checks it.

`summary` is the run's summary.json; `samples` a repeat's `/metrics` samples by metric;
`at` a counter's value at a moment (linear between samples, as the report takes window
edges); `increase` a counter's rise over the repeat; `reps` each repeat of an arm with its
folder, its rungs and its report rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from tests.support.sweeps import read_csv

Samples = dict[str, list[tuple[float, float]]]
# llama-server's speculation counters (tools/server/server-context.cpp, `--metrics`)
DRAFTS = "llamacpp:spec_decode_num_drafts_total"
DRAFT_TOKENS = "llamacpp:spec_decode_num_draft_tokens_total"
ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
FIRST_ACCEPTED = 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"}'


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def samples(rep_dir: Path) -> Samples:
    out: Samples = {}
    for r in read_csv(rep_dir / "locust_server_metrics.csv"):
        out.setdefault(r["metric"], []).append((float(r["ts"]), float(r["value"])))
    return out


def at(points: list[tuple[float, float]], t: float) -> float:
    """A counter's value at `t`, linear between the samples around it (the report's
    window edges)."""
    ts, vs = zip(*points, strict=True)
    return float(np.interp(t, ts, vs))


def increase(seen: Samples, name: str) -> float:
    return seen[name][-1][1] - seen[name][0][1]


def rep_dir(run: Path, arm: str, rep: int) -> Path:
    """A repeat's folder; an arm run once keeps its files in its own folder."""
    folder = run / arm / f"rep-{rep}"
    return folder if folder.is_dir() else run / arm


def reps(run: Path, per_rep: pd.DataFrame, arm: str
         ) -> Iterator[tuple[Path, list[dict[str, str]], dict[int, pd.Series]]]:
    """(rep folder, its rungs file's rows, its figures by concurrency) per repeat, a
    tie-break repeat too."""
    for rep in sorted(set(per_rep.loc[per_rep["arm"] == arm, "rep"])):
        folder = rep_dir(run, arm, rep)
        rows = per_rep[(per_rep["arm"] == arm) & (per_rep["rep"] == rep)]
        yield folder, read_csv(folder / "locust_rungs.csv"), {
            int(r["concurrency"]): r for _, r in rows.iterrows()}
