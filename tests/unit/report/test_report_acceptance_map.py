"""The break-even acceptance map: the speedup over acceptance x C, where it is 1, and the
real drafter's margin."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from specload.report import acceptance_map as am
from specload.report import quality
from specload.report.crossover import analyse_pair
from specload.report.run_files import ArmSource


@pytest.mark.parametrize(("speedups", "words"), [
    ([0.8, 1.2], "2.50"), ([0.8, 0.9, 1.1], "3.50"), ([1.1, 1.2, 1.3], "below 2"),
    ([0.7, 0.8, 0.9], "above 4"), ([0.9, 1.05, 0.98, 1.2], "4.09")])
def test_break_even_is_linear_in_acceptance_between_neighbours(speedups: list[float],
                                                                words: str) -> None:
    lengths = [2.0, 3.0, 4.0, 5.0][:len(speedups)]
    assert am.break_even(lengths, speedups, 16).words() == words


def _pair_rows(arm: str, tok_s: dict[int, float]) -> list[tuple[str, int, int, float]]:
    return [(arm, 1, c, v) for c, v in tok_s.items()]


def test_the_map_of_a_run_with_three_lengths_and_a_real_drafter() -> None:
    off = {1: 100.0, 4: 300.0, 16: 600.0}
    on = {2.0: {1: 130.0, 4: 270.0, 16: 480.0}, 3.0: {1: 170.0, 4: 390.0, 16: 570.0},
          4.0: {1: 210.0, 4: 450.0, 16: 660.0}}
    real = {1: 160.0, 4: 360.0, 16: 540.0}
    rows = _pair_rows("off", off) + _pair_rows("real", real)
    for a, tok in on.items():
        rows += _pair_rows(f"on-a{a:g}", tok)
    per_rep = pd.DataFrame(rows, columns=["arm", "rep", "concurrency", "output_tok_s"])
    summary = per_rep.drop(columns="rep").assign(
        accept_len=[math.nan] * 3 + [2.7, 2.8, 2.9] + [math.nan] * 9)
    arms = [ArmSource("off", "spec_off"), ArmSource("real", "spec_on")] + [
        ArmSource(f"on-a{a:g}", "spec_on", acceptance=a) for a in on]
    pairs = [analyse_pair(a, arms[0], summary, per_rep) for a in arms[1:]]
    got = am.analyse_map(arms, pairs, summary)
    assert got is not None and list(got.speedup.index) == [2.0, 3.0, 4.0]
    assert [b.words() for b in got.break_even] == ["below 2", "2.25", "3.33"]
    assert got.speedup.loc[3.0, 16] == pytest.approx(0.95)
    margin = got.margin()
    assert margin["concurrency"].tolist() == [4, 16]
    assert margin["margin"].tolist() == pytest.approx([2.8 - 2.25, 2.9 - 10 / 3])
    lines = got.lines()
    assert lines[0].startswith("acceptance map (off against spec-on at mean acceptance "
                               "lengths 2, 3, 4): break-even acceptance length C=1 below 2, "
                               "C=4 2.25, C=16 3.33")
    assert "  at C = 16 a drafter needs an acceptance length of at least 3.33 to pay" in lines
    assert any(line.startswith("  C* by acceptance length: 2 -> ") for line in lines)
    assert any(line.startswith("  the recommendation's bound C* = ") and
               "an acceptance margin of +0.55 (+20%)" in line for line in lines), lines
    assert got.as_dict()["break_even"][0] == {"concurrency": 1.0, "length": 2.0,
                                              "bound": "below"}


def test_no_map_without_two_lengths_against_one_spec_off_arm() -> None:
    per_rep = pd.DataFrame(_pair_rows("off", {1: 100.0}) + _pair_rows("on-a2", {1: 120.0}),
                           columns=["arm", "rep", "concurrency", "output_tok_s"])
    summary = per_rep.drop(columns="rep")
    arms = [ArmSource("off", "spec_off"), ArmSource("on-a2", "spec_on", acceptance=2.0)]
    pairs = [analyse_pair(arms[1], arms[0], summary, per_rep)]
    assert am.analyse_map(arms, pairs, summary) is None


def test_the_break_even_is_read_on_the_lengths_the_servers_reported() -> None:
    """A real engine's knob may deliver less than it was set to (llama.cpp's n-gram drafts
    shorter than their maximum): where every mapped arm's server reported a length, the
    break-even is interpolated on those, and an arm more than 3% off its setting is
    warned about."""
    off = {1: 100.0, 8: 300.0}
    on = {4.0: {1: 90.0, 8: 240.0}, 5.0: {1: 110.0, 8: 330.0}}
    reported = {4.0: {1: 3.9, 8: math.nan}, 5.0: {1: 4.6, 8: 4.9}}
    rows = _pair_rows("off", off)
    accept = [math.nan] * 2
    for a, tok in on.items():
        rows += _pair_rows(f"on-a{a:g}", tok)
        accept += list(reported[a].values())
    per_rep = pd.DataFrame(rows, columns=["arm", "rep", "concurrency", "output_tok_s"])
    summary = per_rep.drop(columns="rep").assign(accept_len=accept)
    arms = [ArmSource("off", "spec_off")] + [
        ArmSource(f"on-a{a:g}", "spec_on", acceptance=a) for a in on]
    pairs = [analyse_pair(a, arms[0], summary, per_rep) for a in arms[1:]]
    got = am.analyse_map(arms, pairs, summary)
    assert got is not None
    # C=1 on the reported 3.9 and 4.6 (set: 4.5); C=8 on the set lengths (4.0 reported none)
    assert [b.words() for b in got.break_even] == ["4.25", "4.67"]
    assert got.lines()[0].endswith("(on the lengths the servers reported at C=1)")
    assert got.as_dict()["reported"] == [[3.9, None], [4.6, 4.9]]
    (warning,) = quality.acceptance_target_warnings(pairs, summary)
    assert warning["arm"] == "on-a5" and warning["kind"] == "acceptance_off_target"
    assert "4.60 at C=1 (-8.0%)" in warning["message"] and "C=8" not in warning["message"]
