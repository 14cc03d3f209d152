"""`specload report RUN_DIR`: build the report and write summary.csv, summary.json, report.html.

`build` runs the whole analysis on a run folder or Locust prefix and returns a `Report`;
`write` puts the three files into the output folder (report.html is self-contained:
plotly.js is inlined, nothing is fetched) and each pair's recommended engine settings
into `recommended/`; `main` does both and prints the report path, the per-rung table,
C* and the recommendation for every spec-on/spec-off pair, a multi-k study's best k per
band (`multik.py`, its files in `recommended/multi-k/`) and each verification arm's
envelope efficiency (`envelope.py`). Chat-session runs label their rungs as sessions
and add requests in flight and context lengths; open-loop runs are read on the rate axis
instead (`rate_axis.py`: rate* and the latency speedup, the achieved rate and the late
starts), with no engine recommendation.
"""

from __future__ import annotations

import argparse
import html
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from specload import __version__
from specload.engines.spec_command import parse_command
from specload.errors import UserError
from specload.report import (
    categories,
    context_buckets,
    context_grid,
    figures,
    load_steps,
    parity,
    quality,
    reply_positions,
    spec_checks,
)
from specload.report.acceptance import per_token_arms, per_token_note, with_acceptance
from specload.report.acceptance_map import AcceptanceMap, analyse_map
from specload.report.aggregate import combine_reps, measure_all
from specload.report.arms_verdict import ArmsVerdict, analyse_arms, with_shares
from specload.report.categories import CategoryPair
from specload.report.context_map import ContextMap, analyse_contexts
from specload.report.crossover import Crossover, PairResult, analyse_pair, pair_arms
from specload.report.envelope import Envelope, envelopes, with_efficiency
from specload.report.html_page import TABLE_CLASS, figures_html, page
from specload.report.load_steps import StepFigures
from specload.report.multik import MULTI_K_FOLDER, KStudy, analyse_study
from specload.report.rate_axis import RatePair, analyse_rates, rate_lines, workload_kind
from specload.report.recommend import (
    RECOMMENDED_DIR,
    Decision,
    Schedule,
    arm_setup,
    bound_at,
    engine_files,
    recommend,
)
from specload.report.recommend_text import Recommendation, recommendation, with_k0_tax
from specload.report.run_files import RunSource, discover
from specload.report.rung_columns import Combine, View, combined_by, headings
from specload.report.slo import SloTarget, arm_goodput, slo_from_scenario
from specload.report.table import NONE_SENT, cell
from specload.traffic.kinds import KINDS, USERS, WorkloadKind

SUMMARY_CSV = "summary.csv"
SUMMARY_JSON = "summary.json"
CONTEXT_GRID = f"{RECOMMENDED_DIR}/{context_grid.GRID_FOLDER}"
REPORT_HTML = "report.html"


@dataclass(slots=True)
class Report:
    source: RunSource
    per_rep: pd.DataFrame
    summary: pd.DataFrame
    pairs: list[PairResult]
    warnings: list[dict[str, Any]]
    recommendations: list[Recommendation]
    slo: SloTarget | None = None
    kind: WorkloadKind = USERS  # rate_axis.workload_kind
    rate_pairs: list[RatePair] = field(default_factory=list)
    study: KStudy | None = None  # a multi-k study's best k per band
    envelopes: list[Envelope] = field(default_factory=list)  # verification arms
    per_token: list[str] = field(default_factory=list)  # arms streaming one event per token
    acceptance_map: AcceptanceMap | None = None  # spec-on arms set to acceptance lengths
    context_map: ContextMap | None = None  # the pairs run at several prompt lengths
    context_grid: dict[str, str] = field(default_factory=dict)  # its files, by name
    categories: list[CategoryPair] = field(default_factory=list)  # pairs by prompt category
    # pairs by context bucket of a mixed-length run
    context_buckets: list[CategoryPair] = field(default_factory=list)
    # pairs along the reply: TPOT by output position
    positions: list[reply_positions.PositionPair] = field(default_factory=list)
    arms: ArmsVerdict | None = None  # more than two arms compared: the winner per rung
    steps: list[StepFigures] = field(default_factory=list)  # a load-step run's steps
    parity: parity.Parity | None = None  # each arm's replies against the spec-off arm's

    @property
    def workload(self) -> str:
        return self.kind.name


