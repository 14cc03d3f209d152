"""The rung columns' declaration: every view's columns declared, units and headings, and
`combine_reps` combining repeats by each column's rule."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from specload.report import aggregate, rung_columns
from specload.report.run_files import ArmSource
from specload.report.rung_columns import (
    BY_NAME,
    COLUMNS,
    VIEWS,
    Combine,
    View,
    combined_by,
    headings,
    names,
    spread_names,
    views_of,
)
from specload.traffic.kinds import KINDS


def test_every_view_shows_declared_columns_once() -> None:
    assert len(BY_NAME) == len(COLUMNS)
    assert set(VIEWS) == set(View)
    for view, shown in VIEWS.items():
        assert [n for n in shown if n not in BY_NAME] == [], view
        assert len(set(shown)) == len(shown), view


def test_every_column_has_a_unit_and_a_heading_of_its_own() -> None:
    assert all(c.unit and c.heading for c in COLUMNS)
    assert len({c.heading for c in COLUMNS}) == len(COLUMNS)
    for view in View:
        assert len(set(headings(view).values())) == len(names(view)), view
    assert all(c.heading.endswith(" ms") for c in COLUMNS if c.unit == "ms")


def test_a_view_may_name_a_column_its_own_way() -> None:
    assert headings(View.USERS)["concurrency"] == "C"
    assert headings(View.SESSIONS)["concurrency"] == "sessions"
    assert headings(View.OPEN)["achieved_concurrency"] == "in flight"
    assert headings(View.LIVE)["achieved_concurrency"] == "achieved C"


def test_each_workload_kind_has_its_table() -> None:
    assert {View(k.view) for k in KINDS.values()} == {View.USERS, View.SESSIONS, View.OPEN,
                                                      View.STEPS, View.TRACE}
    assert View.STEPS in views_of("settle_s") and View.USERS not in views_of("settle_s")
    assert View.OPEN in views_of("rate") and View.USERS not in views_of("rate")
    assert View.TRACE in views_of("speed") and View.OPEN not in views_of("speed")
    # a live rung in GET /specload/live carries at least the tab's table
    assert names(View.LIVE_RUNG)[: len(names(View.LIVE))] == names(View.LIVE)


def test_summed_columns_are_counts() -> None:
    summed = combined_by(Combine.SUM)
    assert {"requests", "failures", "timeouts"} <= set(summed)
    assert {BY_NAME[n].unit for n in summed} <= {"requests", "connections", "workers"}
    assert combined_by(Combine.KEY) == ("arm", "concurrency", "rate", "speed", "step")
    assert combined_by(Combine.MEAN_SPREAD) == ("output_tok_s",)


def _rep(rep: int, tok_s: float, failures: int, kinds: dict[str, int], top: str
         ) -> dict[str, object]:
    row: dict[str, object] = {n: rep for n in combined_by(Combine.SUM)}
    return row | {"arm": "a", "rep": rep, "rung": 0, "concurrency": 2, "rate": float("nan"),
                  "window_start": 100.0 * rep, "output_tok_s": tok_s, "ttft_p50_ms": 10.0 * rep,
                  "failures": failures, "failures_by_kind": kinds, "top_failure": top,
                  "window_source": "rungs", "lost_detail": "", "clock_detail": ""}


def test_repeats_combine_by_each_columns_rule() -> None:
    per_rep = pd.DataFrame([_rep(1, 10.0, 1, {"http_500": 1}, ""),
                            _rep(2, 20.0, 2, {"http_500": 1, "timeout": 1}, "HTTP 500")])
    row = aggregate.combine_reps(per_rep, [ArmSource("a", "spec_on")]).iloc[0]
    for name in combined_by(Combine.SUM):
        assert row[name] == per_rep[name].sum(), name
    assert row["ttft_p50_ms"] == pytest.approx(15.0)  # undeclared numbers: the mean
    assert row["output_tok_s"] == pytest.approx(15.0)
    low, high, std = spread_names("output_tok_s")
    assert (row[low], row[high], row["reps"]) == (10.0, 20.0, 2)
    assert row[std] == pytest.approx(per_rep["output_tok_s"].std())
    assert row["failures_by_kind"] == {"http_500": 2, "timeout": 1}  # merged
    assert row["top_failure"] == "HTTP 500"  # the first non-empty
    assert not set(combined_by(Combine.REP_ONLY)) & set(row.index)
    leading = [n for n in names(View.SUMMARY) if n in per_rep]
    assert list(row.index[: len(leading)]) == leading


def test_the_declaration_imports_nothing_heavy() -> None:
    code = (f"import sys, {rung_columns.__name__}; "
            "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
