"""Every figure: a plotly Figure with titled axes, hover templates and one trace per arm."""

from __future__ import annotations

from typing import Any

import orjson
import pandas as pd
import plotly.graph_objects as go
import pytest

from specload.report import figures
from specload.report.acceptance_map import AcceptanceMap, BreakEven
from specload.report.arms_verdict import analyse_arms
from specload.report.categories import CategoryPair
from specload.report.context_map import ContextMap, ContextRow
from specload.report.crossover import ALWAYS, CROSSES, Crossover
from specload.report.envelope import envelopes
from specload.report.rate_axis import RatePair
from specload.report.reply_positions import PositionPair
from specload.report.run_files import ArmSource
from tests.support.figure_inputs import pair as _pair
from tests.support.figure_inputs import summary as _summary


def test_all_figures_have_axis_titles_and_hover_numbers() -> None:
    figs = figures.all_figures(_summary(), [_pair()])
    assert len(figs) == 8
    for fig in figs:
        go.Figure(orjson.loads(fig.to_json()))  # plotly.py validates every property
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        assert fig.data and all(t.hovertemplate and "%{" in t.hovertemplate for t in fig.data)


def test_concurrency_axes_are_logarithmic() -> None:
    s = _summary()
    for fn in (figures.system_throughput, figures.per_user_throughput, figures.ttft,
               figures.inter_token, figures.tokens_per_chunk):
        assert fn(s).layout.xaxis.type == "log"
    assert figures.speedup([_pair()]).layout.xaxis.type == "log"


def test_speedup_marks_c_star_and_break_even() -> None:
    fig = figures.speedup([_pair()])
    assert any(t.name.startswith("C* = 50.0") for t in fig.data)
    assert any(s.y0 == 1.0 and s.y1 == 1.0 for s in fig.layout.shapes)


def test_arm_without_values_is_left_out() -> None:
    fig = figures.tokens_per_chunk(_summary())
    assert [t.name for t in fig.data] == ["on tokens/chunk", "off tokens/chunk"]


def test_throughput_error_bars_span_repeat_range() -> None:
    fig = figures.system_throughput(_summary())
    on = next(t for t in fig.data if t.name == "on")
    assert list(on.error_y.arrayminus) == [6.0, 60.0, 600.0]


def test_failures_axis_is_categorical_and_says_when_there_are_none() -> None:
    s = _summary()
    assert figures.failures(s).layout.xaxis.type == "category"
    assert not figures.failures(s).layout.annotations
    quiet = figures.failures(s.assign(failures=0))
    assert quiet.layout.annotations[0].text == "no failed requests"


def test_speedup_shades_the_noise_band() -> None:
    pair = _pair()
    pair.speedup = pair.speedup.assign(band_lo=pair.speedup["speedup_min"],
                                       band_hi=pair.speedup["speedup_max"])
    band = next(t for t in figures.speedup([pair]).data if t.name.startswith("noise band"))
    assert band.fill == "toself" and list(band.y) == [1.6, 1.6, 1.0, 0.8, 1.4, 1.4]


def test_batch_size_figure_only_with_the_running_requests_gauge() -> None:
    s = _summary().assign(server_running_mean=lambda d: d["concurrency"].clip(upper=16) * 1.0)
    figs = figures.all_figures(s, [_pair()])
    assert len(figs) == 9 and figs[2].layout.yaxis.title.text == "mean running requests"
    on = next(t for t in figs[2].data if t.name == "on")
    assert list(on.y) == [1.0, 10.0, 16.0]


