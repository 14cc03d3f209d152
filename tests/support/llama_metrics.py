"""What a real llama-server sweep's run folder holds, read the way the tier checks it.

`summary` is the run's summary.json; `samples` a repeat's `/metrics` samples by metric;
`at` a counter's value at a moment (linear between samples, as the report takes window
edges); `increase` a counter's rise over the repeat; `reps` each repeat of an arm with its
folder, its rungs and its report rows. `assert_tokens_match_counter` and
`assert_acceptance_is_the_counters` are the tier's two checks of a rung's figures against
the server's own counters, for any arm of any real llama-server sweep.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from specload.runfiles.records import FETCH_METRIC
from tests.support.sweeps import read_csv

Samples = dict[str, list[tuple[float, float]]]
# llama-server's speculation counters (tools/server/server-context.cpp, `--metrics`)
DRAFTS = "llamacpp:spec_decode_num_drafts_total"
DRAFT_TOKENS = "llamacpp:spec_decode_num_draft_tokens_total"
ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
FIRST_ACCEPTED = 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"}'
PREDICTED = "llamacpp:tokens_predicted_total"
EDGE_S = 0.05  # a request ending this close to a sample may fall on either side of it


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


def _inside(points: list[tuple[float, float]], t0: float, t1: float
            ) -> tuple[tuple[float, float], tuple[float, float]]:
    kept = [p for p in points if t0 <= p[0] <= t1]
    return kept[0], kept[-1]


def accept_len(row: pd.Series) -> float:
    """The row's acceptance length; 1 for a plain server's (NaN)."""
    value = row["accept_len_mean"]
    return 1.0 if pd.isna(value) else float(value)


def assert_tokens_match_counter(run: Path, per_rep: pd.DataFrame, arm: str) -> None:
    """At every rung of every repeat, the tokens of the requests that finished between two
    `/metrics` samples equal the delta of `llamacpp:tokens_predicted_total` (flushed once
    per request when its slot is released), to 1% once the requests that ended within one
    decode step of a sample, plus half its fetch, are allowed on either side (llama-server
    answers `/metrics` between steps); the client's tok/s (token arrivals) is within 3% of
    that figure, plus the tokens of the requests in flight at the window's edges."""
    for folder, rungs, by_c in reps(run, per_rep, arm):
        seen = samples(folder)
        counter, fetch = seen[PREDICTED], dict(seen[FETCH_METRIC])
        requests = [r for r in read_csv(folder / "locust_requests.csv")
                    if r["error_kind"] == "" and r["interrupted"] == "0"]
        ends = [(float(r["end"]), int(r["output_tokens"])) for r in requests]
        spans = [(float(r["start"]), float(r["end"]), int(r["output_tokens"]))
                 for r in requests]
        for rung in rungs:
            row = by_c[int(rung["users"])]
            (ta, va), (tb, vb) = _inside(counter, float(rung["measure_start"]),
                                         float(rung["measure_end"]))
            step = row["tpot_p50_ms"] * accept_len(row) / 1e3
            near_a, near_b = (max(EDGE_S, step) + fetch[t] / 2 for t in (ta, tb))
            sure = sum(n for t, n in ends if ta + near_a < t <= tb - near_b)
            edge = sum(n for t, n in ends if abs(t - ta) <= near_a or abs(t - tb) <= near_b)
            delta = vb - va
            where = f"{folder.relative_to(run)} C={rung['users']}"
            assert sure * 0.99 <= delta <= (sure + edge) * 1.01, (where, delta, sure, edge)
            straddle = sum(n for s, e, n in spans if s < ta < e or s < tb < e)
            client = row["output_tok_s"] * (tb - ta)
            assert abs(client - delta) <= 0.03 * delta + straddle, (where, client, delta)


def assert_acceptance_is_the_counters(run: Path, per_rep: pd.DataFrame, arm: str) -> None:
    """Each rung's acceptance length is the counters' 1 + accepted / drafts over its
    window, to 1%, with one token per streamed event."""
    for folder, rungs, by_c in reps(run, per_rep, arm):
        seen = samples(folder)
        drafted, accepted = seen[DRAFTS], seen[ACCEPTED]
        for rung in rungs:
            t0, t1 = float(rung["measure_start"]), float(rung["measure_end"])
            counted = ((at(accepted, t1) - at(accepted, t0))
                       / (at(drafted, t1) - at(drafted, t0)))
            row = by_c[int(rung["users"])]
            assert row["accept_len_mean"] == pytest.approx(1 + counted, rel=0.01), (
                folder.relative_to(run), rung["users"])
            assert row["tokens_per_chunk"] == pytest.approx(1.0, abs=0.01)  # a token an event
