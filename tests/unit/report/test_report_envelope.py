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


def test_the_k0_tax_is_the_scheduled_arm_against_spec_off_above_its_bound() -> None:
    # k = 0 from batch 16: only C = 40 is above it (no gauge: C stands for the batch)
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[79, 216, 276])
    (found,) = env.envelopes(summary, ARMS, {"verify": [[1, 15, 3], [16, 65536, 0]]})
    tax = found.tax
    assert tax is not None and (tax.off, tax.from_batch) == ("off", 16)
    assert tax.table["concurrency"].tolist() == [40]
    assert tax.table["ratio"].tolist() == pytest.approx([0.92])
    assert tax.beyond_noise["concurrency"].tolist() == [40]  # 0.92 + 2% < 1
    assert "k = 0 costs up to 8% beyond the noise" in tax.line("verify")
    assert "routed by load" in tax.line("verify")
    assert found.as_dict()["k0_tax"]["beyond_noise_at"] == [40.0]


def test_repeats_give_the_tax_its_band_and_the_gauge_picks_the_rungs() -> None:
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[79, 186, 291])
    # the scheduled server ran a batch of 16.5 at C = 10 (requests queue behind a prefill)
    summary["server_running_mean"] = [1.0, 9.6, 39.0, 1.0, 9.9, 39.5, 1.0, 16.5, 39.4]
    per_rep = pd.concat([summary.assign(rep=1), summary.assign(rep=2)], ignore_index=True)
    per_rep["output_tok_s"] = per_rep["output_tok_s"].astype(float)
    per_rep.loc[(per_rep["arm"] == "verify") & (per_rep["rep"] == 2), "output_tok_s"] *= 1.04
    (found,) = env.envelopes(summary, ARMS, {"verify": [[1, 15, 3], [16, 65536, 0]]},
                             per_rep)
    tax = found.tax
    assert tax is not None and tax.table["concurrency"].tolist() == [10, 40]
    # the repeats' ratios 0.979 and 1.018 at C = 10, 0.97 and 1.009 at C = 40: within noise
    assert tax.table["band_hi"].tolist() == pytest.approx([186 / 190 * 1.04, 291 / 300 * 1.04])
    assert tax.beyond_noise.empty
    assert tax.line("verify").endswith("no cost beyond the noise")


def test_a_schedule_without_an_off_tier_has_no_tax() -> None:
    summary = _summary(on=[80, 220, 240], off=[50, 190, 300], verify=[79, 216, 276])
    (found,) = env.envelopes(summary, ARMS, {"verify": [[1, 15, 3], [16, 65536, 1]]})
    assert found.tax is None
