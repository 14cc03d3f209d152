"""`spec: adaptive` is an engine's own controller: an engine that has one (the registry's
`AdaptiveMode`), turned on by the start line, in a set-up the engine runs it in; never a
schedule of specload's (`spec: schedule`), on real arms and simulated ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specload.config.scenario import parse_scenario
from specload.errors import UserError

VLLM = ("vllm serve m --speculative-config '{\"method\": \"eagle3\", \"model\": \"d\", "
        "\"num_speculative_tokens\": 7, \"enable_adaptive_verification\": true}'")
SGLANG = ("python -m sglang.launch_server --model m --speculative-algorithm EAGLE3 "
          "--speculative-adaptive")


def _arm(start: str, **keys: Any) -> dict[str, Any]:
    return {"name": "ad", "spec": "adaptive",
            "command": {"start": start, "base_url": "http://127.0.0.1:9000"}, **keys}


def _problem(arm: dict[str, Any], tmp_path: Path = Path(".")) -> str:
    off = {"name": "off", "url": "http://127.0.0.1:9001", "spec": "off"}
    with pytest.raises(UserError) as info:
        parse_scenario({"name": "s", "arms": [arm, off]}, tmp_path)
    return str(info.value)


def test_an_engines_own_mode_with_its_switch_on_is_an_arm() -> None:
    for start in (VLLM, SGLANG):
        sc = parse_scenario({"name": "s", "arms": [_arm(start)]}, Path("."))
        assert sc.arms[0].spec_mode == "adaptive" and sc.arms[0].arm_role == "other"


@pytest.mark.parametrize(("start", "words"), [
    (VLLM + " --enforce-eager", "vLLM refuses it with enforce_eager/cudagraph_mode=none"),
    (VLLM + " --enable-lora", "not currently compatible with LoRA"),
    (VLLM + " --pipeline-parallel-size 2", "with pipeline parallelism"),
    ("VLLM_USE_V2_MODEL_RUNNER=0 " + VLLM, "Model Runner V1 does not support"),
    (VLLM.replace("eagle3", "ngram"), "it runs with eagle, eagle3, mtp, dflash, dspark, "
                                      "draft_model, not ngram"),
    (VLLM.replace(', \\"enable_adaptive_verification\\": true', "").replace(
        ', "enable_adaptive_verification": true', ""),
     'does not turn it on: "enable_adaptive_verification": true in --speculative-config'),
    (SGLANG + " --enable-dp-attention", "with attention data parallelism"),
    (SGLANG + " --speculative-eagle-topk 4", "other than 1"),
    ("python -m sglang.launch_server --model m --speculative-algorithm EAGLE3",
     "does not turn it on: --speculative-adaptive"),
    ("trtllm-serve m --extra_llm_api_options spec.yaml",
     "TensorRT-LLM has no adaptive mode of its own (engines with one: vllm, sglang)"),
])
def test_a_set_up_the_engine_refuses_is_refused_with_its_reason(start: str, words: str) -> None:
    assert words in _problem(_arm(start))


def test_vllm_pipeline_parallelism_of_one_is_fine() -> None:
    parse_scenario({"name": "s", "arms": [_arm(VLLM + " -pp 1")]}, Path("."))


def test_sglang_throughput_aware_takes_no_off_tier(tmp_path: Path) -> None:
    config = tmp_path / "adaptive.json"
    config.write_text(json.dumps({"strategy": "throughput_aware",
                                  "1": {"candidate_steps": [1, 3]},
                                  "32": {"candidate_steps": [0, 1]}}))
    start = f"{SGLANG} --speculative-adaptive-config {config}"
    assert "strategy throughput_aware refuses a 0-step tier (tiers 32)" in _problem(
        _arm(start))
    config.write_text(json.dumps({"strategy": "ema", "1": {"candidate_steps": [1, 3]},
                                  "32": {"candidate_steps": [0, 1]}}))
    parse_scenario({"name": "s", "arms": [_arm(start)]}, tmp_path)


def test_a_simulated_arm_runs_its_flavours_controller_where_the_engine_has_one() -> None:
    for flavor in ("vllm", "sglang"):
        arm = {"name": "ad", "sim": {"spec": "adaptive", "flavor": flavor}}
        sc = parse_scenario({"name": "s", "arms": [arm]}, Path("."))
        assert (sc.arms[0].sim.spec, sc.arms[0].arm_role) == ("adaptive", "other")
    problem = _problem({"name": "ad", "sim": {"spec": "adaptive", "flavor": "llamacpp"}})
    assert "llamacpp flavor's engine has no adaptive speculation of its own" in problem
    assert "spec: schedule runs k by batch size" in problem
    # a manifest written before `schedule` had its word: adaptive with its schedule
    old = {"name": "verify", "role": "verify", "sim": {
        "spec": "adaptive", "adaptive_schedule": [[1, 8, 3], [9, 65536, 0]]}}
    sc = parse_scenario({"name": "s", "arms": [old]}, Path("."))
    assert sc.arms[0].sim.spec == "schedule"
    hand = {"name": "verify", "role": "verify", "spec": "adaptive",
            "url": "http://127.0.0.1:9000"}
    assert parse_scenario({"name": "s", "arms": [hand]}, Path(".")).arms[0].spec == "schedule"
