"""More than two arms side by side: each arm's share of the best per rung, the winner or
the tie, the best arm per load band and each arm's cost as the one setting."""

from __future__ import annotations

import pandas as pd
import pytest

from specload.report.arms_verdict import analyse_arms, compared_arms, with_shares
from specload.report.run_files import ArmSource

# tok/s per arm and rung, two repeats each (rep 1, rep 2)
TOK_S = {
    "off": {1: (40, 40), 16: (300, 300), 128: (900, 910)},
    "k3": {1: (80, 81), 16: (420, 424), 128: (700, 690)},
    "k7": {1: (95, 96), 16: (380, 384), 128: (500, 505)},
    "adaptive": {1: (94, 96), 16: (410, 416), 128: (905, 900)},
}


def _arms(names: list[str], verify: bool = False) -> list[ArmSource]:
    roles = {"off": "spec_off", "verify": "verify"}
    arms = [ArmSource(n, roles.get(n, "spec_on" if n.startswith("k") else "other"))
            for n in names]
    return arms + ([ArmSource("verify", "verify")] if verify else [])


def _frames(tok_s: dict[str, dict[int, tuple[int, int]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    per_rep = pd.DataFrame([{"arm": a, "rep": r + 1, "concurrency": c, "output_tok_s": v[r]}
                            for a, rungs in tok_s.items() for c, v in rungs.items()
                            for r in range(2)])
    summary = per_rep.groupby(["arm", "concurrency"], as_index=False)["output_tok_s"].mean()
    return summary, per_rep


def test_each_rung_has_its_winner_or_its_tie_and_the_bands_follow() -> None:
    summary, per_rep = _frames(TOK_S)
    verdict = analyse_arms(summary, per_rep, _arms(list(TOK_S)))
    assert verdict is not None
    # C=1: k7 (95.5) and adaptive (95) tie: adaptive's per-repeat ratios to k7 reach 1;
    # C=16: k3 alone (adaptive's ratios 0.977-0.981 stay below 1);
    # C=128: off (905) and adaptive (902.5) tie
    assert verdict.winners().to_dict() == {1: "tie (k7, adaptive)", 16: "k3",
                                           128: "tie (off, adaptive)"}
    assert [b.words() for b in verdict.bands] == [
        "tie (k7, adaptive) at C=1", "k3 at C=16", "tie (off, adaptive) at C=128"]
    shares = verdict.table.set_index(["arm", "concurrency"])["share"]
    assert shares["k3", 128] == pytest.approx(695 / 905)
    # the simplest choice loses least: adaptive, behind beyond the noise only at C=16
    best = verdict.costs[0]
    assert (best.arm, best.behind) == ("adaptive", (16.0,))
    assert best.lowest == pytest.approx(413 / 422)
    lines = verdict.lines()
    assert lines[0].startswith("4 arms side by side")
    assert "  C=16: off 0.71, k3 1.00, k7 0.91, adaptive 0.98 -> k3" in lines
    assert "one setting for every load: adaptive, which loses up to 2% (at C=16)" in lines
    # the report's page has the rungs in a table: its list keeps the bands and costs
    short = verdict.lines(rungs=False)
    assert short[0] == "4 arms side by side" and len(short) == len(lines) - 3
    assert list(verdict.shares().columns) == ["concurrency", *TOK_S, "winner"]


def test_without_repeats_a_ratio_within_two_percent_is_a_tie() -> None:
    one = {a: {c: (v[0], v[0]) for c, v in rungs.items()} for a, rungs in TOK_S.items()}
    summary, per_rep = _frames(one)
    per_rep = per_rep[per_rep["rep"] == 1]
    verdict = analyse_arms(summary, per_rep, _arms(list(TOK_S)))
    assert verdict is not None
    # C=16: adaptive 410 vs k3 420 is 0.976: 2.4% behind, beyond the ±2% band
    assert verdict.winners()[16] == "k3"
    one["adaptive"][16] = (414, 414)  # 0.986: within it
    summary, per_rep = _frames(one)
    verdict = analyse_arms(summary, per_rep[per_rep["rep"] == 1], _arms(list(TOK_S)))
    assert verdict is not None and verdict.winners()[16] == "tie (k3, adaptive)"


def test_a_pair_and_its_verification_arm_stay_a_pair() -> None:
    assert compared_arms(_arms(["k3", "off"], verify=True)) == []
    assert compared_arms(_arms(["k3", "k7", "off"], verify=True)) == ["k3", "k7", "off",
                                                                       "verify"]
    mapped = [*_arms(["off"]), ArmSource("on-a2", "spec_on", acceptance=2.0),
              ArmSource("on-a3", "spec_on", acceptance=3.0), ArmSource("on-a4", "spec_on",
                                                                      acceptance=4.0)]
    assert compared_arms(mapped) == []  # an acceptance map is not a choice between arms


def test_the_summary_gets_each_compared_arms_share() -> None:
    summary, per_rep = _frames(TOK_S)
    verdict = analyse_arms(summary, per_rep, _arms(list(TOK_S)))
    out = with_shares(summary, verdict)
    row = out[(out["arm"] == "k3") & (out["concurrency"] == 16)]
    assert float(row["envelope_share"].iloc[0]) == pytest.approx(1.0)
    assert out["envelope_share"].notna().all()
