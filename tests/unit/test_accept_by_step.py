"""A request's verification steps binned by their number, and bins added over requests."""

from __future__ import annotations

from specload.runfiles import accept_by_step
from specload.runfiles.accept_by_step import STEP_BINS, decode, encode, label


def test_steps_are_binned_in_powers_of_two_and_the_cell_round_trips() -> None:
    # steps 1 | 2-3 | 4-7 | 8: accepted 3 | 0+2 | 1+1+3+0 | 2
    cell = encode([3, 0, 2, 1, 1, 3, 0, 2])
    assert cell == "1:3 2:2 4:5 1:2"
    assert decode(cell) == [(1, 3), (2, 2), (4, 5), (1, 2)]
    assert encode([]) == "" and decode("") == []
    assert [label(b) for b in (0, 1, 2, 3, STEP_BINS - 1)] == ["1", "2-3", "4-7", "8-15",
                                                              f"{1 << (STEP_BINS - 1)}+"]


def test_the_last_bin_is_open_and_totals_are_kept() -> None:
    per_step = [1] * 2000
    bins = decode(encode(per_step))
    assert len(bins) == STEP_BINS
    assert sum(s for s, _ in bins) == 2000 and sum(a for _, a in bins) == 2000
    assert bins[-1][0] == 2000 - (1 << (STEP_BINS - 1)) + 1


def test_bins_add_over_requests_and_a_bad_cell_adds_nothing() -> None:
    steps, accepted = accept_by_step.add(["1:3 2:2", "1:0", "x:1", ""])
    assert steps[:3] == [2, 2, 0] and accepted[:3] == [3, 2, 0]
