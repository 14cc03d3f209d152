"""The multi-k study: best k per rung with ties to the smaller k, bands -> tiers, and the
simulator's own best k per band (virtual time) recovered from its curves."""

from __future__ import annotations

import pandas as pd
import pytest

from specload.engines.schedule import Tier
from specload.report import multik
from specload.report.run_files import ArmSource
from specload.sim.curve import predict
from specload.sim.profile import load_profile
from tests.support.best_k import simulated_best_k


def test_the_best_mean_wins_beyond_the_band() -> None:
    assert multik.pick_k({0: [100.0], 1: [130.0], 3: [150.0], 5: [140.0]}) == 3


def test_a_tie_within_two_percent_goes_to_the_smaller_k() -> None:
    assert multik.pick_k({0: [100.0], 2: [148.0], 3: [150.0]}) == 2
    assert multik.pick_k({0: [100.0], 2: [146.0], 3: [150.0]}) == 3
    # spec-off (k = 0) is the smallest: a tie with it turns speculation off
    assert multik.pick_k({0: [100.0], 1: [101.5]}) == 0


def test_with_repeats_the_spread_of_the_ratios_decides() -> None:
    # k = 2 is 3% behind on average but ahead in one repeat: a tie, the smaller k
    assert multik.pick_k({2: [150.0, 141.0], 3: [149.0, 150.0]}) == 2
    # 1% behind in every repeat: beyond the repeats' spread, so not a tie
    assert multik.pick_k({2: [148.5, 148.5], 3: [150.0, 150.0]}) == 3


def _table(rows: list[tuple[float, dict[int, float], dict[int, float], int]]) -> pd.DataFrame:
    out = []
    for c, tok, batch, best in rows:
        row: dict[str, float] = {"concurrency": c, "best_k": best}
        row |= {f"tok_s_k{k}": v for k, v in tok.items()}
        row |= {f"batch_k{k}": v for k, v in batch.items()}
        out.append(row)
    return pd.DataFrame(out)


def test_bands_end_where_the_curves_cross_in_batch_size() -> None:
    table = _table([
        (4, {0: 100, 3: 200, 5: 220}, {0: 4, 3: 4, 5: 4}, 5),
        (16, {0: 300, 3: 440, 5: 400}, {0: 16, 3: 16, 5: 16}, 3),
        (64, {0: 900, 3: 800, 5: 700}, {0: 64, 3: 60, 5: 58}, 0),
    ])
    tiers, axis = multik.tiers_from_picks(table)
    assert axis == "batch size"
    # k3/k5 goes from 200/220 to 440/400: 1 at t = 0.476 of log 4..log 16, where k5's
    # gauge (log-log, as for C*) reads 4 x 4^0.476 = 7.7; k0/k3 from 300/440 to
    # 900/800: t = 0.718, k3's gauge 16 x (60/16)^0.718 = 41.3
    assert tiers == (Tier(7, 5), Tier(41, 3), Tier(None, 0))


def test_without_a_gauge_the_bands_stay_in_concurrency() -> None:
    nan = float("nan")
    table = _table([(1, {0: 10, 2: 20}, {0: nan, 2: nan}, 2),
                    (100, {0: 1000, 2: 800}, {0: nan, 2: nan}, 0)])
    tiers, axis = multik.tiers_from_picks(table)
    assert axis == "concurrency" and tiers[-1] == Tier(None, 0) and tiers[0].k == 2


def test_one_k_everywhere_is_one_tier() -> None:
    table = _table([(1, {0: 10, 2: 20}, {0: 1, 2: 1}, 2), (8, {0: 70, 2: 120}, {0: 8, 2: 8}, 2)])
    assert multik.tiers_from_picks(table) == ((Tier(None, 2),), "batch size")


def test_a_study_needs_one_spec_off_arm_and_two_distinct_k() -> None:
    off = ArmSource("off", "spec_off")
    k3, k5 = ArmSource("on-k3", "spec_on", k=3), ArmSource("on-k5", "spec_on", k=5)
    assert multik.study_arms([off, k5, k3]) == (off, {3: k3, 5: k5})
    assert multik.study_arms([off, k3]) is None
    assert multik.study_arms([k3, k5]) is None
    assert multik.study_arms([off, k3, ArmSource("x", "spec_on", k=3)]) is None


# The simulator's own best k per batch size (h100-llama8b-eagle3, virtual time): the
# integration test tests/integration/runner/test_sweep_verify.py runs the same
# workload through a sweep and checks the report recovers these picks.
EAGLE3_WORKLOAD = {"prompt_tokens": 100, "output_tokens": 32}
EAGLE3_LADDER = [4, 16, 64, 256]
EAGLE3_KS = (1, 3, 5)


@pytest.mark.parametrize(("ladder", "best"), [(EAGLE3_LADDER, [5, 5, 3, 0])])
def test_the_simulators_best_k_per_band(ladder: list[int], best: list[int]) -> None:
    # long drafts pay while the target is memory-bound, a shorter one once verifying
    # k + 1 tokens per request costs compute, none once the batch is compute-bound
    assert simulated_best_k("h100-llama8b-eagle3", ladder, EAGLE3_KS, **EAGLE3_WORKLOAD) == best


def test_the_study_recovers_the_simulators_picks_from_its_curves() -> None:
    profile = load_profile("h100-llama8b-eagle3")
    arms = {0: ArmSource("spec-off", "spec_off")}
    arms |= {k: ArmSource(f"spec-on-k{k}", "spec_on", k=k, kind="sim",
                          profile="h100-llama8b-eagle3") for k in EAGLE3_KS}
    rows = []
    for k, arm in arms.items():
        mode = "on" if k else "off"
        for p in predict(profile, mode, k or None, EAGLE3_LADDER, **EAGLE3_WORKLOAD):
            rows.append({"arm": arm.name, "concurrency": p.users, "rep": 1,
                         "output_tok_s": p.output_tok_s, "server_running_mean": p.mean_batch})
    summary = pd.DataFrame(rows)
    study = multik.analyse_study(list(arms.values()), summary, summary)
    assert study is not None
    assert study.table["best_k"].tolist() == [5, 5, 3, 0]
    assert [t.k for t in study.tiers] == [5, 3, 0] and study.axis == "batch size"
    rec = study.recommendation
    vllm_config = rec.decision.settings.get("vllm")
    assert vllm_config is not None
    assert vllm_config["num_speculative_tokens"] == 5
    assert vllm_config["method"] == "eagle3"
    assert set(rec.files) >= {"vllm-speculative-config.json", "sglang-adaptive.json",
                              "trtllm.yaml", "README.md"}
