"""`specload compare RUN [RUN ...]`: several runs' curves, speedups and C* side by side.

Each RUN is anything `specload report` reads, analysed by `render.build` (files are read,
nothing is written into the runs); the first is the baseline, e.g. before an engine
upgrade. At every concurrency both measured, each other run's system tok/s (per arm) and
speedup (per spec-on/spec-off pair) is compared with the baseline's as a ratio with a
noise band: the range of ratios the two runs' repeats allow when both have repeats, else
±2%, the band of the report's verdict (`crossover.NOISE_BAND`); as in the report, a band
above 1 says "up", below 1 "down", one that holds 1 "within noise". C* shifts are judged
against the runs' C* ranges over repeats when both have them. Arms are matched by name,
or by role when the names differ and each run has one spec-on and one spec-off arm.
Runs that compare more than two arms also compare each rung's winner (`arms_verdict`).
`write` puts compare.html (self-contained, plotly.js inlined) and compare.csv (one row per
run, metric, arm or pair and concurrency) into the output folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from specload.errors import UserError
from specload.report import figures, html_page
from specload.report.crossover import (
    BAND_DEFAULT,
    BAND_REPEATS,
    NOISE_BAND,
    OFF,
    ON,
    PairResult,
    rung_decisions,
)
from specload.report.html_page import TABLE_CLASS, figures_html
from specload.report.plotjs import Figure, scatter
from specload.report.render import Report, build
from specload.report.run_files import ArmSource
from specload.report.rung_columns import BY_NAME, View, names, spread_names
from specload.report.table import text

COMPARE_HTML = "compare.html"
COMPARE_CSV = "compare.csv"
CSV_COLUMNS = ("run", "baseline", "metric", "subject", "concurrency", "baseline_value",
               "value", "ratio", "band_lo", "band_hi", "band", "verdict", "note")
VERDICTS = {ON: "up", OFF: "down"}  # anything else: "within noise"
WITHIN = "within noise"
# the figures compared per rung: system tok/s per arm (the summary's), speedup per pair
TOK_S, SPEEDUP = names(View.COMPARE)


@dataclass(slots=True)
class Run:
    """One analysed run and the name it goes by in the comparison."""

    label: str
    report: Report


@dataclass(frozen=True, slots=True)
class Measure:
    """One figure of one run at one rung: its mean and the range over its repeats."""

    value: float
    low: float
    high: float
    reps: int


def labels(paths: Sequence[str]) -> list[str]:
    """Each run's folder name, or its whole path where two folder names are the same."""
    names = [Path(p).resolve().name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths, strict=True)]


def _keys(runs: Sequence[Run]) -> dict[str, dict[str, str]]:
    """Per run, arm name -> the key it is matched by (its name, or its role)."""
    names = [{a.name: a.role for a in r.report.source.arms} for r in runs]
    same_names = all(set(n) == set(names[0]) for n in names)
    one_per_role = all(sorted(n.values()).count(role) == 1 for n in names
                       for role in ("spec_on", "spec_off"))
    by_role = not same_names and one_per_role
    return {r.label: {arm: (role if by_role and role != "other" else arm)
                      for arm, role in n.items()} for r, n in zip(runs, names, strict=True)}


def _tok_s(run: Run, keys: dict[str, str]) -> dict[tuple[str, int], Measure]:
    out = {}
    low, high, _ = spread_names(TOK_S)
    for row in run.report.summary.itertuples(index=False):
        reps = int(getattr(row, "reps", 1))
        value = float(getattr(row, TOK_S))
        out[(keys[row.arm], int(row.concurrency))] = Measure(
            value, float(getattr(row, low, value)), float(getattr(row, high, value)), reps)
    return out


def _pair_key(pair: PairResult, keys: dict[str, str]) -> str:
    return f"{keys[pair.on.name]} / {keys[pair.off.name]}"


def _speedups(run: Run, keys: dict[str, str]) -> dict[tuple[str, int], Measure]:
    out = {}
    for pair in run.report.pairs:
        multi = bool(pair.rep_c_stars)
        for row in pair.speedup.itertuples(index=False):
            value = float(row.speedup)
            out[(_pair_key(pair, keys), int(row.concurrency))] = Measure(
                value, float(row.speedup_min) if multi else value,
                float(row.speedup_max) if multi else value, 2 if multi else 1)
    return out


