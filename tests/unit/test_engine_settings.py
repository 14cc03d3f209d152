"""Every engine format passes that engine's own rules and drafts the intended k per batch size.

The rules are re-implemented in `tests.support.engine_rules`, each citing its source.
Schedules cover a plain threshold, the band edges (a bound at batch size 1 and 2), a
tiered schedule with a k = 0 tier, and a single static tier.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
import yaml

from specload.engines import schedule as es
from specload.engines import sglang, trtllm, vllm
from specload.engines.spec_command import SpecSettings
from tests.support import engine_rules as rules

EAGLE3 = SpecSettings("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 3,
                      {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                       "num_speculative_tokens": 3})
MAX_BS = 300
SCHEDULES = {
    "threshold": es.threshold_schedule(15, 3),
    "bound at 1": es.threshold_schedule(1, 3),
    "bound at 2": es.threshold_schedule(2, 5),
    "tiered with k=0": (es.Tier(4, 3), es.Tier(15, 2), es.Tier(None, 0)),
    "tiered, k above the tail": (es.Tier(4, 3), es.Tier(None, 1)),
}


def intended(tiers: Sequence[es.Tier], batch_size: int) -> int:
    for tier in tiers:
        if tier.last is None or batch_size <= tier.last:
            assert isinstance(tier.k, int)
            return tier.k
    raise AssertionError


@pytest.mark.parametrize("tiers", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_vllm_config_passes_vllm_and_drafts_the_intended_k(tiers: tuple[es.Tier, ...]) -> None:
    config = vllm.vllm_speculative_config(tiers, EAGLE3)
    rules.vllm_validate_config(config)
    assert (config["method"], config["model"]) == ("eagle3", EAGLE3.model)
    lookup = rules.vllm_lookup(config["num_speculative_tokens_per_batch_size"], MAX_BS,
                               config["num_speculative_tokens"])
    assert lookup[1:] == [intended(tiers, bs) for bs in range(1, MAX_BS + 1)]


@pytest.mark.parametrize("tiers", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_sglang_config_and_flags_pass_sglang_and_route_the_intended_k(
        tiers: tuple[es.Tier, ...]) -> None:
    config = sglang.sglang_adaptive_config(tiers)
    slots = rules.sglang_load(config)
    args = rules.sglang_check_flags(sglang.sglang_flags(tiers, EAGLE3), config)
    assert args["--speculative-draft-model-path"] == [EAGLE3.model]
    assert args["--speculative-num-draft-tokens"] == [str(int(
        args["--speculative-num-steps"][0]) + 1)]
    capture = [int(x) for x in args["--cuda-graph-bs-decode"]]
    for bs in range(1, MAX_BS + 1):
        assert rules.sglang_route(slots, bs, capture) == intended(tiers, bs), bs


def test_sglang_padding_would_move_the_cut_without_the_boundary_captured() -> None:
    slots = rules.sglang_load(sglang.sglang_adaptive_config(es.threshold_schedule(15, 3)))
    default_like = [*range(1, 9), *range(10, 33, 2)]  # 15 pads to 16
    assert rules.sglang_route(slots, 15, default_like) == 0
    assert rules.sglang_route(slots, 15, sglang.sglang_capture_sizes(
        es.threshold_schedule(15, 3))) == 3


def _trtllm(tiers: tuple[es.Tier, ...]) -> tuple[dict, str]:
    text = trtllm.trtllm_yaml(tiers, EAGLE3)
    return yaml.safe_load(text)["speculative_config"], text


def _commented(text: str, key: str) -> list[object]:
    return [yaml.safe_load(m) for m in re.findall(rf"^#\s+(?:or )?{key}: (.+?)(?:  #.*)?$",
                                                   text, re.M)]


@pytest.mark.parametrize("tiers", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_trtllm_yaml_passes_both_versions_and_drafts_the_intended_k(
        tiers: tuple[es.Tier, ...]) -> None:
    spec, text = _trtllm(tiers)
    rules.trtllm_validate(spec)
    assert (spec["decoding_type"], spec["speculative_model"]) == ("Eagle3", EAGLE3.model)
    schedule = spec["draft_len_schedule"]
    for bs in range(1, MAX_BS + 1):
        assert rules.trtllm_lookup(schedule, bs) == intended(tiers, bs), bs
    (old,) = _commented(text, "draft_len_schedule")
    rules.trtllm_validate_old(old, spec["max_draft_len"])
    assert [rules.trtllm_lookup_old(old, bs) for bs in range(1, MAX_BS + 1)] == [
        intended(tiers, bs) for bs in range(1, MAX_BS + 1)]
    assert f">= {trtllm.TRTLLM_UPPER_BOUNDS_SINCE}" in text and "PR #10860" in text


def test_trtllm_max_concurrency_comments_are_the_same_threshold() -> None:
    tiers = es.threshold_schedule(15, 3)
    spec, text = _trtllm(tiers)
    new, old = _commented(text, "max_concurrency")
    assert new == old == 15
    with pytest.raises(ValueError, match="mutually exclusive"):
        rules.trtllm_validate({**spec, "max_concurrency": new})
    only = {k: v for k, v in spec.items() if k != "draft_len_schedule"}
    rules.trtllm_validate({**only, "max_concurrency": new})
    # translated to {max_concurrency: max_draft_len} (llm_args.py model validator)
    assert rules.trtllm_lookup({new: spec["max_draft_len"]}, 15) == 3
    assert rules.trtllm_lookup({new: spec["max_draft_len"]}, 16) == 0
    assert "max_concurrency" not in _trtllm(SCHEDULES["tiered with k=0"])[1]


def test_the_old_lower_bound_form_means_batch_one_only_after_pr_10860() -> None:
    old = trtllm.trtllm_lower_bound_schedule(es.threshold_schedule(15, 3))
    assert old == {1: 3, 16: 0}
    rules.trtllm_validate({"max_draft_len": 3, "draft_len_schedule": old})  # passes ...
    assert [rules.trtllm_lookup(old, bs) for bs in (1, 2, 15)] == [3, 0, 0]  # ... wrongly


def test_a_single_tier_is_static_speculation_everywhere() -> None:
    tiers = (es.Tier(None, 3),)
    assert "num_speculative_tokens_per_batch_size" not in vllm.vllm_speculative_config(
        tiers, EAGLE3)
    spec, _ = _trtllm(tiers)
    assert "draft_len_schedule" not in spec and spec["max_draft_len"] == 3


def test_unknown_settings_are_visible_placeholders() -> None:
    tiers = es.threshold_schedule(8, es.K_PLACEHOLDER)
    config = vllm.vllm_speculative_config(tiers, SpecSettings())
    assert config["method"] == es.METHOD_PLACEHOLDER and config["model"] == es.MODEL_PLACEHOLDER
    assert config["num_speculative_tokens"] == es.K_PLACEHOLDER
    assert config["num_speculative_tokens_per_batch_size"][0] == [1, 8, es.K_PLACEHOLDER]
    assert es.MODEL_PLACEHOLDER in sglang.sglang_flags(tiers, SpecSettings())
    spec, _ = _trtllm_for(tiers, SpecSettings())
    assert spec["max_draft_len"] == es.K_PLACEHOLDER


def _trtllm_for(tiers: tuple[es.Tier, ...], spec: SpecSettings) -> tuple[dict, str]:
    text = trtllm.trtllm_yaml(tiers, spec)
    return yaml.safe_load(text)["speculative_config"], text


def test_methods_without_a_draft_model_get_none_and_other_keys_are_kept() -> None:
    mtp = SpecSettings("mtp", None, 2, {"method": "mtp", "num_speculative_tokens": 2,
                                        "num_speculative_tokens_per_batch_size": [[1, 9, 2]]})
    config = vllm.vllm_speculative_config(es.threshold_schedule(9, 2), mtp)
    assert "model" not in config and config["num_speculative_tokens_per_batch_size"] == [
        [1, 9, 2], [10, es.BATCH_SIZE_CEILING, 0]]
    rules.vllm_validate_config(config)
    ngram = SpecSettings("ngram", None, 4, {"method": "ngram", "num_speculative_tokens": 4,
                                            "prompt_lookup_max": 4})
    assert vllm.vllm_speculative_config(es.threshold_schedule(9, 4), ngram)[
        "prompt_lookup_max"] == 4
    spec, _ = _trtllm_for(es.threshold_schedule(9, 2), mtp)
    assert spec["decoding_type"] == "MTP" and "speculative_model" not in spec


def test_describe() -> None:
    assert es.describe(es.threshold_schedule(15, 3)) == (
        "3 draft tokens at batch sizes 1-15, none from 16")
    assert es.describe(es.threshold_schedule(1, 3)) == (
        "3 draft tokens at batch size 1, none from 2")


@pytest.mark.parametrize(("schedule", "message"), [
    ([[1, 16, 3], [16, 32, 2]], "non-overlapping"), ([[2, 16, 3]], "must start at 1"),
    ([[1, 16, -1]], ">= 0"), ([], "must not be empty"), ([[1, 16]], "3-item")])
def test_the_vllm_rules_themselves_reject_what_vllm_rejects(schedule: list,
                                                            message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rules.vllm_validate_schedule(schedule)


def test_the_other_rules_themselves_reject_what_the_engines_reject() -> None:
    with pytest.raises(ValueError, match="integer-string BS key"):
        rules.sglang_load({"candidate_steps": [1, 3]})  # the flat pre-#24055 schema
    with pytest.raises(ValueError, match="not in the adaptive config"):
        rules.sglang_check_flags("--speculative-algorithm EAGLE3 --speculative-num-steps 5 "
                                 "--speculative-adaptive", {"1": {"candidate_steps": [3]}})
    with pytest.raises(ValueError, match="must equal max_draft_len"):
        rules.trtllm_validate({"max_draft_len": 3, "draft_len_schedule": {4: 2, 15: 3}})
    with pytest.raises(ValueError, match="include batch_size=1"):
        rules.trtllm_validate_old({15: 3}, 3)
