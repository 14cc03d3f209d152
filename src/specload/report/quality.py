"""Data-quality warnings: reasons not to trust a rung, an arm or a comparison.

Each warning names its arm, concurrency and repeat where it has them, a short kind and
a one-sentence message. Per rung, the checks its workload kind lists (`CHECKS`, by the
names in `traffic/kinds.py`): failures above 1% (with their top reason);
achieved concurrency more than 10% under target (saying when backoff after failures
held it down; not for chat sessions, whose think time keeps requests in flight below
the sessions, nor open-loop rungs, whose load is their rate); an open-loop rate more
than 2% under its target, saying whether the cap on requests in flight or the client
held it down; a saturated or starved load generator; too few completed requests for
latencies (saying why: the window's cap, requests still running), or none started in
the window at all (then the rung has no TTFT); tokens counted from
chunks where that can undercount, or estimated for requests cut short; a client figure
more than 1% away from the simulator's own trace; an acceptance rate from the requests
themselves more than 3% away from the server counters' (one of the two miscounts), or
an arm set to an acceptance length whose server reported another (more than 3% off); a
load process lost during the window
(its requests in flight and last rows are missing, and the rung ran short of users until
Locust restarted them elsewhere); a worker's clock offset that was uncertain or jumped
near the window (its rows may sit a few ms off). When most requests of a rung failed,
the failures are the story: warnings about the client or the window stay quiet. Per
pair: token-count mismatch between arms that ran with ignore_eos. Per arm: what the
runner noticed (e.g. a model the server does not list).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from specload.report.crossover import PairResult
from specload.report.parity import Parity
from specload.runfiles.manifest import Manifest
from specload.runfiles.records import CLIENT_LAG_LIMIT_MS, CONCURRENCY_SHORTFALL, LATE_LIMIT_MS
from specload.traffic.kinds import USERS, WorkloadKind

RATE_SHORTFALL = 0.02
CLIENT_CPU_LIMIT = 90.0
CLIENT_LAG_LATE_SHARE = 0.01  # more than 1% of wake-ups late: the rung's lag p99 is over
FAILURE_LIMIT = 0.01
FAILURES_EXPLAIN = 0.5  # above this share of failed requests, other rung warnings stay quiet
BACKOFF_SHARE = 0.05  # users idle in backoff more than this share of the window
MIN_REQUESTS = 10
TRACE_LIMIT = 0.01
ACCEPTANCE_LIMIT = 0.03
# Fewer drafted tokens than this and a request or two ending at the window's edge (seen
# by the requests, interpolated in the counters) move the rate past ACCEPTANCE_LIMIT.
ACCEPTANCE_MIN_DRAFTS = 300
# Requests that draft alike: a difference within 3 standard errors of the requests' rate
# is chance (a draft model's acceptance varies from prompt to prompt, n-gram's on a
# repeating model hardly at all)
ACCEPTANCE_Z = 3.0
TOKEN_MISMATCH_LIMIT = 0.02
TOKEN_MISMATCH_Z = 3.0  # drawn lengths: a difference within 3 standard errors is chance
IGNORE_EOS_LENGTH_SHARE = 0.95


def warning(kind: str, message: str, arm: str | None = None, concurrency: int | None = None,
            rep: int | None = None, rate: float | None = None, speed: float | None = None
            ) -> dict[str, Any]:
    found = {"kind": kind, "arm": arm, "concurrency": concurrency, "rep": rep,
             "message": message}
    return found | ({"rate": rate} if rate is not None else {}) \
        | ({"speed": speed} if speed is not None else {})


def _get(row: Any, name: str, default: object = float("nan")) -> Any:
    return getattr(row, name, default)


def _client_lagged(row: Any) -> bool:
    """The rung's lag p99 is over the limit: more than 1% of the probe's wake-ups were
    late. Files from before wake-ups were counted only have per-second p99s: their worst."""
    share = _get(row, "client_lag_late_share")
    if np.isfinite(share):
        return bool(share > CLIENT_LAG_LATE_SHARE)
    return bool(row.client_lag_p99_max_ms > CLIENT_LAG_LIMIT_MS)


Check = Callable[[Any, str], Iterator[tuple[str, str]]]  # row, where -> (kind, message)


def _failures(row: Any, where: str) -> Iterator[tuple[str, str]]:
    total = row.requests + row.failures
    if total and row.failures / total > FAILURE_LIMIT:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(row.failures_by_kind.items()))
        top = str(_get(row, "top_failure", "") or "")
        yield "failures", (f"{where}: {row.failures} of {total} requests failed "
                           f"({100 * row.failures / total:.1f}%: {kinds})"
                           + (f"; most often: {top}" if top else ""))


def _concurrency(row: Any, where: str) -> Iterator[tuple[str, str]]:
    if row.achieved_concurrency >= (1 - CONCURRENCY_SHORTFALL) * row.concurrency:
        return
    backoff = _get(row, "backoff_share", 0.0)
    why = (f": users spent {100 * backoff:.0f}% of the window waiting after failed requests "
           "(backoff)" if backoff > BACKOFF_SHARE else "")
    yield "concurrency_shortfall", (f"{where}: achieved concurrency "
                                    f"{row.achieved_concurrency:.1f} is more than 10% under "
                                    f"the target {row.concurrency}{why}")


def _rate(row: Any, where: str) -> Iterator[tuple[str, str]]:
    planned = row.arrivals_planned / row.window_s  # the target rate, rounded to arrivals
    if row.achieved_rate >= (1 - RATE_SHORTFALL) * planned:
        return
    cap, client = _get(row, "late_cap_share", 0.0), _get(row, "late_client_share", 0.0)
    unsent = row.arrivals_planned - row.arrivals_sent
    why = (f"the cap on requests in flight held {100 * cap:.0f}% of starts back (every "
           "user was busy: raise max_in_flight, or the server is saturated)" if cap >= client
           else f"the client started {100 * client:.0f}% late (the load process was short "
           "of CPU: add --processes or workers)")
    yield "rate_held", (f"{where}: achieved {row.achieved_rate:.3g} arrivals/s of the "
                        f"target {row.rate:g}/s; {why}"
                        + (f"; {unsent:.0f} planned arrivals never started" if unsent > 0
                           else ""))


def _schedule(row: Any, where: str) -> Iterator[tuple[str, str]]:
    """Arrivals that started after their scheduled times (a trace's, scaled), when no cap
    held them: the load process kept the schedule badly."""
    late = _get(row, "late_p99_ms")
    if not (np.isfinite(late) and late > LATE_LIMIT_MS) or _get(row, "late_cap_share", 0.0):
        return
    yield "schedule_late", (f"{where}: arrivals started up to {late:.1f} ms after their "
                            f"scheduled times (p99; more than {LATE_LIMIT_MS:g} ms is late): "
                            "the load process ran behind the schedule (add --processes or "
                            "workers, or give it CPUs of its own)")


def _client(row: Any, where: str) -> Iterator[tuple[str, str]]:
    if row.client_cpu_max > CLIENT_CPU_LIMIT:
        yield "client_saturated", (f"{where}: the load generator was saturated (CPU up to "
                                   f"{row.client_cpu_max:.0f}%, event-loop lag p99 up to "
                                   f"{row.client_lag_p99_max_ms:.1f} ms); add --processes "
                                   "or workers")
    elif _client_lagged(row):
        share = _get(row, "client_lag_late_share")
        how = (f"{100 * share:.1f}% of its wake-ups more than {CLIENT_LAG_LIMIT_MS:g} ms "
               f"late" if np.isfinite(share) else "event-loop lag")
        yield "client_starved", (f"{where}: the load generator's timestamps ran late ({how}, "
                                 f"p99 up to {row.client_lag_p99_max_ms:.1f} ms) while it "
                                 f"used only {row.client_cpu_max:.0f}% CPU: the machine it "
                                 "ran on was short of CPU; run the load elsewhere or stop "
                                 "other work")


def _latency_samples(row: Any, where: str) -> Iterator[tuple[str, str]]:
    """Too few requests in a window that waits for `min_requests` (at most max_measure_s)."""
    if row.requests == row.requests_started:
        fix = ("every request that started completed, the window was short for their "
               f"length: raise min_requests to {MIN_REQUESTS} (with max_measure_s room)")
    else:
        fix = "requests queue longer than the window may last: raise max_measure_s"
    yield from _too_few(row, where, fix)


def _latency_samples_fixed_window(row: Any, where: str) -> Iterator[tuple[str, str]]:
    yield from _too_few(row, where, "an open-loop window is fixed: raise measure_s")


def _too_few(row: Any, where: str, fix: str) -> Iterator[tuple[str, str]]:
    if row.requests >= MIN_REQUESTS:
        return
    if row.requests_started == 0:
        yield "none_started", (f"{where}: no request started in the measure window (every "
                               "user was still streaming one it had started before), so the "
                               "rung has no TTFT and no E2E, not even a lower bound "
                               "(\"none sent\"); TPOT is the pace of the streams in the "
                               "window (\"~x\") (lengthen the window: raise max_measure_s)")
        return
    running = (f", {row.interrupted} still running when the run ended"
               if row.interrupted else "")
    missing = ("its E2E is not measured; TTFT shows how long they had waited (\"> x\") "
               "and TPOT the pace of the streams in the window (\"~x\")"
               if row.requests == 0 else
               "its TTFT, TPOT and E2E percentiles rest on few requests and are measured")
    yield "too_few_requests", (f"{where}: only {row.requests} of {row.requests_started} "
                               f"requests that started in the measure window completed"
                               f"{running}; {missing} ({fix})")


def _tokens(row: Any, where: str) -> Iterator[tuple[str, str]]:
    chunks = _get(row, "chunk_counted_share", 0.0)
    tpc = _get(row, "tokens_per_chunk")
    if chunks > 0 and not (np.isfinite(tpc) and abs(tpc - 1.0) < 0.01):
        yield "tokens_from_chunks", (f"{where}: {100 * chunks:.0f}% of requests had no usage "
                                     "report and their tokens were counted as chunks (exact "
                                     "only when every chunk carries one token)")
    estimated = _get(row, "estimated_token_share", 0.0)
    if estimated > 0.001:
        yield "tokens_estimated", (f"{where}: {100 * estimated:.1f}% of the window's tokens "
                                   "are estimated (requests cut short before their usage "
                                   "came, counted at their rung's tokens per chunk)")


def _trace(row: Any, where: str) -> Iterator[tuple[str, str]]:
    ratio = _get(row, "trace_ratio")
    if np.isfinite(ratio) and abs(ratio - 1.0) > TRACE_LIMIT:
        yield "trace_mismatch", (f"{where}: measured {row.output_tok_s:.1f} tok/s, the "
                                 f"simulator's trace {row.trace_tok_s:.1f} "
                                 f"({100 * (ratio - 1):+.1f}%): the measurement itself is "
                                 "off (a busy load generator or machine)")


def _acceptance(row: Any, where: str) -> Iterator[tuple[str, str]]:
    own, counters = _get(row, "req_accept_rate"), _get(row, "accept_rate")
    enough = _get(row, "req_draft_tokens", ACCEPTANCE_MIN_DRAFTS) >= ACCEPTANCE_MIN_DRAFTS
    chance = ACCEPTANCE_Z * _get(row, "req_accept_rate_se")  # NaN: no chance allowed
    if enough and np.isfinite(own) and np.isfinite(counters) and counters > 0 and (
            abs(own / counters - 1.0) > ACCEPTANCE_LIMIT) and not abs(own - counters) <= chance:
        yield "acceptance_mismatch", (
            f"{where}: the requests' own acceptance rate is {100 * own:.1f}%, the server "
            f"counters' {100 * counters:.1f}% ({100 * (own / counters - 1):+.1f}%): one of "
            "the two miscounts (requests the client did not see end, or counters that "
            "other traffic moved)")


def _workers(row: Any, where: str) -> Iterator[tuple[str, str]]:
    lost = int(_get(row, "workers_lost", 0))
    if lost:
        yield "worker_lost", (f"{where}: {lost} load process(es) lost during the window "
                              f"({_get(row, 'lost_detail', '')}): their requests in flight "
                              "and up to a second of rows are missing, and the rung ran with "
                              "fewer users until Locust restarted them on the other workers")


def _clock(row: Any, where: str) -> Iterator[tuple[str, str]]:
    if int(_get(row, "clock_problems", 0)):
        yield "clock", (f"{where}: a worker's clock was doubtful near the window "
                        f"({_get(row, 'clock_detail', '')}); its rows were put on the "
                        "master's clock as well as it was measured")


# Each rung check by the name a workload kind lists.
CHECKS: dict[str, Check] = {
    "failures": _failures, "concurrency": _concurrency, "rate": _rate, "client": _client,
    "schedule": _schedule,
    "latency_samples": _latency_samples,
    "latency_samples_fixed_window": _latency_samples_fixed_window, "tokens": _tokens,
    "trace": _trace, "acceptance": _acceptance, "workers": _workers, "clock": _clock,
}
# Checks that stay quiet when most of a rung's requests failed (failures explain it).
QUIET_WHEN_FAILING = frozenset({"concurrency", "rate", "client", "latency_samples",
                                "latency_samples_fixed_window"})


def _rung_warnings(row: Any, multi_rep: bool, kind: WorkloadKind
                   ) -> Iterator[dict[str, Any]]:
    level = getattr(row, kind.axis.column)
    where = f"{row.arm} at {kind.axis.rung(level)}" + (f" (rep {row.rep})" if multi_rep else "")
    ctx = {"arm": row.arm, "concurrency": int(row.concurrency), "rep": int(row.rep)}
    ctx.setdefault(kind.axis.column, float(level))  # an open-loop rung's rate
    total = row.requests + row.failures
    failing = bool(total) and row.failures / total > FAILURES_EXPLAIN
    for name in kind.checks:
        if failing and name in QUIET_WHEN_FAILING:
            continue
        for found, message in CHECKS[name](row, where):
            yield warning(found, message, **ctx)


def rung_warnings(per_rep: pd.DataFrame, kind: WorkloadKind = USERS) -> list[dict[str, Any]]:
    """Warnings about single rungs of single repeats, by the kind's checks."""
    if per_rep.empty:
        return []
    multi_rep = per_rep["rep"].nunique() > 1
    return [w for row in per_rep.itertuples(index=False)
            for w in _rung_warnings(row, multi_rep, kind)]


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
                    TOKEN_MISMATCH_LIMIT and not _by_chance(ta - tb, a.loc[c], b.loc[c]):
                out.append(warning(
                    "token_mismatch",
                    f"C={c}: with ignore_eos, {pair.on.name} averaged {ta:.1f} output tokens "
                    f"per request and {pair.off.name} {tb:.1f}; token counts are not "
                    f"comparable", arm=f"{pair.on.name} vs {pair.off.name}",
                    concurrency=int(c)))
    return out


def _by_chance(diff: float, a: pd.Series, b: pd.Series) -> bool:
    """Whether two arms' mean output tokens differ by no more than drawn lengths would:
    within `TOKEN_MISMATCH_Z` standard errors (fixed lengths have none)."""
    se = np.hypot(a.get("output_tokens_se", np.nan), b.get("output_tokens_se", np.nan))
    return bool(np.isfinite(se) and abs(diff) <= TOKEN_MISMATCH_Z * se)


def acceptance_target_warnings(pairs: Sequence[PairResult], summary: pd.DataFrame
                               ) -> list[dict[str, Any]]:
    """A spec-on arm set to an acceptance length (an acceptance map's) whose server
    reported another, more than 3% away at some rung: the engine's knob did not deliver
    it (drafts shorter than the maximum, requests that end mid-draft), so the map places
    that arm by what was reported."""
    out = []
    for pair in pairs:
        target = pair.on.acceptance
        if target is None or "accept_len" not in summary:
            continue
        rows = summary[summary["arm"] == pair.on.name]
        off = [(int(c), float(got)) for c, got in zip(rows["concurrency"], rows["accept_len"],
                                                      strict=True)
               if np.isfinite(got) and abs(got / target - 1) > ACCEPTANCE_LIMIT]
        if off:
            out.append(warning(
                "acceptance_off_target",
                f"{pair.on.name} was set to an acceptance length of {target:g} and reported "
                + ", ".join(f"{got:.2f} at C={c} ({got / target - 1:+.1%})" for c, got in off)
                + ": the engine delivered another (drafts shorter than their maximum, "
                "requests that end mid-draft, or few drafts in the window); the acceptance "
                "map places the arm by what it reported", arm=pair.on.name))
    return out


def parity_warnings(found: Parity | None) -> list[dict[str, Any]]:
    """Arms whose greedy replies differ from the spec-off arm's beyond its own floor."""
    if found is None:
        return []
    return [warning("output_parity", message, arm=arm) for arm, message in found.warnings()]


def source_warnings(per_rep: pd.DataFrame) -> list[dict[str, Any]]:
    """Notes on where rung windows came from when no rungs file existed."""
    out = []
    for (arm, rep), part in per_rep.groupby(["arm", "rep"], sort=False):
        source = part["window_source"].iloc[0]
        if source == "history":
            out.append(warning("no_rungs", f"{arm}: no rungs file; each constant user count "
                                "in Locust's stats history is a rung (first 20% as warmup)",
                                arm=arm, rep=int(rep)))
        elif source == "run":
            out.append(warning("no_rungs", f"{arm}: no rungs file or stats history; the "
                                "whole run is one rung", arm=arm, rep=int(rep)))
    return out


def all_warnings(per_rep: pd.DataFrame, summary: pd.DataFrame, pairs: Sequence[PairResult],
                 manifest: Manifest | None, notes: Sequence[str],
                 kind: WorkloadKind = USERS) -> list[dict[str, Any]]:
    found = [warning("missing_data", n) for n in notes]
    if manifest is not None:
        found += [warning("arm_note", f"{arm.name}: {note}", arm=arm.name)
                  for arm in manifest.arms for note in arm.notes]
    found += source_warnings(per_rep)
    found += rung_warnings(per_rep, kind)
    found += token_mismatch_warnings(pairs, summary, ignore_eos_in(manifest))
    found += acceptance_target_warnings(pairs, summary)
    return found


_DIGEST_TITLES = {
    "too_few_requests": "too few completed requests to trust latencies (lengthen those rungs)",
    "none_started": "no request started in the window: no TTFT at all (raise max_measure_s)",
    "client_saturated": "load generator saturated (add --processes or workers)",
    "client_starved": "load generator short of CPU on a busy machine (timestamps late)",
    "concurrency_shortfall": "achieved concurrency more than 10% under target",
    "rate_held": "achieved arrival rate more than 2% under target (cap or client)",
    "schedule_late": f"arrivals p99 more than {LATE_LIMIT_MS:g} ms behind their schedule "
                     "(the load process ran late)",
    "failures": "more than 1% of requests failed",
    "trace_mismatch": "client tok/s more than 1% from the simulator's trace",
    "tokens_estimated": "tokens estimated for requests cut before their usage came",
    "tokens_from_chunks": "tokens counted from chunks (no usage reported)",
    "worker_lost": "a load process was lost mid-rung (its last rows and users missing)",
    "clock": "a worker's clock offset was uncertain or jumped",
}


STARVED = ("client_starved", "client_saturated")


def shortfall_words(warnings: Sequence[dict[str, Any]], arms: Sequence[str]) -> str | None:
    """Which rungs of `arms` fell short of C, what that does to the crossover and what to
    do (None: none did)."""
    def at(w: dict[str, Any]) -> str:
        return f"{w['arm']} C={w['concurrency']}" + (f" rep {w['rep']}" if w["rep"] != 1
                                                      else "")
    short = [w for w in warnings if w["kind"] == "concurrency_shortfall" and w["arm"] in arms]
    if not short:
        return None
    starved = {at(w) for w in warnings if w["kind"] in STARVED}
    cpu = [at(w) for w in short if at(w) in starved]
    text = (f"short of C at {', '.join(at(w) for w in short)}: the load held fewer than "
            f"C requests in flight there (more than {CONCURRENCY_SHORTFALL:.0%} under), so "
            "those rungs measured a lighter load than their C and the crossover leans on "
            "them")
    if cpu:
        return text + (f"; the load generator was short of CPU at {', '.join(cpu)}: give it "
                       "CPUs of its own (`placement: apart`, docs/real-engines.md) or run "
                       "it on another machine, then run those rungs again")
    return text + ("; its users waited between requests: see the data-quality warnings "
                   "(failures and backoff, the load processes' CPU)")


def digest(warnings: Sequence[dict[str, Any]]) -> list[str]:
    """One line per kind of rung warning listing where it applies; others verbatim."""
    lines: list[str] = []
    grouped: dict[str, dict[str, list[str]]] = {}
    for w in warnings:
        if w["kind"] in _DIGEST_TITLES and w["arm"] is not None and w["concurrency"] is not None:
            level = (f"speed {w['speed']:g}x" if w.get("speed") is not None
                     else f"rate={w['rate']:g}/s" if w.get("rate") is not None
                     else str(w["concurrency"]))
            at = level + (f" (rep {w['rep']})" if w.get("rep", 1) != 1 else "")
            grouped.setdefault(w["kind"], {}).setdefault(w["arm"], []).append(at)
        else:
            lines.append(w["message"])
    for kind, arms in grouped.items():
        where = "; ".join(f"{arm} {'C=' if cs[0][0].isdigit() else ''}{', '.join(cs)}"
                          for arm, cs in arms.items())
        lines.append(f"{_DIGEST_TITLES[kind]}: {where}")
    return lines