def recommended_folder(pairs: list[PairResult], pair: PairResult) -> str:
    """`recommended/` for a single pair, else one subfolder per pair."""
    return RECOMMENDED_DIR if len(pairs) == 1 else \
        f"{RECOMMENDED_DIR}/{pair.on.name}-vs-{pair.off.name}"


def build(path: str | Path, processes: int | None = None) -> Report:
    """Analyse a run folder or Locust prefix; raises UserError when there is nothing to read."""
    source = discover(path)
    per_rep = measure_all(source, processes)
    if per_rep.empty:
        raise UserError(f"{path}: the run has request records but no measurable rung")
    summary = combine_reps(per_rep, source.arms)
    per_token = per_token_arms(summary, source.arms)
    summary = with_acceptance(summary, per_token)
    slo = slo_from_scenario(source.manifest.scenario if source.manifest else None)
    kind = workload_kind(source.manifest, summary)
    arm_pairs = pair_arms(source.arms)
    if kind.whole_runs:  # load steps: how each arm settles, nothing to pair
        warnings = quality.all_warnings(per_rep, summary, [], source.manifest, source.notes,
                                        kind)
        return Report(source, per_rep, summary, [], warnings, [], slo, kind,
                      per_token=per_token, steps=load_steps.analyse(summary))
    replies = parity.analyse(per_rep, source.arms, source.manifest)
    if kind.open_loop:  # a latency speedup per rate, no engine setting
        rate_pairs = [analyse_rates(on, off, summary, per_rep) for on, off in arm_pairs]
        warnings = quality.all_warnings(per_rep, summary, [], source.manifest, source.notes,
                                        kind) + quality.parity_warnings(replies)
        return Report(source, per_rep, summary, [], warnings, [], slo, kind, rate_pairs,
                      per_token=per_token, parity=replies)
    pairs = [analyse_pair(on, off, summary, per_rep, slo) for on, off in arm_pairs]
    warnings = quality.all_warnings(per_rep, summary, pairs, source.manifest, source.notes,
                                    kind) + quality.parity_warnings(replies)
    recs = [recommendation(recommend(p, arm_setup(p.on), slo), f"{p.on.name} vs {p.off.name}",
                           recommended_folder(pairs, p)) for p in pairs]
    schedules = {a.name: a.schedule for a in source.manifest.arms} if source.manifest else {}
    methods = {a.name: parse_command(a.command).method for a in source.arms}
    warnings += spec_checks.stopped(summary, source.arms, per_token)
    warnings += spec_checks.drafting_above_bound(summary, source.arms, schedules, methods,
                                                 per_token)
    found = envelopes(summary, source.arms, schedules, per_rep)
    study = analyse_study(source.arms, per_rep, summary)
    verified = study.recommendation if study else recs[0] if recs else None
    if verified is not None:
        with_k0_tax(verified, [env.tax.line(env.arm) for env in found
                               if env.tax is not None and not env.tax.beyond_noise.empty])
    arms = analyse_arms(summary, per_rep, source.arms)
    cmap = analyse_contexts(source.arms, pairs)
    return Report(source, per_rep, with_shares(with_efficiency(summary, found), arms), pairs,
                  warnings, recs, slo, kind, arms=arms, study=study, envelopes=found,
                  per_token=per_token,
                  acceptance_map=analyse_map(source.arms, pairs, summary),
                  context_map=cmap, context_grid=_grid_files(
                      source, cmap, {(p.on.name, p.off.name): r.decision
                                     for p, r in zip(pairs, recs, strict=True)}),
                  categories=categories.analyse(pairs, per_rep), parity=replies,
                  positions=reply_positions.analyse(pairs, per_rep),
                  context_buckets=context_buckets.analyse(pairs, per_rep, _bucket_edges(
                      source.manifest.scenario if source.manifest else None)))


def _bucket_edges(scenario: dict[str, Any] | None) -> list[float] | None:
    """The scenario's `context_buckets`, if it gives them."""
    given = (scenario or {}).get("context_buckets")
    return [float(x) for x in given] if isinstance(given, list) else None


