"""Speedup and C* per prompt category from the per-repeat `by_category` figures, and a
verdict that says when categories disagree."""

from __future__ import annotations

import pandas as pd
import pytest

from specload.report import categories
from specload.report.crossover import (
    ALWAYS,
    CROSSES,
    INCONCLUSIVE,
    NEVER,
    UNKNOWN,
    Crossover,
    analyse_pair,
)
from specload.report.run_files import ArmSource

LADDER = [1, 4, 16, 64]
# tokens per request-second in flight: spec-off alike for both, code's spec-on ahead
OFF = {1: 50.0, 4: 45.0, 16: 30.0, 64: 12.0}
ON = {"code": {1: 100.0, 4: 85.0, 16: 45.0, 64: 10.0},
      "chat": {1: 60.0, 4: 40.0, 16: 20.0, 64: 6.0}}


def _figures(tok_s: float, requests: float) -> dict[str, float]:
    return {"tokens": tok_s * 10, "in_flight_s": 10.0, "tok_s_per_request": tok_s,
            "pace_rel_se": 0.01,
            "requests": requests, "tpot_p50_ms": 1000 / tok_s, "req_accept_len": 2.5}


def _per_rep() -> pd.DataFrame:
    rows = []
    for c in LADDER:
        rows.append({"arm": "on", "rep": 1, "concurrency": c, "output_tok_s": 1.0,
                     "by_category": {k: _figures(v[c], 3 if k == "code" else 1)
                                     for k, v in ON.items()}})
        rows.append({"arm": "off", "rep": 1, "concurrency": c, "output_tok_s": 1.0,
                     "by_category": {k: _figures(OFF[c], 2) for k in ON}})
    return pd.DataFrame(rows)


def _pair(per_rep: pd.DataFrame):
    on, off = ArmSource("on", "spec_on"), ArmSource("off", "spec_off")
    summary = per_rep.drop(columns=["rep", "by_category"])
    return analyse_pair(on, off, summary, per_rep)


def test_each_category_has_its_speedup_and_c_star() -> None:
    per_rep = _per_rep()
    (found,) = categories.analyse([_pair(per_rep)], per_rep)
    code = found.rows[found.rows["category"] == "code"].set_index("concurrency")
    assert code["speedup"].tolist() == pytest.approx([2.0, 85 / 45, 1.5, 10 / 12])
    assert code["token_share"].tolist() == pytest.approx(
        [ON["code"][c] / (ON["code"][c] + ON["chat"][c]) for c in LADDER])
    assert found.crossovers["code"].verdict == "crosses"
    assert 16 < found.crossovers["code"].c_star < 64
    assert 1 < found.crossovers["chat"].c_star < 16
    assert found.mix == pytest.approx({"code": 0.75, "chat": 0.25})
    assert found.disagree()
    lines = found.lines()
    assert lines[0].startswith("on vs off by prompt category: code pays up to C = ")
    assert lines[1].startswith("  categories disagree: code pays up to C = ")
    assert "chat only up to C = " in lines[1] and "(code 75%, chat 25%)" in lines[1]
    assert found.as_dict()["c_star"]["code"]["verdict"] == "crosses"


def test_a_category_that_never_pays_is_said_so() -> None:
    per_rep = _per_rep()
    for figures in per_rep["by_category"]:
        if "chat" in figures and figures["chat"]["tok_s_per_request"] in ON["chat"].values():
            figures["chat"]["tok_s_per_request"] /= 10
    (found,) = categories.analyse([_pair(per_rep)], per_rep)
    assert found.crossovers["chat"].verdict == "never" and found.disagree()
    assert ", chat never pays; the recommendation holds" in found.lines()[1]


def test_categories_apart_by_chance_do_not_disagree() -> None:
    """Categories whose speedups differ, but within their noise (a pace spread of 30% of
    each window's tokens), have their own C* and no disagreement."""
    per_rep = _per_rep()
    for figures in per_rep["by_category"]:
        for one in figures.values():
            one["pace_rel_se"] = 0.3
    (found,) = categories.analyse([_pair(per_rep)], per_rep)
    assert not found.disagree() and len(found.lines()) == 1


def test_one_category_or_none_gives_no_study() -> None:
    per_rep = _per_rep()
    per_rep["by_category"] = [{} for _ in range(len(per_rep))]
    assert categories.analyse([_pair(per_rep)], per_rep) == []


def test_categories_of_one_verdict_without_a_c_star_are_named_together() -> None:
    """A mix of many categories reads in one line: each crossing category with its C*,
    the rest grouped by verdict (the quickstart's nine once said "has no clear crossover
    (within its noise)" seven times)."""
    found = {"rag": Crossover(CROSSES, c_star=25.8), "chat": Crossover(INCONCLUSIVE),
             "code": Crossover(NEVER), "json": Crossover(UNKNOWN),
             "math": Crossover(ALWAYS), "sql": Crossover(ALWAYS),
             "reasoning": Crossover(CROSSES, c_star=20.2)}
    pair = categories.CategoryPair("on", "off", pd.DataFrame(), found,
                                   dict.fromkeys(found, 1 / len(found)), {})
    assert pair.lines() == [
        "on vs off by prompt category: pays at every C measured: math, sql; "
        "rag pays up to C = 25.8; reasoning pays up to C = 20.2; "
        "no clear crossover (within the noise): chat, json; never pays: code"]