def ratio_band(base: Measure, other: Measure) -> tuple[float, float, float, str]:
    """other / base, and its noise band: from both runs' repeats, else ±NOISE_BAND."""
    ratio = other.value / base.value if base.value else math.nan
    if base.reps > 1 and other.reps > 1 and base.low > 0:
        return ratio, other.low / base.high, other.high / base.low, BAND_REPEATS
    return ratio, ratio - NOISE_BAND, ratio + NOISE_BAND, BAND_DEFAULT


def verdict(low: float, high: float) -> str:
    """"up", "down" or "within noise", by the report's rule for a ratio's band."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return VERDICTS.get(rung_decisions([low], [high])[0], WITHIN)


def _rung_rows(run: Run, base: Run, metric: str, ours: dict[tuple[str, int], Measure],
               theirs: dict[tuple[str, int], Measure]) -> list[dict[str, object]]:
    rows = []
    for key in sorted(set(ours) & set(theirs)):
        ratio, lo, hi, band = ratio_band(theirs[key], ours[key])
        rows.append({"run": run.label, "baseline": base.label, "metric": metric,
                     "subject": key[0], "concurrency": key[1],
                     "baseline_value": theirs[key].value, "value": ours[key].value,
                     "ratio": ratio, "band_lo": lo, "band_hi": hi, "band": band,
                     "verdict": verdict(lo, hi), "note": ""})
    return rows


def _c_star_rows(run: Run, base: Run, keys: dict[str, dict[str, str]]
                 ) -> list[dict[str, object]]:
    theirs = {_pair_key(p, keys[base.label]): p for p in base.report.pairs}
    rows = []
    for pair in run.report.pairs:
        key = _pair_key(pair, keys[run.label])
        if key not in theirs:
            continue
        old, new = theirs[key], pair
        a, b = old.crossover.c_star, new.crossover.c_star
        value = b if b is not None else math.nan
        baseline = a if a is not None else math.nan
        row: dict[str, object] = {
            "run": run.label, "baseline": base.label, "metric": "c_star", "subject": key,
            "concurrency": math.nan, "baseline_value": baseline, "value": value,
            "ratio": value / baseline, "band_lo": math.nan, "band_hi": math.nan,
            "band": "", "verdict": "",
            "note": f"{old.crossover.verdict} -> {new.crossover.verdict}"}
        ia, ib = old.interval, new.interval
        if ia and ib and ia.lo > 0 and math.isfinite(ia.hi):
            lo, hi = ib.lo / ia.hi, ib.hi / ia.lo
            row |= {"band_lo": lo, "band_hi": hi, "band": "C* intervals",
                    "verdict": verdict(lo, hi)}
        rows.append(row)
    return rows


WINNER = "winner"  # the rung's best arm, or its tie, when more than two arms are compared
VERDICT_METRICS = ("c_star", WINNER)  # one figure per run, or per rung, but not a ratio


def _winner_rows(run: Run, base: Run) -> list[dict[str, object]]:
    """At each rung both runs compared more than two arms: its winner, then and now."""
    if run.report.arms is None or base.report.arms is None:
        return []
    then, now = base.report.arms.winners(), run.report.arms.winners()
    return [{"run": run.label, "baseline": base.label, "metric": WINNER, "subject": "arms",
             "concurrency": c, "baseline_value": math.nan, "value": math.nan,
             "ratio": math.nan, "band_lo": math.nan, "band_hi": math.nan, "band": "",
             "verdict": "same" if then[c] == now[c] else "changed",
             "note": f"{then[c]} -> {now[c]}"} for c in sorted(set(then.index) & set(now.index))]


def differences(runs: Sequence[Run]) -> pd.DataFrame:
    """Every other run against the first: tok/s per arm, speedup per pair, C* (CSV rows)."""
    keys = _keys(runs)
    base = runs[0]
    base_tok, base_speedup = _tok_s(base, keys[base.label]), _speedups(base, keys[base.label])
    rows: list[dict[str, object]] = []
    for run in runs[1:]:
        rows += _rung_rows(run, base, TOK_S, _tok_s(run, keys[run.label]), base_tok)
        rows += _rung_rows(run, base, SPEEDUP, _speedups(run, keys[run.label]), base_speedup)
        rows += _c_star_rows(run, base, keys)
        rows += _winner_rows(run, base)
    return pd.DataFrame(rows, columns=list(CSV_COLUMNS))


# -- figures and page ------------------------------------------------------------------------

def renamed(run: Run) -> tuple[pd.DataFrame, list[PairResult]]:
    """The run's summary and pairs with every arm called "<run>: <arm>"."""
    def arm(a: ArmSource) -> ArmSource:
        return dataclasses.replace(a, name=f"{run.label}: {a.name}")

    summary = run.report.summary.assign(arm=run.label + ": " + run.report.summary["arm"])
    pairs = [dataclasses.replace(p, on=arm(p.on), off=arm(p.off)) for p in run.report.pairs]
    return summary, pairs