def _grid_files(source: RunSource, cmap: ContextMap | None,
                by_pair: dict[tuple[str, str], Decision]) -> dict[str, str]:
    """The context grid's files (none without a context map), from each context's pair's
    decision (`by_pair`: the pairs' recommendations, by spec-on and spec-off name)."""
    if cmap is None:
        return {}
    decisions = {r.context: by_pair[(r.pair.on.name, r.pair.off.name)] for r in cmap.rows}
    first = cmap.rows[0].pair.on
    mix = source.manifest.scenario.get("context_mix") if source.manifest else None
    return context_grid.files(cmap, decisions, decisions[first.context or ""].setup.spec,
                              mix if isinstance(mix, dict) else None, first.engine_version)


def schedule_to_verify(report: Report) -> Schedule | None:
    """The schedule a verification arm of this run runs, with its recommendation's files:
    the multi-k study's when the run is one, else the first pair's; None when that
    recommends no schedule."""
    if report.study is not None:
        folder, rec = MULTI_K_FOLDER, report.study.recommendation
    elif report.pairs:
        folder, rec = recommended_folder(report.pairs, report.pairs[0]), report.recommendations[0]
    else:
        return None
    tiers = rec.decision.tiers
    return Schedule(tiers, rec.decision.setup.spec, folder, dict(rec.files)) if tiers else None


def unsettled_pairs(report: Report) -> list[str]:
    """Each spec-on/spec-off pair of the run whose repeats hold no settled verdict
    (`crossover.agreement`), in words."""
    return [f"{p.on.name} vs {p.off.name}: {agreed.words()}" for p in report.pairs
            if (agreed := p.agreement()) is not None and not agreed.settled]


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf become null, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _speedup_column(report: Report) -> pd.Series:
    """Speedup per summary row for spec-on arms of the first pair they appear in."""
    values = pd.Series(float("nan"), index=report.summary.index)
    tables = [(p.on.name, p.table, "rate") for p in report.rate_pairs] + [
        (p.on.name, p.speedup, "concurrency") for p in report.pairs]
    for arm, table, x in reversed(tables):
        by_x = table.set_index(x)["speedup"]
        rows = report.summary["arm"] == arm
        values[rows] = report.summary.loc[rows, x].map(by_x)
    return values


def _slo_json(report: Report) -> dict[str, Any] | None:
    if report.slo is None:
        return None
    return {"target": report.slo.as_dict(),
            "arms": [arm_goodput(report.summary, a.name, report.slo) for a in report.source.arms]}


def summary_json(report: Report) -> dict[str, Any]:
    manifest = report.source.manifest
    pairs = []
    for pair, rec in zip(report.pairs, report.recommendations, strict=True):
        c_star = pair.crossover.c_star
        pairs.append({
            "spec_on": pair.on.name, "spec_off": pair.off.name,
            "speedup": pair.speedup.to_dict(orient="records"),
            "crossover": pair.crossover.as_dict(),
            "goodput_crossover": pair.goodput.as_dict() if pair.goodput else None,
            "c_star": c_star,
            "c_star_batch_size": bound_at(pair.speedup, c_star).batch if c_star else None,
            "c_star_range": pair.c_star_range(),
            "c_star_interval": pair.interval.as_dict() if pair.interval else None,
            "c_star_per_rep": [c.as_dict() for c in pair.rep_c_stars],
            "repeats_agree": agreed.as_dict() if (agreed := pair.agreement()) else None,
            "recommendation": rec.as_dict(recommended_folder(report.pairs, pair)),
        })
    return _clean({
        "specload_version": __version__,
        "source": str(report.source.out_dir),
        "scenario_name": manifest.scenario_name if manifest else None,
        "created": manifest.created if manifest else None,
        "arms": [{"name": a.name, "role": a.role, "spec": a.spec, "kind": a.kind, "k": a.k,
                  "engine": a.engine, "engine_source": a.engine_source,
                  "reps": [r.rep for r in a.reps]} for a in report.source.arms],
        "summary": report.summary.to_dict(orient="records"),
        "pairs": pairs,
        "c_star": pairs[0]["c_star"] if pairs else None,
        "recommendation": pairs[0]["recommendation"] if pairs else None,
        "slo": _slo_json(report),
        "recommended_files": [f for p in pairs for f in p["recommendation"]["files"]]
        + (report.study.recommendation.as_dict(MULTI_K_FOLDER)["files"] if report.study else []),
        "workload": report.workload,
        "rate_pairs": [p.as_dict() for p in report.rate_pairs],
        "load_steps": [asdict(f) for f in report.steps],
        "multi_k": report.study.as_dict() if report.study else None,
        "verify": [e.as_dict() for e in report.envelopes],
        "arms_side_by_side": report.arms.as_dict() if report.arms else None,
        "warnings": report.warnings,
        "per_token_arms": report.per_token,
        "search": manifest.search.model_dump(mode="json") if manifest and manifest.search
        else None,
        "acceptance_map": report.acceptance_map.as_dict() if report.acceptance_map else None,
        "context_map": report.context_map.as_dict() if report.context_map else None,
        "context_grid_files": [f"{CONTEXT_GRID}/{name}" for name in report.context_grid],
        "categories": [c.as_dict() for c in report.categories],
        "along_the_reply": [p.as_dict() for p in report.positions],
        "context_buckets": [c.as_dict() for c in report.context_buckets],
        "parity": report.parity.as_dict() if report.parity else None,
    })