def test_envelope_figure_draws_the_verify_arm_against_the_envelope() -> None:
    from specload.report.envelope import envelopes

    base = _summary()
    verify = base[base["arm"] == "off"].assign(arm="verify", output_tok_s=[15.0, 140.0, 1485.0])
    summary = pd.concat([base, verify], ignore_index=True)
    arms = [ArmSource("on", "spec_on"), ArmSource("off", "spec_off"),
            ArmSource("verify", "verify")]
    found = envelopes(summary, arms, {})
    fig = figures.envelope(found)
    names = [t.name for t in fig.data]
    assert names[:3] == ["envelope max(compared arms) for verify", "verify",
                         "verify envelope efficiency"]
    assert list(fig.data[2].y) == [1.0, 140 / 150, 0.99] and fig.data[2].yaxis == "y2"
    assert fig.layout.yaxis2.range == [0.8, 1.1]  # down to the worst rung's 0.93 and below
    assert all(f.layout.title.text for f in figures.all_figures(summary, [], (), found))


def test_acceptance_spread_only_where_requests_told_their_acceptance() -> None:
    nan = float("nan")
    s = _summary()
    s = s.assign(req_accept_len_p10=[2.0, 1.8, 1.5, nan, nan, nan],
                 req_accept_len_p50=[3.0, 2.6, 2.0, nan, nan, nan],
                 req_accept_len_p90=[3.8, 3.5, 3.0, nan, nan, nan],
                 accept_len_mean=[3.1, 2.7, 2.1, nan, nan, nan])
    assert s["arm"].tolist() == ["on"] * 3 + ["off"] * 3
    figs = figures.all_figures(s, [_pair()])
    spread = next(f for f in figs if "Acceptance per request" in f.layout.title.text)
    assert [t.name for t in spread.data] == ["on requests", "on server mean"]
    requests = spread.data[0]
    assert list(requests.y) == [3.0, 2.6, 2.0]
    assert list(requests.error_y.array) == pytest.approx([0.8, 0.9, 1.0])
    assert list(requests.error_y.arrayminus) == pytest.approx([1.0, 0.8, 0.5])
    assert len(figures.all_figures(_summary(), [_pair()])) == len(figs) - 1


def test_log_c_axes_are_labelled_at_the_rungs_with_a_heat_map_among_the_traces() -> None:
    # the acceptance map: a heat map (no markers, no `mode`) under break-even markers
    table = pd.DataFrame([[1.4, 1.1, 0.9], [1.6, 1.3, 1.05]], index=[2.0, 3.0],
                         columns=[4, 16, 32])
    amap = AcceptanceMap("off", table, [BreakEven(16, 2.6), BreakEven(32, 2.9)],
                         table, {})
    fig = figures.acceptance_map([amap])
    assert list(fig.layout.xaxis.tickvals) == [4, 16, 32]
    # the speedup figure: the rungs, not C*'s single cross between them
    speedup = figures.speedup([_pair()])
    assert list(speedup.layout.xaxis.tickvals) == [1, 10, 100]
    assert list(speedup.layout.xaxis.ticktext) == ["1", "10", "100"]