def change_figure(diffs: pd.DataFrame) -> Figure:
    """Each run's tok/s and speedup against the baseline's, in %, with the noise band."""
    fig = Figure()
    rungs = diffs[~diffs["metric"].isin(VERDICT_METRICS)]
    for i, ((run, metric, subject), part) in enumerate(
            rungs.groupby(["run", "metric", "subject"], sort=False)):
        pct = 100 * (part["ratio"] - 1)
        fig.add_trace(scatter(
            x=part["concurrency"], y=pct, mode="lines+markers",
            name=f"{run}: {subject} {BY_NAME[metric].heading}",
            line={"color": figures.PALETTE[i % len(figures.PALETTE)],
                  "dash": "solid" if metric == TOK_S else "dash"},
            error_y={"type": "data", "symmetric": False,
                     "array": 100 * (part["band_hi"] - part["ratio"]),
                     "arrayminus": 100 * (part["ratio"] - part["band_lo"])},
            customdata=part["verdict"],
            hovertemplate="C=%{x}<br>%{y:+.1f}% (%{customdata})<extra></extra>"))
    fig.add_hline(y=0, line={"color": "black", "dash": "dash", "width": 1})
    fig.update_layout(title={"text": "Change against the baseline (bars: noise band)"},
                      height=440,
                      legend={"orientation": "h", "y": -0.22}, margin={"t": 60, "b": 40})
    fig.update_xaxes(title={"text": figures.C_AXIS}, type="log")
    figures.rung_ticks(fig)  # the rungs, not plotly's decade ticks
    return fig.update_yaxes(title={"text": "change (%)"})


def _table_html(diffs: pd.DataFrame) -> str:
    shown = diffs.assign(
        concurrency=diffs["concurrency"].map(lambda c: "" if pd.isna(c) else str(int(c))),
        change=[("" if not np.isfinite(r) else f"{100 * (r - 1):+.1f}%") for r in diffs["ratio"]],
        band=[("" if not np.isfinite(lo) else f"{100 * (lo - 1):+.1f}% .. {100 * (hi - 1):+.1f}%"
               f" ({b})") for lo, hi, b in zip(diffs["band_lo"], diffs["band_hi"],
                                               diffs["band"], strict=True)],
        baseline_value=diffs["baseline_value"].map(text),
        value=diffs["value"].map(text))
    columns = ["run", "metric", "subject", "concurrency", "baseline_value", "value", "change",
               "band", "verdict", "note"]
    return shown[columns].to_html(index=False, border=0, classes=TABLE_CLASS, na_rep="–")


def _c_star_lines(runs: Sequence[Run]) -> str:
    items = []
    for run in runs:
        for pair in run.report.pairs:
            cross = pair.crossover
            where = f"C* = {cross.c_star:.1f}" if cross.c_star is not None else "no C*"
            span = pair.c_star_range()
            extra = f" (range over repeats {span[0]:.1f}-{span[1]:.1f})" if span else ""
            extra += f"; {pair.interval.words()}" if pair.interval else ""
            items.append(f"<li><b>{html.escape(run.label)}</b> {html.escape(pair.on.name)} vs "
                         f"{html.escape(pair.off.name)}: {where}{extra}, "
                         f"{html.escape(cross.verdict)} (band {html.escape(cross.band)})</li>")
    return "".join(items) or "<li>no run has a spec-on/spec-off pair</li>"


