"""SGLang: its registry entry, /metrics series, adaptive-config writer and caveats.

The entry names SGLang's start commands, its scheduler and tokenizer series, where it
lists its context and counts a chat prompt, its simulated-acceptance environment, and
its load switch: batch-size slots in `--speculative-adaptive-config`, which
`SglangWriter` writes with the flags line that uses them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specload.engines.entry import (
    ACCEPTANCE,
    AdaptiveMode,
    ContextWindow,
    Engine,
    LoadSwitch,
    Refusal,
    RequestSpeculation,
    Series,
    SyntheticAcceptance,
)
from specload.engines.schedule import (
    MODEL_PLACEHOLDER,
    NO_DRAFT_MODEL,
    Tier,
    Writer,
    as_json,
    max_k,
    starts,
)
from specload.engines.spec_command import SpecSettings

SGLANG_ADAPTIVE_CONFIG = "sglang-adaptive.json"
SGLANG_FLAGS_FILE = "sglang-flags.txt"
_SGLANG_RUNNING = "sglang:num_running_reqs"
_SGLANG_ALGORITHMS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN",
                      "ngram": "NGRAM", "draft_model": "STANDALONE"}


def sglang_adaptive_config(tiers: Sequence[Tier]) -> dict[str, Any]:
    """SGLang's `--speculative-adaptive-config` file for a schedule.

    Format (sgl-project/sglang python/sglang/srt/speculative/adaptive_spec_params.py,
    `_load_adaptive_config`; PR #24055): digit keys are batch-size lower bounds, each
    an object with a non-empty `candidate_steps` list of ints >= 0, at least one digit
    key; "strategy" is "ema" or "throughput_aware". The router picks the largest key
    <= the batch size after CUDA-graph padding (`AdaptiveStepRouter`,
    adaptive_step_router.py). A single candidate per slot never moves, and 0 disables
    drafting there (zero-step slots need the PR #24055 code).
    """
    out: dict[str, Any] = {"strategy": "ema"}
    for first, tier in zip(starts(tiers), tiers, strict=True):
        out[str(first)] = {"candidate_steps": [tier.k]}
    return out


def sglang_capture_sizes(tiers: Sequence[Tier], largest: int = 256) -> list[int]:
    """A decode CUDA-graph capture list holding every tier boundary.

    SGLang pads a batch up to the next captured size before it picks the slot, so
    without the boundary's last batch size captured the cut moves down (e.g. 15 pads
    to 16 with a list of 1-8 and even sizes to 32; adaptive_step_router.py).
    """
    base = set(range(1, 9)) | set(range(10, 33, 2)) | set(range(48, largest + 1, 16))
    for tier in tiers[:-1]:
        if tier.last is not None:
            base |= {tier.last, tier.last + 1}
    return sorted(base)


def sglang_flags(tiers: Sequence[Tier], spec: SpecSettings,
                 config_path: str = SGLANG_ADAPTIVE_CONFIG) -> str:
    """The `sglang.launch_server` speculative flags that use the adaptive config.

    From `_init_adaptive_speculative_params` (python/sglang/srt/arg_groups/
    speculative_hook.py): `--speculative-num-steps` must be in the union of the slots'
    candidate_steps, `--speculative-num-draft-tokens` becomes num_steps + 1, topk
    defaults to 1; adaptive mode needs EAGLE/EAGLE3 with topk 1 (docs: adaptive
    speculative decoding). `--cuda-graph-bs-decode` is the current name of the decode
    capture list (python/sglang/srt/arg_groups/fields/exec_.py, `ExecGraph`); older
    releases call it `--cuda-graph-bs`.
    """
    method = spec.method or ""
    algorithm = _SGLANG_ALGORITHMS.get(method, "EAGLE3")
    steps = max_k(tiers)
    draft_tokens = steps + 1 if isinstance(steps, int) else f"{steps}+1"
    words = ["--speculative-algorithm", algorithm]
    if method not in NO_DRAFT_MODEL:
        words += ["--speculative-draft-model-path", spec.model or MODEL_PLACEHOLDER]
    words += ["--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1",
              "--speculative-num-draft-tokens", str(draft_tokens), "--speculative-adaptive",
              "--speculative-adaptive-config", config_path]
    if len(tiers) > 1:
        words += ["--cuda-graph-bs-decode", *map(str, sglang_capture_sizes(tiers))]
    return " ".join(json.dumps(w) if " " in w else w for w in words)


class SglangWriter(Writer):
    """SGLang: the `--speculative-adaptive-config` file and the flags that use it."""

    names = (SGLANG_ADAPTIVE_CONFIG, SGLANG_FLAGS_FILE)
    summary_key = "sglang_adaptive_config"

    def setting(self, tiers: Sequence[Tier], spec: SpecSettings) -> dict[str, Any]:
        return sglang_adaptive_config(tiers)

    def _flags(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        return sglang_flags(tiers, spec, f"{folder}/{SGLANG_ADAPTIVE_CONFIG}")

    def files(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> dict[str, str]:
        return {SGLANG_ADAPTIVE_CONFIG: as_json(self.setting(tiers, spec)),
                SGLANG_FLAGS_FILE: self._flags(tiers, spec, folder) + "\n"}

    def apply(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        return f"(with {folder}/{SGLANG_ADAPTIVE_CONFIG}): {self._flags(tiers, spec, folder)}"

    def uses(self, folder: str) -> dict[str, str]:
        return {SGLANG_ADAPTIVE_CONFIG: f"`--speculative-adaptive-config {folder}/"
                                        f"{SGLANG_ADAPTIVE_CONFIG}`",
                SGLANG_FLAGS_FILE: "the `sglang.launch_server` speculative flags"}


# SGLang srt/observability/metrics_collector.py: scheduler gauges per rank, token counters
# on the tokenizer side
SERIES = (
    Series("sglang:generation_tokens_total", "generated"),
    Series("sglang:prompt_tokens_total", "prompt"),
    Series(_SGLANG_RUNNING, "running"),
    Series("sglang:num_queue_reqs", "waiting"),
    Series("sglang:token_usage", "kv_usage", "mean"),
    Series("sglang:num_requests_total", "finished"),
    Series("sglang:gen_throughput", "gen_throughput"),
    # cached / all prompt tokens of the latest prefill batch (scheduler log_prefill_stats)
    Series("sglang:cache_hit_rate", "cache_hit_rate", "mean", _SGLANG_RUNNING),
    Series("sglang:spec_accept_length", "accept_length", "mean", _SGLANG_RUNNING),
    # verification steps of finished requests, with their tokens (observability/
    # metrics_collector.py `observe_one_finished_request`, `spec_verify_ct`)
    Series("sglang:spec_verify_calls_total", "verify_steps"),
    Series("sglang:spec_accept_rate", "accept_rate", "mean", _SGLANG_RUNNING),
)
_STATIC = ("SGLang leaves adaptive mode off and keeps static settings, saying so only in "
           "a warning line ('speculative_adaptive disabled: ... Falling back to static "
           "speculative params', arg_groups/speculative_hook.py), ")


def _config_problems(start: str) -> list[str]:
    """A `--speculative-adaptive-config` file whose strategy cannot take its tiers: the
    throughput-aware controller refuses a 0-step tier ("candidate_steps must be a
    non-empty list of positive ints", speculative/throughput_aware_controller.py
    `_parse_bs_candidates`). A file that cannot be read here is not checked."""
    match = re.search(r"--speculative-adaptive-config[=\s]+(\S+)", start)
    if match is None:
        return []
    try:
        config = json.loads(Path(match.group(1).strip("'\"")).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(config, dict) or config.get("strategy") != "throughput_aware":
        return []
    zero = [key for key, slot in config.items() if isinstance(slot, dict)
            and 0 in (slot.get("candidate_steps") or [])]
    return [f"strategy throughput_aware refuses a 0-step tier (tiers {', '.join(zero)}): "
            "\"candidate_steps must be a non-empty list of positive ints\" "
            "(throughput_aware_controller.py); keep strategy ema"] if zero else []


# `--speculative-adaptive`: per batch-size tier (default {"1": [1, 3, 5, 7], "8": [0, 1, 3],
# "32": [0, 1], "64": [0]}, adaptive_spec_params.py DEFAULT_ADAPTIVE_CONFIG) an EMA of the
# acceptance picks the steps among the tier's candidates (strategy ema; throughput_aware
# picks by measured step costs). One candidate per tier is a fixed schedule: the load
# switch's `spec: schedule`.
ADAPTIVE = AdaptiveMode(
    re.compile(r"--speculative-adaptive(?![-\w])"),
    "--speculative-adaptive (its default tiers, or --speculative-adaptive-config with "
    "several candidate steps per tier) (arg_groups/fields/spec.py)",
    refusals=(
        Refusal(re.compile(r"--enable-dp-attention\b"), _STATIC + "with attention data "
                "parallelism: 'adaptive tier decisions are not synchronized across DP "
                "ranks' (speculative/adaptive_spec_params.py adaptive_unsupported_reason)"),
        Refusal(re.compile(r"--speculative-eagle-topk[=\s]+0*(?:[02-9]|\d{2,})"),
                _STATIC + "with --speculative-eagle-topk other than 1 ('only topk=1 is "
                "supported', adaptive_unsupported_reason)"),
        Refusal(re.compile(r"--enable-two-batch-overlap\b"), _STATIC + "with two-batch "
                "overlap (adaptive_unsupported_reason)"),
    ),
    methods=("eagle", "eagle3"),
    caveats=("the tiers key on the batch padded to the next captured CUDA-graph size.",),
    check=_config_problems)

ENGINE = Engine(
    "sglang", "SGLang",
    re.compile(r"\bsglang[._]launch_server\b|\bsglang\s+serve\b"),
    sim_flavors=("sglang",), series=SERIES,
    # PR #33518: with the request field `return_spec_tokens_details: true` a stream
    # carries `sglext.spec_tokens_details` once, in a chunk of its own (`choices: []`)
    # after the finish chunk and before the usage chunk (srt/entrypoints/openai/
    # serving_chat.py `_generate_chat_stream`; built by utils.py
    # `spec_tokens_details_from_meta_info`); left out when the server does not speculate
    speculation=RequestSpeculation(
        ("sglext", "spec_tokens_details"), "spec_num_proposed_drafts",
        "spec_num_correct_drafts", steps="spec_verify_ct",
        needs="the request field return_spec_tokens_details: true (request.extra_body)"),
    # SGLang 0.5.23: `max_model_len` of a /v1/models entry is the model's context_len
    # (srt/entrypoints/http_server.py); POST /v1/tokenize with messages renders them
    # as a chat completion does and answers `count` (openai/protocol.py
    # TokenizeRequest, TokenizeResponse). Input + max_new_tokens above context_len is
    # a 400 (srt/managers/tokenizer_manager.py `_validate_one_request`), and an EAGLE
    # server adds its draft slots to the input first (managers/utils.py
    # compute_num_reserved_tokens), which /v1/models does not show: near the limit
    # a prompt the check passed may still be refused by a spec-on EAGLE server.
    context=ContextWindow(("max_model_len",), "/v1/tokenize", "count"),
    histograms=("sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
                "sglang:e2e_request_latency_seconds"),
    # `--speculative-adaptive-config` batch-size slots (PR #24055)
    switch=LoadSwitch(SglangWriter(), "{sglang_adaptive_config}", caveats=(
        "needs batch-size slots in --speculative-adaptive-config (PR #24055), 0-step "
        "slots too. Adaptive mode takes only --speculative-algorithm EAGLE or EAGLE3 "
        "with --speculative-eagle-topk 1 and is off with attention data parallelism; "
        "otherwise SGLang warns and keeps static settings (adaptive_spec_params.py, "
        "adaptive_unsupported_reason).",
        "the batch is padded up to the next captured CUDA-graph size before the slot "
        "is picked: keep both batch sizes around each bound in --cuda-graph-bs-decode "
        "(the flags line does; older releases call it --cuda-graph-bs), else the cut "
        "moves down.",
    ), methods=("eagle", "eagle3")),
    # python/sglang/srt/environ.py: SGLANG_SIMULATE_ACC_LEN = EnvFloat(-1),
    # SGLANG_SIMULATE_ACC_METHOD = EnvStr("multinomial")
    synthetic=SyntheticAcceptance(
        f"SGLANG_SIMULATE_ACC_LEN={ACCEPTANCE} SGLANG_SIMULATE_ACC_METHOD=match-expected",
        caveats=("environment variables before the launch command",
                 "without SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token the accepted "
                 "tokens are one fixed token id, which some tokenizers decode to "
                 "nothing until the end (reported by InferenceX's recipes)")),
    adaptive=ADAPTIVE,
)
