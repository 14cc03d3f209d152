"""`bench_loadgen.py --rounds`: each ratio of CPU per chunk is the median of the rounds'
own ratios (each round's clients run back to back), shown with its range."""

from __future__ import annotations

import sys

import pytest

from tests.support import script_module

bench = script_module("bench_loadgen")


def test_each_ratio_is_the_median_of_the_rounds_own() -> None:
    rounds = [{"specload": 25.0, "aiohttp": 50.0, "aiohttp-any": 50.0, "baseline": 25.0},
              {"specload": 30.0, "aiohttp": 50.0, "aiohttp-any": 60.0, "baseline": 20.0},
              {"specload": 22.0, "aiohttp": 40.0, "aiohttp-any": 44.0, "baseline": 22.0}]
    assert bench._ratio_line(250, rounds) == (
        "  250 ratio median of 3 rounds: specload/aiohttp = 0.55 (0.50-0.60) (goal: 0.50), "
        "specload/aiohttp-any = 0.50 (0.50-0.50), specload/baseline = 1.00 (1.00-1.50)")


def test_one_round_gives_its_ratios_alone() -> None:
    rounds = [{"specload": 20.0, "aiohttp": 40.0, "aiohttp-any": 50.0, "floor": 16.0}]
    assert bench._ratio_line(150, rounds) == (
        "  150 ratio specload/aiohttp = 0.50 (goal: 0.50), specload/aiohttp-any = 0.40, "
        "floor/aiohttp = 0.40")


def test_no_rounds_is_refused_in_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", [bench.__file__, "--rounds", "0"])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "error: --rounds must be at least 1")
