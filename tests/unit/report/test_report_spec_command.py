"""Speculative settings read from an arm's start command, for vLLM, SGLang and llama.cpp."""

from __future__ import annotations

from specload.engines.spec_command import SpecSettings, parse_command

VLLM = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000 --speculative-config "
        "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", "
        "\"num_speculative_tokens\": 3, \"draft_tensor_parallel_size\": 1}'")


def test_vllm_json_config_is_kept_whole() -> None:
    got = parse_command(VLLM)
    assert (got.method, got.model, got.k) == ("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 3)
    assert got.config["draft_tensor_parallel_size"] == 1 and got.problems == ()


def test_vllm_equals_form_and_old_flags() -> None:
    got = parse_command("vllm serve m --speculative-config="
                        "'{\"method\":\"ngram\",\"num_speculative_tokens\":4}'")
    assert (got.method, got.k) == ("ngram", 4)
    old = parse_command("vllm serve m --speculative-model d --num-speculative-tokens 5")
    assert (old.method, old.model, old.k) == (None, "d", 5)


def test_sglang_flags_map_to_vllm_method_names() -> None:
    got = parse_command("python3 -m sglang.launch_server --model-path m "
                        "--speculative-algorithm EAGLE3 --speculative-draft-model-path d "
                        "--speculative-num-steps 3 --speculative-eagle-topk 1")
    assert (got.method, got.model, got.k) == ("eagle3", "d", 3)
    assert parse_command("x --speculative-algorithm NEXTN").method == "mtp"


def test_llamacpp_draft_flags() -> None:
    got = parse_command("llama-server -m t.gguf -md d.gguf --spec-draft-n-max 8")
    assert (got.model, got.k) == ("d.gguf", 8)


def test_problems_are_reported_not_guessed() -> None:
    bad_json = parse_command("vllm serve m --speculative-config '{method: eagle3}'")
    assert bad_json.config == {} and "not JSON" in bad_json.problems[0]
    unbalanced = parse_command("vllm serve m --speculative-config "
                               "'{\"method\": \"eagle\"}' --served-model-name \"x")
    assert unbalanced.method == "eagle" and "does not split" in unbalanced.problems[0]
    assert parse_command(None) == SpecSettings() == parse_command("vllm serve m")


def test_with_k_fills_only_a_missing_k() -> None:
    assert parse_command("vllm serve m").with_k(3).k == 3
    assert parse_command(VLLM).with_k(5).k == 3


DRAFT = ("VLLM_TARGET_DEVICE=cpu exec \"$VLLM_PYTHON\" -m vllm.entrypoints.openai.api_server "
         "--model \"$VLLM_MODEL\" --speculative-config '{\"method\": \"draft_model\", "
         "\"model\": \"'\"$VLLM_MODEL\"'/draft\", \"num_speculative_tokens\": 4}'")


def test_shell_variables_in_the_settings_are_filled_as_the_shell_did() -> None:
    got = parse_command(DRAFT, {"VLLM_MODEL": "/cache/m"})
    assert (got.model, got.config["model"], got.problems) == ("/cache/m/draft",) * 2 + ((),)
    braces = parse_command("x -md ${D}/d.gguf --spec-draft-n-max $K", {"D": "/m", "K": "6"})
    assert (braces.model, braces.k) == ("/m/d.gguf", 6)


def test_a_variable_the_environment_lacks_is_kept_and_reported() -> None:
    got = parse_command(DRAFT)  # --model "$VLLM_MODEL" is no speculative setting: not named
    assert got.model == "$VLLM_MODEL/draft"
    assert got.problems == ("$VLLM_MODEL is not set here: the settings keep it as written",)
