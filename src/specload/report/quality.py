"""Data-quality warnings: reasons not to trust a rung, an arm or a comparison.

Each warning names its arm, concurrency and repeat where it has them, a short kind and
a one-sentence message. Checks: achieved concurrency more than 10% under target,
a saturated load generator, failures above 1%, too few requests in a window, Locust's
own throughput disagreeing with the records by more than 3%, tokens counted from
chunks, and token-count mismatch between paired arms that ran with ignore_eos.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from specload.manifest import Manifest
from specload.records import CLIENT_LAG_LIMIT_MS
from specload.report.crossover import PairResult

CONCURRENCY_SHORTFALL = 0.10
CLIENT_CPU_LIMIT = 90.0
CLIENT_LAG_LATE_SHARE = 0.01  # more than 1% of wake-ups late: the rung's lag p99 is over
FAILURE_LIMIT = 0.01
MIN_REQUESTS = 10
CROSSCHECK_LIMIT = 0.03
TOKEN_MISMATCH_LIMIT = 0.02
IGNORE_EOS_LENGTH_SHARE = 0.95


def _warning(kind: str, message: str, arm: str | None = None, concurrency: int | None = None,
             rep: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "arm": arm, "concurrency": concurrency, "rep": rep,
            "message": message}


def _client_lagged(row: Any) -> bool:
    """The rung's lag p99 is over the limit: more than 1% of the probe's wake-ups were
    late. Files from before wake-ups were counted only have per-second p99s: their worst."""
    share = getattr(row, "client_lag_late_share", float("nan"))
    if np.isfinite(share):
        return bool(share > CLIENT_LAG_LATE_SHARE)
    return bool(row.client_lag_p99_max_ms > CLIENT_LAG_LIMIT_MS)


def _rung_warnings(row: Any, multi_rep: bool) -> Iterator[dict[str, Any]]:
    where = f"{row.arm} at C={row.concurrency}" + (f" (rep {row.rep})" if multi_rep else "")
    ctx = {"arm": row.arm, "concurrency": int(row.concurrency), "rep": int(row.rep)}
    if row.achieved_concurrency < (1 - CONCURRENCY_SHORTFALL) * row.concurrency:
        yield _warning("concurrency_shortfall",
                       f"{where}: achieved concurrency {row.achieved_concurrency:.1f} is more "
                       f"than 10% under the target {row.concurrency}", **ctx)
    if row.client_cpu_max > CLIENT_CPU_LIMIT:
        yield _warning("client_saturated",
                       f"{where}: the load generator was saturated (CPU up to "
                       f"{row.client_cpu_max:.0f}%, event-loop lag p99 up to "
                       f"{row.client_lag_p99_max_ms:.1f} ms); add --processes or workers",
                       **ctx)
    elif _client_lagged(row):
        share = getattr(row, "client_lag_late_share", float("nan"))
        how = (f"{100 * share:.1f}% of its wake-ups more than {CLIENT_LAG_LIMIT_MS:g} ms "
               f"late" if np.isfinite(share) else "event-loop lag")
        yield _warning("client_starved",
                       f"{where}: the load generator's timestamps ran late ({how}, "
                       f"p99 up to {row.client_lag_p99_max_ms:.1f} ms) while it used only "
                       f"{row.client_cpu_max:.0f}% CPU: the machine it ran on was short of "
                       f"CPU; run the load elsewhere or stop other work", **ctx)
    total = row.requests + row.failures
    if total and row.failures / total > FAILURE_LIMIT:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(row.failures_by_kind.items()))
        yield _warning("failures",
                       f"{where}: {row.failures} of {total} requests failed "
                       f"({100 * row.failures / total:.1f}%: {kinds})", **ctx)
    if row.requests < MIN_REQUESTS:
        running = (f", {row.interrupted} still running when the run ended"
                   if row.interrupted else "")
        yield _warning("too_few_requests",
                       f"{where}: only {row.requests} of {row.requests_started} requests that "
                       f"started in the measure window completed{running}; too few to trust "
                       f"its latencies, lengthen measure_s", **ctx)
    if abs(row.crosscheck_diff) > CROSSCHECK_LIMIT:
        yield _warning("crosscheck",
                       f"{where}: Locust's stats history shows {row.locust_completed_tok_s:.1f} "
                       f"tok/s of completed responses; the request records differ by "
                       f"{100 * row.crosscheck_diff:+.1f}% beyond what its 1 s timestamps "
                       f"explain (lost or extra records?)",
                       **ctx)
    if row.chunk_counted_share > 0:
        yield _warning("tokens_from_chunks",
                       f"{where}: {100 * row.chunk_counted_share:.0f}% of requests had no usage "
                       f"report, their tokens were counted as chunks (an undercount under "
                       f"speculation)", **ctx)


def rung_warnings(per_rep: pd.DataFrame) -> list[dict[str, Any]]:
    """Warnings about single rungs of single repeats."""
    if per_rep.empty:
        return []
    multi_rep = per_rep["rep"].nunique() > 1
    return [w for row in per_rep.itertuples(index=False) for w in _rung_warnings(row, multi_rep)]


def _any_key_true(obj: Any, key: str) -> bool:
    if isinstance(obj, dict):
        return any((k == key and v is True) or _any_key_true(v, key) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_any_key_true(v, key) for v in obj)
    return False


def ignore_eos_in(manifest: Manifest | None) -> bool:
    """Whether the scenario in a manifest sets ignore_eos anywhere."""
    return manifest is not None and _any_key_true(manifest.scenario, "ignore_eos")


def token_mismatch_warnings(
    pairs: Sequence[PairResult], summary: pd.DataFrame, ignore_eos: bool
) -> list[dict[str, Any]]:
    """Mean output tokens per request differing between paired arms that ignore EOS.

    Without a manifest, ignore_eos is assumed when nearly all requests of both arms
    stopped at the length limit.
    """
    out = []
    for pair in pairs:
        a = summary[summary["arm"] == pair.on.name].set_index("concurrency")
        b = summary[summary["arm"] == pair.off.name].set_index("concurrency")
        for c in a.index.intersection(b.index):
            ta, tb = a.at[c, "output_tokens_mean"], b.at[c, "output_tokens_mean"]
            at_limit = min(a.at[c, "finish_length_share"], b.at[c, "finish_length_share"])
            if not (ignore_eos or at_limit >= IGNORE_EOS_LENGTH_SHARE):
                continue
            if np.isfinite(ta) and np.isfinite(tb) and tb > 0 and abs(ta / tb - 1) > \
                    TOKEN_MISMATCH_LIMIT:
                out.append(_warning(
                    "token_mismatch",
                    f"C={c}: with ignore_eos, {pair.on.name} averaged {ta:.1f} output tokens "
                    f"per request and {pair.off.name} {tb:.1f}; token counts are not "
                    f"comparable", arm=f"{pair.on.name} vs {pair.off.name}",
                    concurrency=int(c)))
    return out


def source_warnings(per_rep: pd.DataFrame) -> list[dict[str, Any]]:
    """Notes on where rung windows came from when no rungs file existed."""
    out = []
    for (arm, rep), part in per_rep.groupby(["arm", "rep"], sort=False):
        source = part["window_source"].iloc[0]
        if source == "history":
            out.append(_warning("no_rungs", f"{arm}: no rungs file; each constant user count "
                                "in Locust's stats history is a rung (first 20% as warmup)",
                                arm=arm, rep=int(rep)))
        elif source == "run":
            out.append(_warning("no_rungs", f"{arm}: no rungs file or stats history; the "
                                "whole run is one rung", arm=arm, rep=int(rep)))
    return out


def all_warnings(per_rep: pd.DataFrame, summary: pd.DataFrame, pairs: Sequence[PairResult],
                 manifest: Manifest | None, notes: Sequence[str]) -> list[dict[str, Any]]:
    found = [_warning("missing_data", n) for n in notes]
    found += source_warnings(per_rep)
    found += rung_warnings(per_rep)
    found += token_mismatch_warnings(pairs, summary, ignore_eos_in(manifest))
    return found


_DIGEST_TITLES = {
    "too_few_requests": "too few completed requests to trust latencies (lengthen measure_s)",
    "client_saturated": "load generator saturated (add --processes or workers)",
    "client_starved": "load generator short of CPU on a busy machine (timestamps late)",
    "concurrency_shortfall": "achieved concurrency more than 10% under target",
    "failures": "more than 1% of requests failed",
    "crosscheck": "request records disagree with Locust's stats history",
    "tokens_from_chunks": "tokens counted from chunks (no usage reported)",
}


def digest(warnings: Sequence[dict[str, Any]]) -> list[str]:
    """One line per kind of rung warning listing where it applies; others verbatim."""
    lines: list[str] = []
    grouped: dict[str, dict[str, list[str]]] = {}
    for w in warnings:
        if w["kind"] in _DIGEST_TITLES and w["arm"] is not None and w["concurrency"] is not None:
            at = str(w["concurrency"]) + (f" (rep {w['rep']})" if w.get("rep", 1) != 1 else "")
            grouped.setdefault(w["kind"], {}).setdefault(w["arm"], []).append(at)
        else:
            lines.append(w["message"])
    for kind, arms in grouped.items():
        where = "; ".join(f"{arm} C={', '.join(cs)}" for arm, cs in arms.items())
        lines.append(f"{_DIGEST_TITLES[kind]}: {where}")
    return lines
