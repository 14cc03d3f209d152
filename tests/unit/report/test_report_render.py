"""End to end on small hand-made runs: a sweep with repeats and a web-UI Locust prefix.

Sweep: rung 0 at C=1 and rung 1 at C=4, measure windows [100.05, 130.05) and
[140.05, 170.05). spec-on: 30 tok/s at C=1; at C=4, 60 tok/s (rep 1) and 48 (rep 2).
spec-off: 20 and 80 tok/s. So speedup = 1.5 then 0.75 / 0.6, C* = 4^(0.5/0.825).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from specload.cli import main as cli_main
from specload.report import aggregate, render, run_files
from specload.report.rung_columns import View, names
from tests.support import run_files as make

STEPS = [(0, 1, 95.0, 100.05, 130.05), (1, 4, 135.0, 140.05, 170.05)]


def _arm(prefix: Path, periods: tuple[float, float], chunks: int, tpc: int) -> None:
    reqs = make.steady_requests(95.0, 132.0, 1, periods[0], chunks, tpc)
    reqs += make.steady_requests(135.0, 172.0, 4, periods[1], chunks, tpc)
    make.write_prefix(prefix, reqs, rungs=STEPS)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    for rep, on_period in ((1, 2.0), (2, 2.5)):
        _arm(tmp_path / "on" / f"rep-{rep}" / "locust", (1.0, on_period), 10, 3)
        _arm(tmp_path / "off" / f"rep-{rep}" / "locust", (0.5, 0.5), 10, 1)
    make.write_manifest(tmp_path, [make.arm_entry("on", "spec_on", reps=2, k=3),
                                   make.arm_entry("off", "spec_off", reps=2, k=None)])
    return tmp_path


def test_sweep_summary_speedup_and_c_star(sweep: Path, capsys: Any) -> None:
    assert cli_main(["report", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert f"report: {sweep / 'report.html'}" in out and "C* = 2.3" in out
    summary = pd.read_csv(sweep / "summary.csv")
    leading = names(View.SUMMARY)
    assert list(summary.columns[: len(leading)]) == list(leading)
    tok = summary.set_index(["arm", "concurrency"])["output_tok_s"]
    assert tok[("on", 1)] == pytest.approx(30.0)
    assert tok[("on", 4)] == pytest.approx(54.0)
    assert tok[("off", 1)] == pytest.approx(20.0)
    assert tok[("off", 4)] == pytest.approx(80.0)
    on4 = summary[(summary["arm"] == "on") & (summary["concurrency"] == 4)].iloc[0]
    assert (on4["output_tok_s_min"], on4["output_tok_s_max"], on4["reps"]) == (48.0, 60.0, 2)
    assert summary["server_output_tok_s"].isna().all()  # no server metrics: empty cells
    assert summary["achieved_concurrency"].tolist() == pytest.approx([1, 4, 1, 4], rel=0.02)

    data = json.loads((sweep / "summary.json").read_text())
    pair = data["pairs"][0]
    assert [r["speedup"] for r in pair["speedup"]] == pytest.approx([1.5, 54 / 80])
    assert data["c_star"] == pytest.approx(4 ** (0.5 / (1.5 - 54 / 80)))
    assert pair["c_star_range"] == pytest.approx([4 ** (0.5 / 0.9), 4 ** (0.5 / 0.75)])
    # every request at one pace: the repeats' own C*s, each with its span in the bracket
    interval = pair["c_star_interval"]
    assert interval["lo"] < pair["c_star_range"][0] < pair["c_star_range"][1] < interval["hi"]
    assert (interval["level"], interval["basis"]) == (0.95, "repeats")
    assert f"(range over repeats 2.2-2.5); {interval['words']}" in out
    sched = data["recommendation"]["vllm_speculative_config"]
    assert sched["num_speculative_tokens_per_batch_size"][0] == [1, 2, 3]
    assert not math.isnan(data["summary"][0]["ttft_p50_ms"])

    page = (sweep / "report.html").read_text()
    assert page.count('class="plotly-graph-div"') == 8
    assert "<script src=" not in page and "<link " not in page  # self-contained


def test_web_ui_prefix_uses_history_segments(tmp_path: Path, capsys: Any) -> None:
    reqs = make.steady_requests(1000.1, 1062.0, 2, 1.0, 4, 2)
    history = [make.history_row(1000 + i, 2, i, 8.0) for i in range(60)]
    prefix = make.write_prefix(tmp_path / "ui", reqs, history=history)
    assert cli_main(["report", str(prefix)]) == 0
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert summary["concurrency"].tolist() == [2]
    assert summary["output_tok_s"][0] == pytest.approx(16.0)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert "no_rungs" in {w["kind"] for w in data["warnings"]}
    assert data["pairs"] == [] and data["c_star"] is None
    assert "no spec-on/spec-off pair" in capsys.readouterr().out


def test_report_without_history_or_steps_is_one_rung(tmp_path: Path) -> None:
    prefix = make.write_prefix(tmp_path / "plain",
                               make.steady_requests(0.0, 50.0, 3, 1.0, 5, 1))
    report = render.build(prefix)
    assert report.summary["concurrency"].tolist() == [3]


def test_missing_folder_is_a_one_line_error(tmp_path: Path, capsys: Any) -> None:
    assert cli_main(["report", str(tmp_path / "missing" / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specload: error:") and err.count("\n") == 1
    assert cli_main(["report", str(tmp_path)]) == 2
    assert "empty run folder" in capsys.readouterr().err


def test_parallel_measurement_matches_serial(sweep: Path, monkeypatch: Any) -> None:
    run = run_files.discover(sweep)
    serial = aggregate.measure_all(run, processes=1)
    monkeypatch.setattr(aggregate, "PARALLEL_MIN_BYTES", 0)
    parallel = aggregate.measure_all(run, processes=2)
    pd.testing.assert_frame_equal(serial, parallel)


# Three rungs, C = 1, 4, 16; spec-on (with a running-requests gauge: 1, 4, 10) at 30, 80
# and about 55 tok/s, spec-off at 20, 66.7, 160: speedup 1.5, 1.2, then about 0.35.
# TPOT p99: spec-on 31, 47, 248 ms; spec-off 50, 60, 100 ms.
STEPS3 = [*STEPS, (2, 16, 175.0, 180.05, 210.05)]
ON_PLAN = (((1, 1.0, 3), (4, 1.5, 3), (16, 8.0, 3)), (1.0, 4.0, 10.0))
OFF_PLAN = ((1, 0.5, 1), (4, 0.6, 1), (16, 1.0, 1))
VLLM_START = ("vllm serve m --port 8000 --speculative-config '{\"method\": \"eagle3\", "
              "\"model\": \"org/eagle3-head\", \"num_speculative_tokens\": 3}'")


def _three_rungs(prefix: Path, plan: tuple[tuple[int, float, int], ...],
                 batches: tuple[float, ...] | None = None) -> None:
    reqs = []
    server = []
    for i, ((users, period, tpc), (_, _, start, _, end)) in enumerate(
            zip(plan, STEPS3, strict=True)):
        reqs += make.steady_requests(start, end + 2.0, users, period, 10, tpc)
        if batches:
            server += [(float(t), "vllm:num_requests_running", batches[i])
                       for t in range(int(start), int(end) + 1)]
    make.write_prefix(prefix, reqs, rungs=STEPS3, server=server or None)


def _planned(engine_start: str, **on: Any) -> list[dict[str, Any]]:
    return [{"name": "on", "spec": "on", "k": 3, **on,
             "command": {"start": engine_start, "base_url": "http://127.0.0.1:8000"}},
            {"name": "off", "spec": "off",
             "command": {"start": "vllm serve m", "base_url": "http://127.0.0.1:8000"}}]


@pytest.fixture
def crossing_run(tmp_path: Path) -> Path:
    _three_rungs(tmp_path / "on" / "locust", ON_PLAN[0], ON_PLAN[1])
    _three_rungs(tmp_path / "off" / "locust", OFF_PLAN)
    make.write_manifest(tmp_path, [make.arm_entry("on", "spec_on"),
                                   make.arm_entry("off", "spec_off", k=None)],
                        planned=_planned(VLLM_START))
    return tmp_path


def test_recommendation_in_batch_size_with_files(crossing_run: Path, capsys: Any) -> None:
    assert cli_main(["report", str(crossing_run)]) == 0
    out = capsys.readouterr().out
    data = json.loads((crossing_run / "summary.json").read_text())
    s4, s16 = (r["speedup"] for r in data["pairs"][0]["speedup"][1:])
    t = (s4 - 1) / (s4 - s16)
    c_star, batch = 4 * 4 ** t, 4 * 2.5 ** t  # both interpolated in log C (batch: log-log)
    assert s4 == pytest.approx(1.2) and data["c_star"] == pytest.approx(c_star)
    assert f"C* = {c_star:.1f} (batch size {batch:.1f})" in out
    assert " batch " in out.splitlines()[1]  # the table's batch column next to C
    assert "speculate up to batch size 4 and turn it off from 5" in out
    assert out.count("--speculative-config") == 1 and "SGLang" not in out  # vLLM only
    folder = crossing_run / "recommended"
    config = json.loads((folder / "vllm-speculative-config.json").read_text())
    assert config == {"method": "eagle3", "model": "org/eagle3-head",
                      "num_speculative_tokens": 3,
                      "num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 65536, 0]]}
    assert json.loads((folder / "sglang-adaptive.json").read_text())["5"] == {
        "candidate_steps": [0]}
    assert "    4: 3  # batch sizes 1-4" in (folder / "trtllm.yaml").read_text()
    assert data["pairs"][0]["c_star_batch_size"] == pytest.approx(batch)
    assert data["recommendation"]["engine"] == "vllm"
    assert data["recommendation"]["bound"]["last_on"] == 4
    assert "recommended/trtllm.yaml" in data["recommended_files"]
    assert data["pairs"][0]["crossover"]["band"] == "±2%"
    page = (crossing_run / "report.html").read_text()
    assert "recommended/vllm-speculative-config.json" in page
    assert page.count('class="plotly-graph-div"') == 9  # with the batch-size figure


def test_llamacpp_arms_get_deployments_and_no_engine_files(crossing_run: Path,
                                                           capsys: Any) -> None:
    make.write_manifest(crossing_run, [make.arm_entry("on", "spec_on"),
                                       make.arm_entry("off", "spec_off", k=None)],
                        planned=_planned("llama-server -m t.gguf -md d.gguf"))
    render.write(render.build(crossing_run))  # an earlier report's files must go
    assert cli_main(["report", str(crossing_run)]) == 0
    out = capsys.readouterr().out
    assert ("llama.cpp has no setting that turns speculation off by load nor an adaptive "
            "mode of its own") in out
    assert "--speculative-config" not in out
    assert sorted(p.name for p in (crossing_run / "recommended").iterdir()) == ["README.md"]


def test_slo_results_per_arm_and_goodput_decision(crossing_run: Path, capsys: Any) -> None:
    make.write_manifest(crossing_run, [make.arm_entry("on", "spec_on"),
                                       make.arm_entry("off", "spec_off", k=None)],
                        planned=_planned(VLLM_START, engine="sglang"),
                        slo={"tpot_p99_ms": 120.0})
    assert cli_main(["report", str(crossing_run)]) == 0
    out = capsys.readouterr().out
    data = json.loads((crossing_run / "summary.json").read_text())
    arms = {a["arm"]: a for a in data["slo"]["arms"]}
    assert data["slo"]["target"] == {"ttft_p99_ms": None, "tpot_p99_ms": 120.0}
    assert (arms["on"]["highest_c"], arms["on"]["tok_s"]) == (4, pytest.approx(80.0))
    assert (arms["off"]["highest_c"], arms["off"]["tok_s"]) == (16, pytest.approx(160.0))
    rec = data["recommendation"]
    assert rec["basis"] == "SLO goodput (TPOT p99 ≤ 120 ms)" and rec["engine"] == "sglang"
    # spec-on misses the SLO at C = 16: speculation stops at the last rung meeting it
    assert data["pairs"][0]["goodput_crossover"]["c_star"] == 4.0
    assert rec["bound"]["last_on"] == 4
    assert "SLO (TPOT p99 ≤ 120 ms) met by: on up to C=4 (80.0 tok/s); off up to C=16" in out
    assert "SGLang (with recommended/sglang-adaptive.json)" in out


def test_queued_rungs_show_their_bounds_and_paces_with_a_legend() -> None:
    inf, nan = float("inf"), float("nan")
    summary = pd.DataFrame({
        "arm": ["a", "a"], "concurrency": [1, 250],
        "ttft_p50_ms": [80.0, inf], "ttft_p50_lb_ms": [nan, 95000.0],
        "ttft_p99_ms": [120.0, inf], "ttft_p99_lb_ms": [nan, nan],
        "tpot_p50_ms": [12.0, nan], "stream_tpot_p50_ms": [nan, 61.7]})
    table = render._bounds_and_paces(summary)
    assert table["ttft_p50_ms"].tolist() == [80.0, "> 95000"]
    assert table["ttft_p99_ms"].tolist() == [120.0, inf]  # a timeout: no bound known
    assert table["tpot_p50_ms"].tolist() == [12.0, "~61.7"]
    assert render.table_note(table) == render.TABLE_NOTE
    assert render.table_note(render._bounds_and_paces(summary.iloc[:1])) is None


def test_a_rung_in_whose_window_no_request_started_says_so_in_its_ttft() -> None:
    nan = float("nan")
    summary = pd.DataFrame({
        "arm": ["a", "a"], "concurrency": [1, 100], "requests_started": [30, 0],
        "ttft_p50_ms": [80.0, nan], "ttft_p50_lb_ms": [nan, nan],
        "ttft_p99_ms": [120.0, nan], "ttft_p99_lb_ms": [nan, nan],
        "tpot_p50_ms": [12.0, nan], "stream_tpot_p50_ms": [nan, 61.7]})
    table = render._bounds_and_paces(summary)
    assert table["ttft_p50_ms"].tolist() == [80.0, "none sent"]
    assert table["ttft_p99_ms"].tolist() == [120.0, "none sent"]
    assert render.table_note(table) == f"{render.TABLE_NOTE}; {render.NONE_SENT_NOTE}"