# Columns the table shows only when some rung has them (a prefix cache, per-request
# acceptance: what few engines tell).
SHOWN_WHERE_KNOWN = ("prefix_hit_rate", "req_accept_rate")


def _table(report: Report) -> pd.DataFrame:
    table = _bounds_and_paces(report.summary.assign(speedup=_speedup_column(report)))
    columns = {k: v for k, v in headings(View(report.kind.view)).items()
               if k not in SHOWN_WHERE_KNOWN or table.get(k, pd.Series(dtype=float)).notna().any()}
    return table[[c for c in columns if c in table]].rename(columns=columns)


TABLE_NOTE = ("> x: requests sent in the rung were still waiting for their first token "
              "after x ms; ~x: no request sent in the rung finished, TPOT is the pace of "
              "the streams in its window")
NONE_SENT_NOTE = (f"{NONE_SENT}: no request started in the rung's window (every user was "
                  "still streaming an earlier one): it has no TTFT at all")


def _bounds_and_paces(table: pd.DataFrame) -> pd.DataFrame:
    """Censored TTFT percentiles as "> wait", "none sent" where no request started in a
    rung's window, and where no request sent in a rung finished, TPOT as "~pace" of the
    streams in its window (client_metrics.stream_tpot)."""
    table = table.copy()
    started = table.get("requests_started")
    for col in ("ttft_p50_ms", "ttft_p99_ms"):
        lb = table.get(col.replace("_ms", "_lb_ms"))
        if col in table and lb is not None:
            cut = (table[col] == float("inf")) & lb.notna()
            if cut.any():
                table[col] = table[col].astype(object)
                table.loc[cut, col] = [f"> {v:.0f}" for v in lb[cut]]
        if col in table and started is not None and (none := started == 0).any():
            table[col] = table[col].astype(object)
            table.loc[none, col] = NONE_SENT
    pace = table.get("stream_tpot_p50_ms")
    if "tpot_p50_ms" in table and pace is not None:
        use = table["tpot_p50_ms"].isna() & pace.notna()
        if use.any():
            table["tpot_p50_ms"] = table["tpot_p50_ms"].astype(object)
            table.loc[use, "tpot_p50_ms"] = [f"~{v:.4g}" for v in pace[use]]
    return table


def table_note(table: pd.DataFrame, per_token: Sequence[str] = ()) -> str | None:
    """The legend of the table's "> x", "~x" and "none sent" cells, when it has any, and
    why the acceptance of arms that stream one event per token is the server's."""
    text = table.astype(str)
    marked = text.apply(lambda c: c.str.startswith(("> ", "~"))).to_numpy().any()
    none_sent = (text == NONE_SENT).to_numpy().any()
    notes = [n for n in (TABLE_NOTE if marked else None, NONE_SENT_NOTE if none_sent else None,
                         per_token_note(per_token)) if n]
    return "; ".join(notes) or None


def _c_star_words(pair: PairResult, cross: Crossover) -> str:
    if cross.c_star is None:
        return f"C*: none ({cross.verdict})"
    bound = bound_at(pair.speedup, cross.c_star)
    at = f" (batch size {bound.batch:.1f})" if bound.batch is not None else ""
    if bound.spec_on_batch is not None:
        at = (f" (batch size {bound.batch:.1f} on a server that switches by load; the "
              f"capped spec-on server ran {bound.spec_on_batch:.1f})")
    return f"C* = {cross.c_star:.1f}{at}, between C={cross.below} and C={cross.above}"


