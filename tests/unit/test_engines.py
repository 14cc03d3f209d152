"""Which engine serves an arm: the scenario's `engine:`, its start command, or its sim flavour."""

from __future__ import annotations

import pytest

from specload.engines import LOAD_AWARE, engine_from_command, resolve_engine


@pytest.mark.parametrize(("command", "engine"), [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000", "vllm"),
    ("python -m vllm.entrypoints.openai.api_server --model m", "vllm"),
    ("docker run --gpus all lmsysorg/sglang:latest python3 -m sglang.launch_server "
     "--model-path m", "sglang"),
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --config spec.yaml", "trtllm"),
    ("./llama-server -m model.gguf -md draft.gguf --port 8080", "llamacpp"),
    ("python -m llama_cpp.server --model m.gguf", "llamacpp"),
    ("ollama serve", "ollama"),
    ("text-generation-launcher --model-id m --speculate 3", "tgi"),
    ("./my-server --port 9000", None), ("", None), (None, None),
])
def test_engine_from_command(command: str | None, engine: str | None) -> None:
    assert engine_from_command(command) == engine


def test_resolution_order() -> None:
    vllm_cmd = {"command": {"start": "vllm serve m"}}
    assert resolve_engine(vllm_cmd, recorded="sglang") == ("sglang", "scenario")
    assert resolve_engine({**vllm_cmd, "engine": "trtllm"}) == ("trtllm", "scenario")
    assert resolve_engine(vllm_cmd) == ("vllm", "command")
    assert resolve_engine({"sim": {"spec": "on"}}) == ("vllm", "sim default")
    assert resolve_engine({"sim": {"spec": "on", "flavor": "llamacpp"}}) == (
        "llamacpp", "sim flavor")
    assert resolve_engine({"sim": {"flavor": "weird"}}) == ("other", "sim flavor")
    assert resolve_engine({"url": "http://h:1"}) == (None, "unknown")
    assert resolve_engine(None) == (None, "unknown")


def test_only_vllm_sglang_and_trtllm_switch_speculation_by_load() -> None:
    assert set(LOAD_AWARE) == {"vllm", "sglang", "trtllm"}
