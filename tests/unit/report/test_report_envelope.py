"""Envelope efficiency: the verification arm's tok/s over the best compared arm's."""

from __future__ import annotations

import pandas as pd
import pytest

from specload.report import envelope as env
from specload.report.run_files import ArmSource

ARMS = [ArmSource("on", "spec_on"), ArmSource("off", "spec_off"), ArmSource("verify", "verify")]


def _summary(on: list[float], off: list[float], verify: list[float],
             cs: tuple[int, ...] = (1, 10, 40)) -> pd.DataFrame:
    rows = [{"arm": arm, "concurrency": c, "output_tok_s": v}
            for arm, values in (("on", on), ("off", off), ("verify", verify))
            for c, v in zip(cs, values, strict=True)]
    return pd.DataFrame(rows)


def test_efficiency_is_against_the_better_arm_at_each_rung() -> None:
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[79, 216, 285])
    (found,) = env.envelopes(summary, ARMS, {"verify": [[1, 15, 3], [16, 65536, 0]]})
    t = found.table
    assert t["envelope_arm"].tolist() == ["on", "on", "off"]
    assert t["efficiency"].tolist() == pytest.approx([79 / 80, 216 / 220, 285 / 300])
    assert found.lowest == (pytest.approx(0.95), 40.0)
    assert found.as_dict()["schedule"] == [[1, 15, 3], [16, 65536, 0]]


def test_the_line_names_the_rungs_below_the_goal() -> None:
    summary = _summary(on=[80, 250, 240], off=[50, 240, 300], verify=[80, 230, 297])
    (found,) = env.envelopes(summary, ARMS, {})
    line = found.line()
    assert "0.920 (C=10)" in line and "below 0.95 at C = 10 (envelope: on)" in line
    assert "C = 40" not in line.split("below")[1]


def test_a_shortfall_shows_both_servers_batch_sizes() -> None:
    # spec-on ahead at C = 20 with its batch capped at 16; the verify server ran 20
    summary = _summary(on=[80, 258], off=[50, 242], verify=[80, 225], cs=(1, 20))
    summary["server_running_mean"] = [1, 16, 1, 20, 1, 19.8]
    (found,) = env.envelopes(summary, ARMS, {})
    assert "20 (envelope: on at batch 16.0, this arm at batch 19.8)" in found.line()


def test_the_summary_gets_a_column_for_the_verify_rows_only() -> None:
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[80, 220, 300])
    out = env.with_efficiency(summary, env.envelopes(summary, ARMS, {}))
    assert out.loc[out["arm"] == "verify", "envelope_efficiency"].tolist() == [1.0, 1.0, 1.0]
    assert out.loc[out["arm"] != "verify", "envelope_efficiency"].isna().all()


def test_a_multi_k_envelope_takes_every_k_at_rungs_measured_by_both() -> None:
    arms = [*ARMS, ArmSource("on-k5", "spec_on", k=5)]
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[90, 200, 0])
    summary = summary[~((summary["arm"] == "verify") & (summary["concurrency"] == 40))]
    k5 = pd.DataFrame([{"arm": "on-k5", "concurrency": 1, "output_tok_s": 95.0}])
    (found,) = env.envelopes(pd.concat([summary, k5]), arms, {})
    assert found.table["concurrency"].tolist() == [1, 10]
    assert found.table["envelope_arm"].tolist() == ["on-k5", "on"]


def test_no_verify_arm_no_envelope() -> None:
    summary = _summary(on=[1, 2, 3], off=[1, 2, 3], verify=[1, 2, 3])
    assert env.envelopes(summary, ARMS[:2], {}) == []