def compare_page(runs: Sequence[Run], diffs: pd.DataFrame) -> str:
    """compare.html: the runs, C*, the overlaid curves, the changes and their table."""
    esc = html.escape
    parts = [renamed(r) for r in runs]
    summary = pd.concat([s for s, _ in parts], ignore_index=True)
    pairs = [p for _, ps in parts for p in ps]
    figs = [figures.system_throughput(summary)]
    if pairs:
        figs.append(figures.speedup(pairs))
    if len(diffs):
        figs.append(change_figure(diffs))
    plots = figures_html(figs)
    sources = "".join(f"<li><b>{esc(r.label)}</b>: {esc(str(r.report.source.out_dir))} "
                      f"({esc(', '.join(a.name for a in r.report.source.arms))})</li>"
                      for r in runs)
    return html_page.page("specload compare", f"""
<h1>specload compare: {len(runs)} runs, baseline {esc(runs[0].label)}</h1>
<ul>{sources}</ul>
<h2>Crossover C*</h2><ul>{_c_star_lines(runs)}</ul>
<h2>Figures</h2>{plots}
<h2>Per-rung differences against the baseline</h2>
<p>Ratio of each run's figure to the baseline's at the same concurrency. Noise band: the
range the runs' repeats allow when both have repeats, else ±{NOISE_BAND:.0%} (the report's
verdict band); "up" or "down" only when the whole band is.</p>
{_table_html(diffs)}
""")


def write(runs: Sequence[Run], diffs: pd.DataFrame, out: Path) -> tuple[Path, Path]:
    """Write compare.html and compare.csv into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, html_path = out / COMPARE_CSV, out / COMPARE_HTML
    diffs.to_csv(csv_path, index=False, na_rep="", float_format="%.6g")
    html_path.write_text(compare_page(runs, diffs), encoding="utf-8")
    return html_path, csv_path


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload compare`."""
    paths = list(args.runs)
    names = args.labels.split(",") if args.labels else labels(paths)
    if len(names) != len(paths) or len(set(names)) != len(names):
        raise UserError(f"--labels: give {len(paths)} different names, one per run")
    runs = [Run(name, build(path)) for name, path in zip(names, paths, strict=True)]
    stepped = [path for path, run in zip(paths, runs, strict=True) if run.report.steps]
    if stepped:
        raise UserError(f"{stepped[0]}: a load-step run, whose steps repeat user counts: "
                        "compare matches rungs by concurrency; read each run's steps in "
                        "its report")
    out = Path(args.out) if args.out else Path("reports") / "compare" / datetime.now(
        UTC).strftime("%Y%m%dT%H%M%SZ")
    diffs = differences(runs)
    html_path, csv_path = write(runs, diffs, out)
    print(f"compare: {html_path}\ncsv: {csv_path}")
    for run in runs[1:]:
        mine = diffs[diffs["run"] == run.label]
        figures_only = ~mine["metric"].isin(VERDICT_METRICS)
        moved = mine[mine["verdict"].isin(["up", "down"]) & figures_only]
        print(f"{run.label} vs {runs[0].label}: {len(moved)} of "
              f"{int(figures_only.sum())} rung figures moved beyond the noise")
        for row in mine[mine["metric"] == "c_star"].itertuples(index=False):
            print(f"  C* {row.subject}: {text(row.baseline_value)} -> {text(row.value)} "
                  f"({row.note}{', ' + row.verdict if row.verdict else ''})")
        won = mine[mine["metric"] == WINNER]
        changed = won[won["verdict"] == "changed"]
        if len(won):
            print(f"  winner per rung: {len(changed)} of {len(won)} rungs changed" + "".join(
                f"; C={row.concurrency:g}: {row.note}" for row in changed.itertuples(index=False)))
    return 0