def _curve_words(cross: Crossover) -> str | None:
    """The crossings and rises of a curve that does not simply cross 1 once, going down."""
    if len(cross.crossings) <= 1 and cross.monotone:
        return None
    parts = [f"{c.direction} at C≈{c.c:.3g}" + (" (within noise)" if c.within_noise else "")
             for c in cross.crossings]
    n = len(cross.crossings)
    text = "the speedup crosses 1 " + {0: "nowhere", 1: "once", 2: "twice"}.get(n, f"{n} times")
    text += f": {', '.join(parts)}" if parts else ""
    if cross.rises:
        text += "; not monotone, it rises " + ", ".join(
            f"from C={a} to C={b}" + ("" if big else " (within noise)")
            for a, b, big in cross.rises)
    return text


def search_lines(report: Report) -> list[str]:
    """A `ladder: auto` run's search: each pass's rungs, and why it stopped."""
    search = report.source.manifest.search if report.source.manifest else None
    if search is None:
        return []
    passes = "; ".join(f"{'coarse' if n == 0 else f'round {n}'} C={','.join(map(str, r.levels))}"
                       for n, r in enumerate(search.rounds))
    end = search.stop or "not finished (resume the sweep to go on)"
    return [f"crossover search ({len(search.planned())} rungs per arm): {passes}; {end}"]


def _crossover_lines(report: Report, with_advice: bool = True) -> list[str]:
    if report.steps:
        return load_steps.lines(report.steps)
    if not (report.pairs or report.rate_pairs):
        return [f"{report.kind.axis.crossover}: no spec-on/spec-off pair of arms (roles or "
                "names with on/off) to compare"]
    lines = [line for pair in report.rate_pairs for line in rate_lines(pair)]
    lines += search_lines(report)
    for pair, rec in zip(report.pairs, report.recommendations, strict=True):
        head = f"{pair.on.name} vs {pair.off.name}: {_c_star_words(pair, pair.crossover)}"
        span = pair.c_star_range()
        if span and pair.crossover.c_star is not None:
            head += f" (range over repeats {span[0]:.1f}-{span[1]:.1f})"
        if pair.interval is not None:
            head += f"; {pair.interval.words()}"
        lines.append(head)
        short = quality.shortfall_words(report.warnings, (pair.on.name, pair.off.name))
        if short:
            lines.append(f"  {short}")
        agreed = pair.agreement()
        if agreed is not None:
            lines.append(f"  {agreed.words()}")
        curve = _curve_words(pair.crossover)
        if curve:
            lines.append(f"  {curve}")
        if pair.goodput:
            lines.append(f"  on SLO goodput: {_c_star_words(pair, pair.goodput)}")
        if with_advice:
            lines.append(f"  {rec.summary}")
            lines += [f"  {line}" for line in rec.lines]
            if rec.files:
                folder = recommended_folder(report.pairs, pair)
                lines.append(f"  files in {report.source.out_dir / folder}: "
                             f"{', '.join(rec.files)}")
    return lines


def _study_lines(report: Report, with_advice: bool = True) -> list[str]:
    """More than two arms side by side, the multi-k study's picks and schedule, the
    acceptance map's break-even and margin, and each verification arm's efficiency."""
    lines = report.arms.lines(rungs=with_advice) if report.arms else []
    lines += report.study.lines() if report.study else []
    lines += report.acceptance_map.lines() if report.acceptance_map else []
    lines += report.context_map.lines() if report.context_map else []
    if report.context_grid and with_advice:
        lines.append(f"  files in {report.source.out_dir / CONTEXT_GRID}: "
                     f"{', '.join(report.context_grid)}")
    lines += [line for c in report.categories for line in c.lines()]
    for bucketed in report.context_buckets:
        lines += [*bucketed.lines(), context_buckets.CAVEAT]
    lines += [line for p in report.positions for line in p.lines()]
    if report.study and with_advice:
        rec = report.study.recommendation
        lines += [f"  {line}" for line in rec.lines]
        if rec.files:
            lines.append(f"  files in {report.source.out_dir / MULTI_K_FOLDER}: "
                         f"{', '.join(rec.files)}")
    lines += [line for env in report.envelopes
              for line in (env.line(), *([env.tax.line(env.arm)] if env.tax else []))]
    return lines + (report.parity.lines() if report.parity else [])


