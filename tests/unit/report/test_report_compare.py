"""`specload compare` on hand-made sweeps with known answers.

Each sweep has rung 0 at C=1 and rung 1 at C=4 (as in test_report_render.py). Baseline:
spec-on 30 tok/s at C=1 and 60 at C=4, spec-off 20 and 80, so the speedup falls from 1.5
to 0.75 and crosses 1. "After" (an engine upgrade): spec-on reaches 80 tok/s at C=4, a
third more, and its speedup there is 1.0; nothing else moves.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from specload.cli import main as cli_main
from specload.report import compare
from specload.report.crossover import BAND_DEFAULT, BAND_REPEATS
from specload.report.render import build
from tests.support import run_files as make

STEPS = [(0, 1, 95.0, 100.05, 130.05), (1, 4, 135.0, 140.05, 170.05)]


def _arm(prefix: Path, periods: tuple[float, float], tokens_per_chunk: int) -> None:
    reqs = make.steady_requests(95.0, 132.0, 1, periods[0], 10, tokens_per_chunk)
    reqs += make.steady_requests(135.0, 172.0, 4, periods[1], 10, tokens_per_chunk)
    make.write_prefix(prefix, reqs, rungs=STEPS)


def sweep(folder: Path, on_c4_periods: list[float], names: tuple[str, str] = ("on", "off"),
          ) -> Path:
    """One sweep; one repeat per period given for spec-on at C=4."""
    reps = len(on_c4_periods)
    for rep, period in enumerate(on_c4_periods, start=1):
        where = "" if reps == 1 else f"rep-{rep}"
        _arm(folder / names[0] / where / "locust", (1.0, period), 3)
        _arm(folder / names[1] / where / "locust", (0.5, 0.5), 1)
    make.write_manifest(folder, [make.arm_entry(names[0], "spec_on", reps=reps),
                                 make.arm_entry(names[1], "spec_off", reps=reps, k=None)])
    return folder


def _row(diffs: pd.DataFrame, metric: str, subject: str, c: int) -> Any:
    return diffs[(diffs["metric"] == metric) & (diffs["subject"] == subject)
                 & (diffs["concurrency"] == c)].iloc[0]


def test_differences_with_the_reports_band(tmp_path: Path) -> None:
    runs = [compare.Run("before", build(sweep(tmp_path / "a", [2.0]))),
            compare.Run("after", build(sweep(tmp_path / "b", [1.5])))]
    diffs = compare.differences(runs)
    up = _row(diffs, "output_tok_s", "on", 4)
    assert (up.baseline_value, up.value) == pytest.approx((60.0, 80.0))
    assert (up.ratio, up.band_lo, up.band_hi) == pytest.approx((4 / 3, 4 / 3 - 0.02,
                                                                4 / 3 + 0.02))
    assert (up.band, up.verdict) == (BAND_DEFAULT, "up")
    same = _row(diffs, "output_tok_s", "off", 4)
    assert same.ratio == pytest.approx(1.0) and same.verdict == "within noise"
    speedup = _row(diffs, "speedup", "on / off", 4)
    # the change figure's log C axis is labelled at the rungs (1, 4), not in decades
    assert list(compare.change_figure(diffs).layout.xaxis.tickvals) == [1.0, 4.0]
    assert (speedup.baseline_value, speedup.value) == pytest.approx((0.75, 1.0))
    assert speedup.verdict == "up"
    assert _row(diffs, "speedup", "on / off", 1).verdict == "within noise"
    c_star = diffs[diffs["metric"] == "c_star"].iloc[0]
    assert c_star.baseline_value == pytest.approx(4 ** (0.5 / 0.75))  # 1.5 -> 0.75 in log C
    assert c_star.note.startswith("crosses -> ") and c_star.verdict == ""


def test_repeats_give_the_band(tmp_path: Path) -> None:
    runs = [compare.Run("before", build(sweep(tmp_path / "a", [2.0, 2.5]))),
            compare.Run("after", build(sweep(tmp_path / "b", [1.5, 1.6])))]
    row = _row(compare.differences(runs), "output_tok_s", "on", 4)
    # 60 and 48 tok/s before, 80 and 75 after: at least 75/60, at most 80/48
    assert (row.band_lo, row.band_hi) == pytest.approx((75 / 60, 80 / 48))
    assert (row.band, row.verdict) == (BAND_REPEATS, "up")


def test_arms_named_differently_are_matched_by_role(tmp_path: Path) -> None:
    runs = [compare.Run("a", build(sweep(tmp_path / "a", [2.0]))),
            compare.Run("b", build(sweep(tmp_path / "b", [2.0], ("eagle3", "plain"))))]
    diffs = compare.differences(runs)
    assert set(diffs["subject"]) == {"spec_on", "spec_off", "spec_on / spec_off"}
    assert (diffs[diffs["metric"] != "c_star"]["verdict"] == "within noise").all()


def test_cli_writes_the_page_and_the_csv_and_leaves_the_runs_alone(tmp_path: Path,
                                                                   capsys: Any) -> None:
    a, b = sweep(tmp_path / "a" / "run", [2.0]), sweep(tmp_path / "b" / "run", [1.5])
    before = sorted(p for p in tmp_path.rglob("*"))
    out = tmp_path / "cmp"
    assert cli_main(["compare", str(a), str(b), "--out", str(out)]) == 0
    assert sorted(p for p in tmp_path.rglob("*") if out not in p.parents and p != out) == before
    printed = capsys.readouterr().out
    assert f"compare: {out / 'compare.html'}" in printed
    assert "moved beyond the noise" in printed
    table = pd.read_csv(out / "compare.csv")
    assert list(table.columns) == list(compare.CSV_COLUMNS)
    # the folder names are both "run": the whole paths tell them apart
    assert set(table["run"]) == {str(b)} and set(table["baseline"]) == {str(a)}
    page = (out / "compare.html").read_text()
    assert page.count('class="plotly-graph-div"') == 3 and "<script src=" not in page
    assert "Per-rung differences" in page


def test_labels_must_name_every_run(tmp_path: Path, capsys: Any) -> None:
    a = sweep(tmp_path / "a", [2.0])
    assert cli_main(["compare", str(a), str(a), "--labels", "x"]) == 2
    assert "--labels: give 2 different names" in capsys.readouterr().err


def test_a_ratio_band_that_holds_one_is_noise() -> None:
    base = compare.Measure(100.0, 90.0, 110.0, 2)
    other = compare.Measure(105.0, 95.0, 115.0, 2)
    ratio, lo, hi, band = compare.ratio_band(base, other)
    assert ratio == pytest.approx(1.05) and lo < 1 < hi and band == BAND_REPEATS
    assert compare.verdict(lo, hi) == "within noise"
    assert compare.verdict(math.nan, 1.0) == ""
