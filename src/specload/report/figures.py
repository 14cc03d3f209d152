"""The report's figures: one function per figure, each returning a plotly.js `Figure`
(`report/plotjs.py`).

Every figure takes the summary table (one row per arm and concurrency) or the pair
results, puts concurrency (for open-loop runs, the arrival rate) on a log axis where it
is the x axis, labels both axes with units, gives each arm the same colour in every
figure, and shows the numbers on hover. `FIGURES` registers each by the name a workload
kind lists (`traffic/kinds.py`), with what it draws from; `all_figures` draws a kind's
figures in its order, each where the run has something to show in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from specload.report.acceptance_map import AcceptanceMap
from specload.report.arms_verdict import ArmsVerdict
from specload.report.categories import CategoryPair
from specload.report.client_metrics import ACCEPT_HIST_BIN
from specload.report.context_map import ContextMap
from specload.report.crossover import PairResult
from specload.report.envelope import EFFICIENCY_GOAL, Envelope
from specload.report.load_steps import BAND as STEP_BAND
from specload.report.load_steps import BIN_S as STEP_BIN_S
from specload.report.plotjs import Figure, bar, heatmap, scatter, template
from specload.report.rate_axis import RatePair
from specload.report.reply_positions import PositionPair
from specload.runfiles import accept_by_step
from specload.traffic.kinds import LADDER, RATES, SPEEDS, STEPS, USERS, WorkloadKind

PALETTE = tuple(template()["layout"]["colorway"])  # plotly's own line colours
C_AXIS = LADDER.title
RATE_AXIS = RATES.title
DASHES = ("solid", "dash", "dot", "dashdot")
# ColorBrewer's RdBu as plotly.py names it (plotly.colors.diverging.RdBu): red below 1,
# white at 1, blue above; plotly.js's own "RdBu" runs another way
RED_BLUE = [[i / 10, c] for i, c in enumerate((
    "rgb(103,0,31)", "rgb(178,24,43)", "rgb(214,96,77)", "rgb(244,165,130)",
    "rgb(253,219,199)", "rgb(247,247,247)", "rgb(209,229,240)", "rgb(146,197,222)",
    "rgb(67,147,195)", "rgb(33,102,172)", "rgb(5,48,97)"))]
MIN_STEPS = 20  # a step bin of fewer verification steps is left out of its line


def _colour(arms: Sequence[str], arm: str) -> str:
    return PALETTE[list(arms).index(arm) % len(PALETTE)]


def _layout(fig: Figure, title: str, y_title: str, x_title: str = C_AXIS,
            log_x: bool = True) -> Figure:
    fig.update_layout(title={"text": title}, hovermode="closest",
                      legend={"orientation": "h", "y": -0.22}, margin={"t": 60, "b": 40},
                      height=440)
    fig.update_xaxes(title={"text": x_title}, type="log" if log_x else "linear")
    fig.update_yaxes(title={"text": y_title}, rangemode="tozero")
    if log_x:
        rung_ticks(fig)
    return fig


MAX_RUNG_TICKS = 15


def rung_ticks(fig: Figure) -> None:
    """Label a log axis at the rungs the lines' markers sit on (1, 4, 10, 20, 40), not
    with plotly's decade ticks ("8 9 1 2 3 4 5 ... 10 2 3"), while there are few enough.
    A single marker (C*'s cross) is a point between rungs, not a rung."""
    rungs = sorted({float(x) for trace in fig.data
                    if "markers" in (getattr(trace, "mode", None) or "")  # no Heatmap's
                    and trace.x is not None
                    and len(trace.x) > 1
                    for x in trace.x if isinstance(x, int | float | np.number) and x > 0})
    if 2 <= len(rungs) <= MAX_RUNG_TICKS:
        fig.update_xaxes(tickvals=rungs, ticktext=[f"{x:g}" for x in rungs])


def _arm_lines(fig: Figure, summary: pd.DataFrame, column: str, label: str, unit: str,
               dash: str = "solid", suffix: str = "", x: str = "concurrency") -> None:
    arms = list(dict.fromkeys(summary["arm"]))
    at = {"rate": "rate", "speed": "speed"}.get(x, "C")
    for arm in arms:
        part = summary[summary["arm"] == arm].sort_values(x)
        if part[column].notna().sum() == 0:
            continue
        fig.add_trace(scatter(
            x=part[x], y=part[column], mode="lines+markers",
            name=f"{arm}{suffix}", line={"color": _colour(arms, arm), "dash": dash},
            hovertemplate=f"{arm}<br>{at}=%{{x}}<br>{label}: %{{y:.4g}} {unit}<extra></extra>",
        ))


def system_throughput(summary: pd.DataFrame) -> Figure:
    """System output tok/s vs C per arm, with the range over repeats as error bars."""
    fig = Figure()
    _arm_lines(fig, summary, "output_tok_s", "system output", "tok/s")
    if "reps" in summary and (summary["reps"] > 1).any():
        for trace in fig.data:
            part = summary[summary["arm"] == trace.name].sort_values("concurrency")
            trace.error_y = {"type": "data", "symmetric": False,
                             "array": part["output_tok_s_max"] - part["output_tok_s"],
                             "arrayminus": part["output_tok_s"] - part["output_tok_s_min"]}
    return _layout(fig, "System output throughput (tokens arriving in the measure window)",
                   "output tokens/s (all users)")


def speedup(pairs: Sequence[PairResult]) -> Figure:
    """Speedup spec-on / spec-off vs C per pair with its noise band, the 1.0 line and C*."""
    fig = Figure()
    for i, pair in enumerate(pairs):
        table = pair.speedup
        name = f"{pair.on.name} / {pair.off.name}"
        colour = PALETTE[i % len(PALETTE)]
        if "band_lo" in table:
            fig.add_trace(scatter(
                x=[*table["concurrency"], *table["concurrency"][::-1]],
                y=[*table["band_hi"], *table["band_lo"][::-1]], fill="toself",
                fillcolor=colour, opacity=0.15, line={"width": 0},
                name=f"noise band ({pair.crossover.band}), {name}",
                hovertemplate="noise band edge<br>C=%{x}<br>%{y:.3f}×<extra></extra>"))
        error = None
        if table["speedup_min"].notna().any():
            error = {"type": "data", "symmetric": False,
                     "array": table["speedup_max"] - table["speedup"],
                     "arrayminus": table["speedup"] - table["speedup_min"]}
        fig.add_trace(scatter(
            x=table["concurrency"], y=table["speedup"], mode="lines+markers", name=name,
            line={"color": colour}, error_y=error,
            customdata=np.stack([table["output_tok_s_on"], table["output_tok_s_off"]], axis=1),
            hovertemplate=f"{name}<br>C=%{{x}}<br>speedup: %{{y:.3f}}×<br>"
                          "spec-on %{customdata[0]:.1f} tok/s<br>"
                          "spec-off %{customdata[1]:.1f} tok/s<extra></extra>",
        ))
        c_star = pair.crossover.c_star
        interval = pair.interval
        shaded = interval if interval and not (interval.below or interval.above) else None
        if c_star is not None:
            span = (f", {shaded.level:.0%} interval {shaded.lo:.3g}-{shaded.hi:.3g} "
                    "shaded" if shaded else "")
            fig.add_trace(scatter(
                x=[c_star], y=[1.0], mode="markers+text",
                name=f"C* = {c_star:.1f} ({name}{span})",
                marker={"color": colour, "size": 14, "symbol": "x"},
                text=[f"C* = {c_star:.1f}"], textposition="top right",
                hovertemplate="C* = %{x:.2f} (interpolated in log C)<extra></extra>",
            ))
            fig.add_vline(x=c_star, line={"color": colour, "dash": "dot", "width": 1})
        if shaded:
            # a shape, not an annotation: on a log axis plotly places those in log units
            fig.add_vrect(x0=shaded.lo, x1=shaded.hi, fillcolor=colour, opacity=0.08,
                          line={"width": 0})
    fig.add_hline(y=1.0, line={"color": "black", "dash": "dash", "width": 1},
                  annotation_text="1.0 = break-even")
    return _layout(fig, "Speedup of speculative decoding (spec-on / spec-off system tok/s)",
                   "speedup (×)")


def batch_size(summary: pd.DataFrame) -> Figure:
    """The servers' mean running requests (their batch size) vs C per arm, and batch = C."""
    fig = Figure()
    _arm_lines(fig, summary, "server_running_mean", "mean running requests", "requests")
    c = sorted(summary["concurrency"].unique())
    fig.add_trace(scatter(x=c, y=c, mode="lines", name="batch size = C",
                             line={"color": "grey", "dash": "dot", "width": 1},
                             hovertemplate="batch size = C = %{x}<extra></extra>"))
    return _layout(fig, "Batch size: the servers' mean running requests (below C when "
                   "requests wait)", "mean running requests")


def per_user_throughput(summary: pd.DataFrame) -> Figure:
    """Per-user decode speed (1000 / TPOT p50) and per-request rate incl. TTFT vs C."""
    fig = Figure()
    _arm_lines(fig, summary, "decode_tok_s_per_user", "decode speed (1/TPOT)", "tok/s",
               suffix=" decode (1/TPOT)")
    if "request_tok_s_p50" in summary:
        _arm_lines(fig, summary, "request_tok_s_p50", "tokens / E2E", "tok/s", dash="dash",
                   suffix=" per request incl. TTFT")
    return _layout(fig, "Interactivity: per-user decode speed, and each request's output "
                   "rate including its TTFT", "output tokens/s per user")


def frontier(summary: pd.DataFrame) -> Figure:
    """Throughput-interactivity frontier: per-user vs system tok/s, points labelled by C."""
    fig = Figure()
    arms = list(dict.fromkeys(summary["arm"]))
    for arm in arms:
        part = summary[summary["arm"] == arm].sort_values("concurrency")
        fig.add_trace(scatter(
            x=part["output_tok_s"], y=part["decode_tok_s_per_user"], mode="lines+markers+text",
            name=arm, text=[f"C={c}" for c in part["concurrency"]], textposition="top center",
            line={"color": _colour(arms, arm)}, customdata=part["concurrency"],
            hovertemplate=f"{arm}<br>C=%{{customdata}}<br>system: %{{x:.1f}} tok/s<br>"
                          "decode per user: %{y:.1f} tok/s<extra></extra>",
        ))
    return _layout(fig, "Throughput vs interactivity frontier",
                   "decode tokens/s per user (1/TPOT p50)",
                   x_title="system output tokens/s", log_x=False)


def ttft(summary: pd.DataFrame) -> Figure:
    """TTFT p50 (solid) and p99 (dashed) vs C per arm."""
    fig = Figure()
    _arm_lines(fig, summary, "ttft_p50_ms", "TTFT p50", "ms", suffix=" p50")
    _arm_lines(fig, summary, "ttft_p99_ms", "TTFT p99", "ms", dash="dash", suffix=" p99")
    fig = _layout(fig, "Time to first token", "TTFT (ms, log scale)")
    return fig.update_yaxes(type="log", rangemode="normal")


def inter_token(summary: pd.DataFrame) -> Figure:
    """TPOT p50, chunk ITL p50 and token ITL p50 vs C per arm."""
    fig = Figure()
    for (column, label), dash in zip(
        (("tpot_p50_ms", "TPOT p50"), ("itl_chunk_p50_ms", "chunk ITL p50"),
         ("itl_token_p50_ms", "token ITL p50")), DASHES, strict=False):
        _arm_lines(fig, summary, column, label, "ms", dash=dash, suffix=f" {label}")
    return _layout(fig, "Time per output token and inter-chunk / inter-token latency",
                   "milliseconds")


def tokens_per_chunk(summary: pd.DataFrame) -> Figure:
    """Client-seen tokens per chunk (solid) and server mean acceptance length (dashed)."""
    fig = Figure()
    _arm_lines(fig, summary, "tokens_per_chunk", "tokens per chunk", "tokens",
               suffix=" tokens/chunk")
    if "accept_len_mean" in summary:
        _arm_lines(fig, summary, "accept_len_mean", "server acceptance length", "tokens",
                   dash="dash", suffix=" server accept length")
    return _layout(fig, "Tokens per chunk (client) and mean acceptance length (server)",
                   "tokens per chunk / per step")


def failures(summary: pd.DataFrame) -> Figure:
    """Failed requests per rung (started in the measure window) vs C per arm."""
    fig = Figure()
    arms = list(dict.fromkeys(summary["arm"]))
    for arm in arms:
        part = summary[summary["arm"] == arm].sort_values("concurrency")
        kinds = [", ".join(f"{k}: {v}" for k, v in d.items()) or "none"
                 for d in part["failures_by_kind"]]
        fig.add_trace(bar(
            x=part["concurrency"].astype(str), y=part["failures"], name=arm,
            marker={"color": _colour(arms, arm)},
            customdata=np.stack([100 * part["failure_rate"].fillna(0), kinds], axis=1),
            hovertemplate=f"{arm}<br>C=%{{x}}<br>failures: %{{y}} "
                          "(%{customdata[0]:.2f}%)<br>%{customdata[1]}<extra></extra>",
        ))
    fig.update_layout(barmode="group")
    if not summary["failures"].fillna(0).any():
        fig.add_annotation(text="no failed requests", showarrow=False, xref="paper",
                           yref="paper", x=0.5, y=0.5, font={"size": 16})
    fig = _layout(fig, "Failed requests per rung", "failed requests (count)",
                  x_title="concurrency C (concurrent users)", log_x=False)
    return fig.update_xaxes(type="category")


def token_lengths(summary: pd.DataFrame) -> Figure:
    """Prompt and output tokens per request as the server counted them: p50, p10-p90."""
    fig = Figure()
    arms = list(dict.fromkeys(summary["arm"]))
    for column, label, dash in (("prompt_tokens", "prompt", "solid"),
                                ("output_tokens", "output", "dash")):
        if f"{column}_p50" not in summary or summary[f"{column}_p50"].isna().all():
            continue
        for arm in arms:
            part = summary[summary["arm"] == arm].sort_values("concurrency")
            fig.add_trace(scatter(
                x=part["concurrency"], y=part[f"{column}_p50"], mode="lines+markers",
                name=f"{arm} {label}", line={"color": _colour(arms, arm), "dash": dash},
                error_y={"type": "data", "symmetric": False,
                         "array": part[f"{column}_p90"] - part[f"{column}_p50"],
                         "arrayminus": part[f"{column}_p50"] - part[f"{column}_p10"]},
                hovertemplate=f"{arm} {label}<br>C=%{{x}}<br>p50 %{{y:.0f}} tokens"
                              "<extra></extra>"))
    return _layout(fig, "Workload: prompt and output tokens per request (p50, bars p10-p90)",
                   "tokens per request (server's count)")


def acceptance_spread(summary: pd.DataFrame) -> Figure:
    """Each request's own acceptance length (tokens per target step, from what its engine
    told of it): p50 with bars p10-p90 per rung, and the server counters' mean dashed."""
    fig = Figure()
    arms = list(dict.fromkeys(summary["arm"]))
    for arm in arms:
        part = summary[summary["arm"] == arm].sort_values("concurrency")
        if part["req_accept_len_p50"].isna().all():
            continue
        colour = _colour(arms, arm)
        fig.add_trace(scatter(
            x=part["concurrency"], y=part["req_accept_len_p50"], mode="lines+markers",
            name=f"{arm} requests", line={"color": colour},
            error_y={"type": "data", "symmetric": False,
                     "array": part["req_accept_len_p90"] - part["req_accept_len_p50"],
                     "arrayminus": part["req_accept_len_p50"] - part["req_accept_len_p10"]},
            hovertemplate=f"{arm}<br>C=%{{x}}<br>p50 %{{y:.2f}} tokens per step"
                          "<extra></extra>"))
        server = part.get("accept_len_mean")
        if server is not None and server.notna().any():
            fig.add_trace(scatter(
                x=part["concurrency"], y=server, mode="lines", name=f"{arm} server mean",
                line={"color": colour, "dash": "dash"},
                hovertemplate=f"{arm} server<br>C=%{{x}}<br>%{{y:.2f}}<extra></extra>"))
    return _layout(fig, "Acceptance per request (p50, bars p10-p90; dashed: the server's "
                   "mean)", "acceptance length (tokens per target step)")


def _rung_lines(summary: pd.DataFrame, column: str
                ) -> Iterator[tuple[str, str, float, dict[str, int], float]]:
    """(arm, colour, C, the rung's mapping) for each rung whose `column` holds counts, and
    the line's opacity: later rungs darker."""
    arms = list(dict.fromkeys(summary["arm"]))
    for arm in arms:
        part = summary[summary["arm"] == arm].sort_values("concurrency")
        rungs = [(c, m) for c, m in zip(part["concurrency"], part[column], strict=True)
                 if isinstance(m, dict) and m]
        for j, (c, mapping) in enumerate(rungs):
            yield arm, _colour(arms, arm), c, mapping, 0.35 + 0.65 * (j + 1) / len(rungs)


def acceptance_histogram(summary: pd.DataFrame) -> Figure:
    """Each rung's requests by their own acceptance length (`req_accept_len_hist`), as
    shares of the rung's requests that told it: how wide the acceptance is spread."""
    fig = Figure()
    width = ACCEPT_HIST_BIN
    for arm, colour, c, hist, alpha in _rung_lines(summary, "req_accept_len_hist"):
        edges = sorted(float(k) for k in hist)
        total = sum(hist.values())
        fig.add_trace(scatter(
            x=[e + width / 2 for e in edges], y=[hist[f"{e:.2f}"] / total for e in edges],
            mode="lines+markers", line={"color": colour, "shape": "hvh"}, opacity=alpha,
            name=f"{arm} C={c:g}", legendgroup=arm,
            hovertemplate=f"{arm} C={c:g}<br>acceptance length %{{x:.2f}} ± {width / 2:g}"
                          "<br>%{y:.0%} of its requests<extra></extra>"))
    fig = _layout(fig, "Acceptance per request: each rung's requests by their acceptance "
                  "length", "share of the rung's requests", "acceptance length (tokens per "
                  "target step)", log_x=False)
    fig.update_yaxes(tickformat=".0%")
    return fig


def acceptance_by_step(summary: pd.DataFrame) -> Figure:
    """Acceptance length along the reply: per bin of the requests' verification steps
    (step 1, 2-3, 4-7, ...), `1 + accepted / steps` over the rung's requests, where the
    engine listed each step (vLLM's `detailed` per-request metrics); bins of fewer than
    `MIN_STEPS` steps are left out."""
    fig = Figure()
    for arm, colour, c, steps, alpha in _rung_lines(summary, "accept_step_steps"):
        accepted = summary[(summary["arm"] == arm) & (summary["concurrency"] == c)][
            "accept_step_accepted"].iloc[0]
        bins = sorted((int(b) for b, n in steps.items() if n >= MIN_STEPS))
        fig.add_trace(scatter(
            x=[accept_by_step.label(b) for b in bins],
            y=[1 + accepted.get(str(b), 0) / steps[str(b)] for b in bins],
            mode="lines+markers", line={"color": colour}, opacity=alpha,
            name=f"{arm} C={c:g}", legendgroup=arm,
            hovertemplate=f"{arm} C={c:g}<br>steps %{{x}}<br>%{{y:.2f}} tokens per step"
                          "<extra></extra>"))
    fig = _layout(fig, "Acceptance along the reply, by the request's verification step",
                  "acceptance length (tokens per step)", "the request's n-th verification "
                  "step", log_x=False)
    fig.update_xaxes(type="category")
    return fig


def in_flight(summary: pd.DataFrame) -> Figure:
    """Chat sessions: requests in flight (the batch offered to the server) vs sessions."""
    fig = Figure()
    _arm_lines(fig, summary, "achieved_concurrency", "requests in flight", "requests")
    if "server_running_mean" in summary:
        _arm_lines(fig, summary, "server_running_mean", "server's running requests",
                   "requests", dash="dash", suffix=" server running")
    return _layout(fig, "Requests in flight per number of chat sessions (think time keeps "
                   "it below)", "mean requests in flight",
                   x_title="concurrent chat sessions (log scale)")


def load_steps(summary: pd.DataFrame) -> Figure:
    """Load steps: each arm's smoothed tok/s from the first jump on, a dotted line at
    every jump and a cross where each arm settled (`report/load_steps.py`)."""
    fig = Figure()
    rows = summary.dropna(subset=["step"]).sort_values("step", kind="stable")
    jumps: list[tuple[float, str]] = []
    for i, arm in enumerate(dict.fromkeys(rows["arm"])):
        colour = PALETTE[i % len(PALETTE)]
        xs: list[float] = []
        ys: list[float] = []
        settled: list[tuple[float, float, str]] = []
        t0 = 0.0
        for r in rows[rows["arm"] == arm].itertuples(index=False):
            values = [float(v) for v in str(r.timeline_tok_s or "").split()]
            if i == 0:
                jumps.append((t0, f"{int(r.from_users)}->{int(r.concurrency)}"))
            xs += [t0 + STEP_BIN_S * (j + 0.5) for j in range(len(values))]
            ys += values
            if pd.notna(r.settle_s):
                settled.append((t0 + float(r.settle_s), float(r.output_tok_s),
                                f"step {int(r.step)}: {float(r.settle_s):.2f} s"))
            t0 += len(values) * STEP_BIN_S
        fig.add_trace(scatter(x=xs, y=ys, mode="lines", name=arm, line={"color": colour},
                              hovertemplate=f"{arm}<br>%{{x:.2f}} s<br>%{{y:.0f}} tok/s"
                              "<extra></extra>"))
        fig.add_trace(scatter(
            x=[t for t, _, _ in settled], y=[y for _, y, _ in settled], mode="markers",
            name=f"{arm} settled", marker={"symbol": "x", "size": 11, "color": colour},
            customdata=[w for _, _, w in settled],
            hovertemplate=f"{arm} settled<br>%{{customdata}}<extra></extra>"))
    for t, words in jumps:
        fig.add_vline(t, line={"color": "grey", "dash": "dot", "width": 1})
        fig.add_annotation(text=words, showarrow=False, x=t, xanchor="left", yref="y domain",
                           y=1, yanchor="bottom")
    return _layout(fig, f"Load steps: tok/s after each jump (smoothed; a cross where each arm "
                   f"settled within {STEP_BAND:.0%} of the step's steady level)",
                   "output tokens/s (all users)",
                   x_title=STEPS.title, log_x=False)


def _open_x(frame: pd.DataFrame) -> tuple[str, str, str]:
    """An open loop's x axis, its column, title and name: the arrival rate, or a trace
    replay's speed (its rate is the speed times the trace's own)."""
    if "speed" in frame and frame["speed"].notna().any():
        return "speed", SPEEDS.title, "trace speed"
    return "rate", RATE_AXIS, "arrival rate"


def rate_throughput(summary: pd.DataFrame) -> Figure:
    """Open loop: system output tok/s vs arrival rate (or trace speed) per arm."""
    fig = Figure()
    x, title, per = _open_x(summary)
    _arm_lines(fig, summary, "output_tok_s", "system output", "tok/s", x=x)
    return _layout(fig, f"System output throughput per {per} (equal while both arms keep "
                   "up)", "output tokens/s (all requests)", x_title=title)


def rate_speedup(pairs: Sequence[RatePair]) -> Figure:
    """Open loop: latency speedup (spec-off / spec-on mean E2E) vs rate, and rate*."""
    fig = Figure()
    for i, pair in enumerate(pairs):
        table, colour = pair.table, PALETTE[i % len(PALETTE)]
        name = f"{pair.on.name} / {pair.off.name}"
        x = _open_x(table)[0]
        fig.add_trace(scatter(
            x=table[x], y=table["speedup"], mode="lines+markers", name=name,
            line={"color": colour},
            error_y={"type": "data", "symmetric": False,
                     "array": table["band_hi"] - table["speedup"],
                     "arrayminus": table["speedup"] - table["band_lo"]},
            hovertemplate=f"{name}<br>{x}=%{{x}}<br>speedup: %{{y:.3f}}×<extra></extra>"))
        at = pair.speed_star if x == "speed" else pair.crossover.c_star
        if at is not None:  # a marker, not an annotation: those misplace on log axes
            words = f"speed* = {at:.3g}" if x == "speed" else f"rate* = {at:.3g}/s"
            fig.add_trace(scatter(
                x=[at], y=[1.0], mode="markers+text", name=f"{words} ({name})",
                marker={"color": colour, "size": 14, "symbol": "x"},
                text=[words], textposition="top right",
                hovertemplate=f"{words} (interpolated in log rate)<extra></extra>"))
            fig.add_vline(x=at, line={"color": colour, "dash": "dot", "width": 1})
    fig.add_hline(y=1.0, line={"color": "black", "dash": "dash", "width": 1})
    _, title, per = _open_x(pairs[0].table) if pairs else ("rate", RATE_AXIS, "arrival rate")
    return _layout(fig, f"Speedup of speculative decoding per {per} (spec-off / spec-on "
                   "mean E2E from the schedule)", "speedup (×)", x_title=title)


def rate_latency(summary: pd.DataFrame) -> Figure:
    """Open loop: E2E and TTFT from the schedule (coordinated omission included) and
    TTFT from the send, vs rate."""
    fig = Figure()
    x, title, per = _open_x(summary)
    _arm_lines(fig, summary, "e2e_sched_mean_ms", "mean E2E from schedule", "ms", x=x,
               suffix=" E2E mean (from schedule)")
    _arm_lines(fig, summary, "ttft_sched_p99_ms", "TTFT p99 from schedule", "ms",
               dash="dash", x=x, suffix=" TTFT p99 (from schedule)")
    _arm_lines(fig, summary, "ttft_p99_ms", "TTFT p99 from send", "ms", dash="dot",
               x=x, suffix=" TTFT p99 (from send)")
    fig = _layout(fig, f"Latency per {per}, from the scheduled time and from the send",
                  "milliseconds (log scale)", x_title=title)
    return fig.update_yaxes(type="log", rangemode="normal")


def rate_achieved(summary: pd.DataFrame) -> Figure:
    """Open loop: achieved arrival rate and requests in flight vs the target rate."""
    fig = Figure()
    x, title, _ = _open_x(summary)
    _arm_lines(fig, summary, "achieved_rate", "achieved rate", "/s", x=x,
               suffix=" achieved rate")
    _arm_lines(fig, summary, "achieved_concurrency", "requests in flight", "requests",
               dash="dash", x=x, suffix=" in flight")
    targets = summary[list(dict.fromkeys([x, "rate"]))].dropna().drop_duplicates(x) \
        .sort_values(x)
    fig.add_trace(scatter(x=targets[x], y=targets["rate"], mode="lines",
                          name="achieved = target", line={"color": "grey", "dash": "dot",
                                                           "width": 1}))
    return _layout(fig, "Achieved arrival rate (below target: the cap or the client held it "
                   "down) and requests in flight", "per second / requests", x_title=title)


def envelope(found: Sequence[Envelope]) -> Figure:
    """Each verification arm's tok/s against the envelope max(compared arms), and its
    envelope efficiency on a second axis with the goal line."""
    fig = Figure()
    for i, env in enumerate(found):
        t = env.table
        colour = PALETTE[i % len(PALETTE)]
        fig.add_trace(scatter(
            x=t["concurrency"], y=t["envelope_tok_s"], mode="lines+markers",
            name=f"envelope max(compared arms) for {env.arm}",
            line={"color": "grey", "dash": "dash"}, customdata=t["envelope_arm"],
            hovertemplate="C=%{x}<br>envelope %{y:.1f} tok/s (%{customdata})<extra></extra>"))
        fig.add_trace(scatter(
            x=t["concurrency"], y=t["output_tok_s"], mode="lines+markers", name=env.arm,
            line={"color": colour},
            hovertemplate=f"{env.arm}<br>C=%{{x}}<br>%{{y:.1f}} tok/s<extra></extra>"))
        fig.add_trace(scatter(
            x=t["concurrency"], y=t["efficiency"], mode="lines+markers", yaxis="y2",
            name=f"{env.arm} envelope efficiency", line={"color": colour, "dash": "dot"},
            hovertemplate="C=%{x}<br>efficiency %{y:.3f}<extra></extra>"))
    fig.add_trace(scatter(
        x=[min(e.table["concurrency"].min() for e in found),
           max(e.table["concurrency"].max() for e in found)],
        y=[EFFICIENCY_GOAL] * 2, mode="lines", yaxis="y2", name=f"{EFFICIENCY_GOAL} goal",
        line={"color": "black", "dash": "dot", "width": 1}, hoverinfo="skip"))
    _layout(fig, "Verification arm (recommended schedule) against the envelope",
            "output tokens/s (all users)")
    low = min(0.8, min(float(e.table["efficiency"].min()) for e in found) - 0.05)
    fig.update_layout(yaxis2={"title": {"text": "envelope efficiency (dotted)"},
                              "overlaying": "y", "side": "right", "range": [low, 1.1],
                              "rangemode": "normal", "showgrid": False,
                              "tickmode": "auto", "tickformat": ".2f"})
    return fig


def arms_envelope(found: Sequence[ArmsVerdict]) -> Figure:
    """Every compared arm's share of the best arm's tok/s per rung, with its noise band,
    and the envelope (share 1): where each choice wins and what it gives up."""
    verdict = found[0]
    fig = Figure()
    for i, (arm, rows) in enumerate(verdict.table.groupby("arm", sort=False)):
        colour = PALETTE[i % len(PALETTE)]
        fig.add_trace(scatter(
            x=rows["concurrency"], y=rows["share"], mode="lines+markers", name=str(arm),
            line={"color": colour}, customdata=np.stack(
                [rows["band_lo"], rows["band_hi"], rows["output_tok_s"]], axis=1),
            error_y={"type": "data", "symmetric": False,
                     "array": (rows["band_hi"] - rows["share"]).tolist(),
                     "arrayminus": (rows["share"] - rows["band_lo"]).tolist(),
                     "color": colour, "thickness": 1},
            hovertemplate=f"{arm}<br>C=%{{x}}<br>share %{{y:.3f}} (band %{{customdata[0]:.3f}}"
                          "-%{customdata[1]:.3f})<br>%{customdata[2]:.1f} tok/s<extra></extra>"))
    fig.add_hline(y=1.0, line={"color": "grey", "dash": "dash"})
    fig = _layout(fig, "Every arm against the envelope (the best arm at each rung)",
                  "share of the best arm's tok/s")
    return fig.update_yaxes(rangemode="normal")


def acceptance_map(maps: Sequence[AcceptanceMap]) -> Figure:
    """The speedup over acceptance length x C as a heat map (1 in white), the break-even
    acceptance per C, and a spec-on arm whose acceptance was not set at what its server
    reported."""
    amap = maps[0]
    table = amap.speedup
    c = [float(x) for x in table.columns]
    fig = Figure(heatmap(
        x=c, y=[float(a) for a in table.index], z=table.to_numpy(), zmid=1.0,
        colorscale=RED_BLUE, colorbar={"title": {"text": "speedup"}},
        hovertemplate="C=%{x}<br>acceptance length %{y}<br>speedup %{z:.3f}×<extra></extra>"))
    inside = [b for b in amap.break_even if not b.bound]
    fig.add_trace(scatter(
        x=[b.concurrency for b in inside], y=[b.length for b in inside], mode="lines+markers",
        name="break-even acceptance (speedup 1)", line={"color": "black", "width": 2},
        hovertemplate="C=%{x}<br>breaks even at %{y:.2f}<extra></extra>"))
    if amap.real is not None and amap.real_acceptance is not None:
        real = amap.real_acceptance.dropna()
        fig.add_trace(scatter(
            x=list(real.index), y=list(real), mode="lines+markers",
            name=f"{amap.real.on.name} (acceptance its server reported)",
            line={"color": "darkgreen", "dash": "dash"}, marker={"symbol": "diamond"},
            hovertemplate="C=%{x}<br>accepts %{y:.2f}<extra></extra>"))
    fig = _layout(fig, f"Acceptance map: speedup over {amap.off} by mean acceptance length",
                  "mean acceptance length (tokens per step)")
    fig.update_xaxes(tickvals=c, ticktext=[f"{x:g}" for x in c])  # the rungs, not decades
    return fig.update_yaxes(rangemode="normal")


def _at_index(levels: Sequence[float], c: float) -> float:
    """Where C lies among the rungs `levels`, as a fractional index (log between rungs)."""
    x = np.log(np.asarray(levels, dtype=float))
    return float(np.interp(np.log(c), x, np.arange(len(levels))))


def context_map(maps: Sequence[ContextMap]) -> Figure:
    """The speedup over context x C as a heat map (1 in white), its break-even contour,
    and each context's C* with its interval; the rungs evenly spaced, as the ladder is."""
    cmap = maps[0]
    table = cmap.speedup
    levels = [float(c) for c in table.columns]
    x, y = list(range(len(levels))), list(range(len(cmap.rows)))
    labels = [r.label for r in cmap.rows]
    z = table.to_numpy()
    fig = Figure(heatmap(
        x=x, y=y, z=z, zmid=1.0, colorscale=RED_BLUE, colorbar={"title": {"text": "speedup"}},
        customdata=[[[c, lab] for c in levels] for lab in labels],
        hovertemplate="C=%{customdata[0]:g}<br>context %{customdata[1]}<br>speedup "
                      "%{z:.3f}×<extra></extra>"))
    fig.add_trace({"type": "contour", "x": x, "y": y, "z": z, "showscale": False,
                   "contours": {"start": 1.0, "end": 1.0, "size": 1.0, "coloring": "none"},
                   "line": {"color": "black", "width": 2, "dash": "dash"},
                   "name": "break-even (speedup 1)", "showlegend": True,
                   "hoverinfo": "skip"})
    found = [(i, r) for i, r in enumerate(cmap.rows) if r.pair.crossover.c_star is not None]
    spans = [r.pair.interval for _, r in found]
    centre = [_at_index(levels, r.pair.crossover.c_star or 0.0) for _, r in found]
    lo = [_at_index(levels, s.lo) if s and not s.below else 0.0 for s in spans]
    hi = [_at_index(levels, s.hi) if s and not s.above else len(levels) - 1.0 for s in spans]
    fig.add_trace(scatter(
        x=centre, y=[i for i, _ in found], mode="markers", name="C* (95% interval)",
        marker={"color": "black", "symbol": "diamond", "size": 10},
        error_x={"type": "data", "symmetric": False,
                 "array": [h - c for h, c in zip(hi, centre, strict=True)],
                 "arrayminus": [c - v for c, v in zip(centre, lo, strict=True)],
                 "color": "black", "thickness": 1.5},
        customdata=[r.reach() for _, r in found],
        hovertemplate="%{customdata}<extra></extra>"))
    fig = _layout(fig, "Speedup by context length and C (each context's spec-on / spec-off)"
                       f"<br><sup>{cmap.sentence()}</sup>", "context (prompt tokens)")
    fig.update_xaxes(type="linear", tickvals=x, ticktext=[f"{c:g}" for c in levels],
                     title={"text": "concurrency C (the rungs, evenly spaced)"})
    fig.update_layout(margin={"t": 90})
    return fig.update_yaxes(tickvals=y, ticktext=labels, rangemode="normal")


def position_speedup(pairs: Sequence[PositionPair]) -> Figure:
    """Per output-position bucket, the speedup (TPOT off / on) vs C, and the 1.0 line."""
    fig = Figure()
    pair = pairs[0]
    for i, (name, part) in enumerate(pair.rows.groupby("bucket", sort=False)):
        fig.add_trace(scatter(
            x=part["concurrency"], y=part["speedup"], mode="lines+markers",
            name=f"output tokens {name}", line={"color": PALETTE[i % len(PALETTE)]},
            customdata=np.stack([part["tpot_on_ms"], part["tpot_off_ms"]], axis=1),
            hovertemplate=f"tokens {name}<br>C=%{{x}}<br>speedup %{{y:.3f}}×<br>TPOT on "
                          "%{customdata[0]:.1f} ms, off %{customdata[1]:.1f} ms<extra></extra>"))
    fig.add_hline(y=1.0, line={"color": "grey", "dash": "dash"})
    fig = _layout(fig, f"Speedup along the reply ({pair.on} / {pair.off}, TPOT off / on by "
                       "output position)", "speedup (×)")
    return fig.update_yaxes(rangemode="normal")


def category_speedup(pairs: Sequence[CategoryPair]) -> Figure:
    """Per prompt category, the speedup its requests see (TPOT off / on) vs C, the 1.0
    line and each category's C*."""
    fig = Figure()
    pair = pairs[0]
    for i, (name, part) in enumerate(pair.rows.groupby("category", sort=True)):
        colour = PALETTE[i % len(PALETTE)]
        c_star = pair.crossovers[str(name)].c_star
        fig.add_trace(scatter(
            x=part["concurrency"], y=part["speedup"], mode="lines+markers",
            name=f"{name}: {pair.reach(str(name))}", line={"color": colour},
            customdata=np.stack([part["accept_len"], part["token_share"]], axis=1),
            hovertemplate=f"{name}<br>C=%{{x}}<br>speedup %{{y:.3f}}×<br>acceptance "
                          "%{customdata[0]:.2f}<br>token share %{customdata[1]:.0%}"
                          "<extra></extra>"))
        if c_star is not None:
            fig.add_vline(x=c_star, line={"color": colour, "dash": "dot", "width": 1})
    fig.add_hline(y=1.0, line={"color": "grey", "dash": "dash"})
    # the mix can name eight categories: a line of its own, smaller, under the title
    fig = _layout(fig, f"Speedup by {pair.what} ({pair.on} / {pair.off}, TPOT off / on)"
                       f"<br><sup>mix: {pair.mix_words()}</sup>", "speedup (×)")
    # the legend holds two categories a row under the plot: room for it, not from it
    rows = -(-pair.rows["category"].nunique() // 2)
    fig.update_layout(margin={"t": 80}, height=400 + 30 * rows)
    return fig.update_yaxes(rangemode="normal")


@dataclass(frozen=True, slots=True)
class Registered:
    """One registered figure: what it draws from, and when it has something to show."""

    draw: Callable[[Any], Figure]
    # or "pairs", "rate_pairs", "envelopes", "arms_verdicts", "acceptance_maps",
    # "context_maps", "positions", "categories", "context_buckets"
    source: str = "summary"
    needs: str | None = None  # a summary column it is drawn only where measured

    def shown(self, sources: dict[str, Any]) -> bool:
        data = sources[self.source]
        if self.needs is not None:
            column = data.get(self.needs, pd.Series(dtype=float))
            return bool(column.map(  # a mapping column: measured where it holds counts
                lambda v: bool(v) if isinstance(v, dict) else pd.notna(v)).any())
        return self.source == "summary" or len(data) > 0


FIGURES: dict[str, Registered] = {
    "system_throughput": Registered(system_throughput),
    "speedup": Registered(speedup, "pairs"),
    "category_speedup": Registered(category_speedup, "categories"),
    "context_bucket_speedup": Registered(category_speedup, "context_buckets"),
    "acceptance_map": Registered(acceptance_map, "acceptance_maps"),
    "context_map": Registered(context_map, "context_maps"),
    "position_speedup": Registered(position_speedup, "positions"),
    "envelope": Registered(envelope, "envelopes"),
    "arms_envelope": Registered(arms_envelope, "arms_verdicts"),
    "batch_size": Registered(batch_size, needs="server_running_mean"),
    "per_user_throughput": Registered(per_user_throughput),
    "frontier": Registered(frontier),
    "ttft": Registered(ttft),
    "inter_token": Registered(inter_token),
    "tokens_per_chunk": Registered(tokens_per_chunk),
    "token_lengths": Registered(token_lengths, needs="prompt_tokens_p50"),
    "acceptance_spread": Registered(acceptance_spread, needs="req_accept_len_p50"),
    "acceptance_histogram": Registered(acceptance_histogram, needs="req_accept_len_hist"),
    "acceptance_by_step": Registered(acceptance_by_step, needs="accept_step_steps"),
    "in_flight": Registered(in_flight),
    "failures": Registered(failures),
    "load_steps": Registered(load_steps, needs="timeline_tok_s"),
    "rate_throughput": Registered(rate_throughput),
    "rate_speedup": Registered(rate_speedup, "rate_pairs"),
    "rate_latency": Registered(rate_latency),
    "rate_achieved": Registered(rate_achieved),
}


def all_figures(summary: pd.DataFrame, pairs: Sequence[PairResult],
                rate_pairs: Sequence[RatePair] = (), envelopes: Sequence[Envelope] = (),
                kind: WorkloadKind = USERS,
                acceptance_map: AcceptanceMap | None = None,
                categories: Sequence[CategoryPair] = (),
                arms: ArmsVerdict | None = None,
                context_map: ContextMap | None = None,
                positions: Sequence[PositionPair] = (),
                context_buckets: Sequence[CategoryPair] = ()) -> list[Figure]:
    """Every figure the kind shows, in its order (envelopes: those with rungs)."""
    sources = {"summary": summary, "pairs": list(pairs), "rate_pairs": list(rate_pairs),
               "envelopes": [e for e in envelopes if len(e.table)],
               "arms_verdicts": [arms] if arms else [],
               "acceptance_maps": [acceptance_map] if acceptance_map else [],
               "context_maps": [context_map] if context_map else [],
               "positions": list(positions),
               "context_buckets": list(context_buckets),
               "categories": list(categories)}
    shown = [FIGURES[name] for name in kind.figures if FIGURES[name].shown(sources)]
    return [f.draw(sources[f.source]) for f in shown]