def _slo_lines(report: Report) -> list[str]:
    if report.slo is None:
        return []
    parts = []
    for arm in report.source.arms:
        got = arm_goodput(report.summary, arm.name, report.slo)
        parts.append(f"{arm.name} at no rung" if got["highest_c"] is None else
                     f"{arm.name} up to C={got['highest_c']} ({got['tok_s']:.1f} tok/s)")
    return [f"SLO ({report.slo.describe()}) met by: {'; '.join(parts)}"]


def _format_table(table: pd.DataFrame, per_token: Sequence[str] = ()) -> str:
    note = table_note(table, per_token)
    text = table.to_string(index=False, na_rep="-", float_format=cell)
    return text + (f"\n({note})" if note else "")


def _html_recommendation(report: Report, pair: PairResult | None, rec: Recommendation) -> str:
    """One pair's recommendation (pair None: the multi-k study's)."""
    esc = html.escape
    folder = recommended_folder(report.pairs, pair) if pair else MULTI_K_FOLDER
    title = f"{pair.on.name} vs {pair.off.name}" if pair else "multi-k study"
    items = "".join(f"<li>{esc(line)}</li>" for line in rec.lines)
    notes = "".join(f"<li>{esc(note)}</li>" for note in rec.notes)
    files = "".join(f"<details><summary>{esc(folder)}/{esc(name)}</summary>"
                    f"<pre>{esc(text)}</pre></details>" for name, text in rec.files.items())
    return (f"<li><b>{esc(title)}</b> (on {esc(rec.basis)}): "
            f"{esc(rec.summary)}<ul>{items}</ul>{files}"
            + (f"<details><summary>notes</summary><ul>{notes}</ul></details>" if notes else "")
            + "</li>")


def _no_recommendation(report: Report) -> str:
    kind = report.kind
    if kind.gives_schedule:
        return "<li>no spec-on/spec-off pair</li>"
    ladders = " or ".join(k.name for k in KINDS.values() if k.gives_schedule)
    return (f"<li>{kind.a_run} gives {kind.axis.crossover}, not an engine setting: a "
            f"{ladders} ladder gives one in batch size</li>")


def _html(report: Report) -> str:
    esc = html.escape
    manifest = report.source.manifest
    name = manifest.scenario_name if manifest else None
    title = f"specload report — {name or report.source.out_dir.name}"
    crossover = "".join(f"<li>{esc(line)}</li>" for line in
                        [*_crossover_lines(report, with_advice=False),
                         *_study_lines(report, with_advice=False), *_slo_lines(report)])
    recs = "".join(_html_recommendation(report, p, r)
                   for p, r in zip(report.pairs, report.recommendations, strict=True))
    if report.study:
        recs += _html_recommendation(report, None, report.study.recommendation)
    if report.context_map and report.context_grid:
        recs += (f"<li><b>by context length</b>: {esc(report.context_map.sentence())}"
                 + "".join(f"<details><summary>{esc(CONTEXT_GRID)}/{esc(name)}</summary>"
                           f"<pre>{esc(text)}</pre></details>"
                           for name, text in report.context_grid.items()) + "</li>")
    warns = "".join(f"<li>{esc(line)}</li>" for line in quality.digest(report.warnings))
    details = "".join(f"<li>{esc(w['message'])}</li>" for w in report.warnings)
    if details:
        warns += f"<details><summary>every warning</summary><ul>{details}</ul></details>"
    else:
        warns = "<li>none</li>"
    plots = figures_html(figures.all_figures(report.summary, report.pairs, report.rate_pairs,
                                             report.envelopes, report.kind,
                                             report.acceptance_map, report.categories,
                                             report.arms, report.context_map,
                                             report.positions, report.context_buckets))
    side = "" if report.arms is None else (
        "<h2>Arms side by side</h2><p>Each arm's share of the best arm's tok/s per rung; the "
        "winner, or the arms within the noise of each other.</p>"
        + report.arms.shares().to_html(
            index=False, border=0, classes=TABLE_CLASS,
            formatters={"concurrency": "{:g}".format},
            float_format="{:.3f}".format))
    frame = _table(report)
    replies = _html_parity(report.parity)
    note = table_note(frame, report.per_token)
    table = frame.to_html(index=False, na_rep="–", float_format=cell, border=0,
                          classes=TABLE_CLASS) + (f"<p><small>{esc(note)}</small></p>"
                                                if note else "")
    return page(title, f"""<h1>{esc(title)}</h1>
<p>Source: {esc(str(report.source.out_dir))} · arms: {esc(", ".join(
        f"{a.name} ({a.role}, {len(a.reps)} rep)" for a in report.source.arms))}</p>
<h2>{esc(report.kind.axis.heading or f"Crossover {report.kind.axis.crossover}")}</h2>
<ul>{crossover}</ul>
{side}{replies}
<h2>Recommended setting</h2><ul>{recs or _no_recommendation(report)}</ul>
<h2>Data-quality warnings ({len(report.warnings)})</h2><ul class="warn">{warns}</ul>
<h2>Figures</h2>{plots}
<h2>Per-rung summary</h2>{table}
<p>Only each rung's measure window counts; system tok/s counts tokens by arrival time.</p>
""")


