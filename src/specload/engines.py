"""Which inference engine serves an arm, and whether it can switch speculation by load.

An arm names its engine with the scenario key `engine:`; otherwise the engine is
guessed from the arm's start command (`vllm serve`, `sglang.launch_server`,
`trtllm-serve`, `llama-server`, `ollama`, `text-generation-launcher`), and a `sim:`
arm is the engine its `flavor` imitates (vLLM when it has none). vLLM, SGLang and
TensorRT-LLM change the number of draft tokens with the batch size; llama.cpp, Ollama
and TGI have no such control (see `LOAD_AWARE`). Shared by the scenario (which
validates the key) and the report (which picks the settings to recommend); pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

Engine = Literal["vllm", "sglang", "trtllm", "llamacpp", "ollama", "tgi", "other"]
ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp", "ollama", "tgi", "other")
# Engines with a batch-size-dependent draft length: vLLM
# `num_speculative_tokens_per_batch_size` (PR #32374), SGLang
# `--speculative-adaptive-config` batch-size slots (PR #24055), TensorRT-LLM
# `draft_len_schedule` / `max_concurrency` (PRs #8194, #10860). None found for TGI
# (`--speculate` only), llama.cpp (`--spec-draft-n-max`, per-request overrides under
# `#if 0` in tools/server/server-schema.cpp) or Ollama (issue #5800, PR #15980).
LOAD_AWARE: tuple[str, ...] = ("vllm", "sglang", "trtllm")
# Engines that stream one event per token even when a speculative step accepts several,
# so tokens per chunk stays at 1 whatever the acceptance: llama.cpp
# (tools/server/server-context.cpp sends a partial result per sampled token, seen on
# llama-server 11434), TGI (router/src/lib.rs, one StreamResponse per token) and Ollama
# (server/routes.go, one response per token); `sim/flavors.py` cites the versions.
PER_TOKEN_EVENTS: tuple[str, ...] = ("llamacpp", "tgi", "ollama")
NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM",
         "llamacpp": "llama.cpp", "ollama": "Ollama", "tgi": "TGI", "other": "this engine"}

# First match wins: a Docker command running SGLang also mentions other words.
_COMMAND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sglang", re.compile(r"\bsglang[._]launch_server\b|\bsglang\s+serve\b")),
    ("trtllm", re.compile(r"\btrtllm-serve\b")),
    ("tgi", re.compile(r"\btext-generation-launcher\b|text-generation-inference")),
    ("llamacpp", re.compile(r"\bllama-server\b|\bllama_cpp\.server\b")),
    ("ollama", re.compile(r"\bollama\b")),
    ("vllm", re.compile(r"\bvllm\s+serve\b|\bvllm\.entrypoints\b|vllm/vllm-openai")),
)


def engine_from_command(command: str | None) -> str | None:
    """The engine a start command launches, or None when nothing gives it away."""
    if not command:
        return None
    for engine, pattern in _COMMAND_PATTERNS:
        if pattern.search(command):
            return engine
    return None


def resolve_engine(arm: Mapping[str, Any] | None,
                   recorded: str | None = None) -> tuple[str | None, str]:
    """(engine, how it is known) for one arm of a scenario given as plain data.

    `recorded` is the manifest's own `engine` field when the runner wrote one. The
    second item says where the answer came from: "scenario", "command", "sim flavor",
    "sim default" or "unknown" (engine None).
    """
    if recorded:
        return recorded, "scenario"
    arm = arm or {}
    if arm.get("engine"):
        return str(arm["engine"]), "scenario"
    command = arm.get("command")
    start = command.get("start") if isinstance(command, Mapping) else None
    guessed = engine_from_command(start if isinstance(start, str) else None)
    if guessed:
        return guessed, "command"
    sim = arm.get("sim")
    if isinstance(sim, Mapping):
        flavor = sim.get("flavor")
        if isinstance(flavor, str) and flavor:
            return (flavor if flavor in ENGINES else "other"), "sim flavor"
        return "vllm", "sim default"
    return None, "unknown"