def _every_source() -> dict[str, Any]:
    """Something to draw for every registered figure."""
    s = _summary().assign(
        server_running_mean=[1.0, 9.0, 40.0, 1.0, 10.0, 60.0],
        prompt_tokens_p10=100.0, prompt_tokens_p50=200.0, prompt_tokens_p90=300.0,
        output_tokens_p10=50.0, output_tokens_p50=64.0, output_tokens_p90=64.0,
        req_accept_len_p10=2.0, req_accept_len_p50=2.5, req_accept_len_p90=3.0,
        accept_len_mean=2.6, achieved_concurrency=[1.0, 9.5, 95.0] * 2,
        rate=[0.5, 5.0, 50.0] * 2, achieved_rate=[0.5, 5.0, 40.0] * 2,
        e2e_sched_mean_ms=[900.0, 1000.0, 5000.0] * 2, ttft_sched_p99_ms=[50.0, 80.0, 900.0] * 2)
    s["req_accept_len_hist"] = [{"2.00": 3, "2.50": 5}, {"2.25": 4}, {}, {}, {}, {}]
    s = s.assign(step=[1, 2, 3] * 2, from_users=[0, 1, 10] * 2, settle_s=[0.5, 1.0, 2.0] * 2,
                 lost_tokens=[10.0, 50.0, -20.0] * 2, timeline_tok_s=["8 9 10 10"] * 6)
    s["accept_step_steps"] = [{"0": 40, "1": 30}, {"0": 25}, {}, {}, {}, {}]
    s["accept_step_accepted"] = [{"0": 60, "1": 33}, {"0": 20}, {}, {}, {}, {}]
    on, off = ArmSource("on", "spec_on"), ArmSource("off", "spec_off")
    rates = pd.DataFrame({"rate": [0.5, 5.0, 50.0], "speedup": [1.4, 1.1, 0.8],
                          "band_lo": [1.3, 1.0, 0.7], "band_hi": [1.5, 1.2, 0.9]})
    verify = s[s["arm"] == "off"].assign(arm="verify", output_tok_s=[15.0, 140.0, 1485.0])
    with_verify = pd.concat([s, verify], ignore_index=True)
    three = pd.concat([s, verify.assign(arm="k7")], ignore_index=True)
    speedups = pd.DataFrame([[1.4, 1.1, 0.9], [1.6, 1.3, 1.05]], index=[2.0, 3.0],
                            columns=[1, 10, 100])
    categories = pd.DataFrame({"category": ["chat"] * 3 + ["code"] * 3,
                               "concurrency": [1, 10, 100] * 2,
                               "speedup": [1.2, 1.0, 0.8, 1.6, 1.3, 1.1],
                               "accept_len": [2.0] * 3 + [3.0] * 3, "token_share": 0.5})
    return {"summary": s, "pairs": [_pair()],
            "rate_pairs": [RatePair(on, off, rates, Crossover(CROSSES, 8.0, 5.0, 50.0))],
            "envelopes": envelopes(with_verify, [on, off, ArmSource("verify", "verify")], {}),
            "arms_verdicts": [analyse_arms(
                three, three.assign(rep=1), [on, off, ArmSource("k7", "spec_on")])],
            "acceptance_maps": [AcceptanceMap("off", speedups, [BreakEven(10, 2.6)],
                                              speedups, {})],
            "positions": [PositionPair("on", "off", pd.DataFrame({
                "concurrency": [1, 1, 10, 10], "bucket": ["0-512", "512-2k"] * 2,
                "tpot_on_ms": [10.0, 12.0, 20.0, 30.0], "tpot_off_ms": [15.0, 14.0, 22.0, 25.0],
                "speedup": [1.5, 1.17, 1.1, 0.83], "tokens_on": 1000.0}))],
            "context_maps": [ContextMap([ContextRow("512", 512.0, _pair()),
                                         ContextRow("8192", 8192.0, _pair())],
                                        speedups.set_axis(["512", "8192"]))],
            "context_buckets": [CategoryPair("on", "off", categories,
                                             {"chat": Crossover(CROSSES, 20.0, 10, 100),
                                              "code": Crossover(ALWAYS, None, None, None)},
                                             {"chat": 0.5, "code": 0.5}, {},
                                             "context bucket")],
            "categories": [CategoryPair("on", "off", categories,
                                        {"chat": Crossover(CROSSES, 20.0, 10, 100),
                                         "code": Crossover(ALWAYS, None, None, None)},
                                        {"chat": 0.5, "code": 0.5}, {})]}


@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_every_figure_is_valid_plotly_with_titled_axes(name: str) -> None:
    """plotly.py's own validation of each figure's plotly.js data (report/plotjs.py)."""
    registered = figures.FIGURES[name]
    sources = _every_source()
    assert registered.shown(sources)
    fig = registered.draw(sources[registered.source])
    checked = go.Figure(orjson.loads(fig.to_json()))  # raises on any unknown property
    assert checked.layout.title.text and checked.layout.xaxis.title.text
    assert checked.data and checked.layout.yaxis.title.text