def _html_parity(found: parity.Parity | None) -> str:
    """The replies section: each arm's identical share and first difference per rung."""
    if found is None:
        return ""
    head = "<h2>Replies</h2>"
    if not found.compared:
        return head + f"<p>{html.escape(found.lines()[0])}</p>"
    table = found.table().rename(columns=_PARITY_HEADINGS)[list(_PARITY_HEADINGS.values())]
    flagged = "".join(f"<li>{html.escape(message)}</li>" for _, message in found.warnings())
    return (head + f"<p>Each arm's replies against {html.escape(found.reference)}'s for the "
            "same prompts at the same rung: the share identical, and where the others first "
            f"differ (median, in tokens and bytes). {html.escape(found.reference)} "
            f"against itself: {html.escape(found.floor_words())}.</p>"
            + (f'<ul class="warn">{flagged}</ul>' if flagged else "")
            + table.to_html(index=False, border=0, classes=TABLE_CLASS, na_rep="–",
                            formatters={"identical share": "{:.0%}".format},
                            float_format="{:.3g}".format))


# the replies table's columns (`Parity.table`) as the report heads them
_PARITY_HEADINGS = {"arm": "arm", "rung": "rung", "compared": "prompts compared",
                    "identical": "identical", "share": "identical share",
                    "first_diff_tokens_median": "first difference (token)",
                    "first_diff_bytes_median": "first difference (byte)"}


def write(report: Report) -> Path:
    """Write summary.csv, summary.json, report.html and the recommended settings' files;
    returns the report.html path."""
    out = report.source.out_dir
    csv_table = report.summary.assign(**{
        c: report.summary[c].map(json.dumps) for c in combined_by(Combine.MERGE)
        if c in report.summary})
    csv_table.to_csv(out / SUMMARY_CSV, index=False, na_rep="", float_format="%.6g")
    (out / SUMMARY_JSON).write_text(json.dumps(summary_json(report), indent=1) + "\n",
                                    encoding="utf-8")
    page = out / REPORT_HTML
    page.write_text(_html(report), encoding="utf-8")
    found = [(recommended_folder(report.pairs, p), r)
             for p, r in zip(report.pairs, report.recommendations, strict=True)]
    if report.study:
        found.append((MULTI_K_FOLDER, report.study.recommendation))
    written = [(where, rec.files) for where, rec in found]
    for where, files in [*written, (CONTEXT_GRID, report.context_grid)]:
        folder = out / where
        for name in (*engine_files(), *context_grid.FILES):  # no outdated setting left
            (folder / name).unlink(missing_ok=True)
        if files:
            folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    return page


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload report`."""
    report = build(args.run_dir, getattr(args, "processes", None))
    page = write(report)
    print(f"report: {page}")
    print(_format_table(_table(report), report.per_token))
    for line in [*_crossover_lines(report), *_study_lines(report), *_slo_lines(report)]:
        print(line)
    if report.warnings:
        print(f"{len(report.warnings)} data-quality warning(s), each in {SUMMARY_JSON}:")
        for line in quality.digest(report.warnings):
            print(f"  - {line}")
    return 0
