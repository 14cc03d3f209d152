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
    assert list(summary.columns[: len(aggregate.SUMMARY_COLUMNS)]) == list(
        aggregate.SUMMARY_COLUMNS)
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
