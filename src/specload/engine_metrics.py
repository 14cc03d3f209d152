"""The engines' /metrics series specload reads: one table for the sampler and the report.

Each entry says what a series means (generated tokens, running requests, acceptance
length, ...), how its label sets combine into one number per sample, and, for a ratio
gauge, which series of the same labels weighs it. Counters and queue sizes add up
across label sets (data-parallel ranks, `is_streaming`, ...); ratio gauges are averaged,
weighted by the running requests of the same rank where the engine exposes them (two
SGLang ranks at acceptance length 2.8 and 2.6 read 2.7, not 5.4). Of a per-position
counter only the first position is kept (`only`): over the drafts, it is the acceptance
rate of the one position every draft has, whatever lengths the drafter made. Names are
as prometheus_client's parser yields them (counters with `_total`). Sources, read from
each engine's code (`sim/flavors.py` cites versions): vLLM
`vllm/v1/metrics/loggers.py` and `v1/spec_decode/metrics.py`; SGLang
`srt/observability/metrics_collector.py`; TGI `router/src` (tokens only as per-request
histograms, counted when requests finish); llama.cpp `tools/server/server-task.cpp`
(`--metrics`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Meaning = Literal["generated", "prompt", "running", "waiting", "kv_usage", "finished",
                  "preemptions", "drafts", "draft_tokens", "accepted", "accepted_first",
                  "accept_length",
                  "accept_rate", "cache_hit_rate", "prefix_queries", "prefix_hits",
                  "gen_throughput", "latency"]


@dataclass(frozen=True, slots=True)
class Series:
    """One series as exposed, what it means, and how its label sets combine."""

    name: str
    meaning: Meaning
    combine: Literal["sum", "mean"] = "sum"
    weight: str | None = None  # for "mean": a series of the same labels weighing it
    only: tuple[tuple[str, str], ...] = ()  # keep only the label sets holding these

    @property
    def key(self) -> str:
        """The name its samples are kept under: the series name, with `only` as labels."""
        if not self.only:
            return self.name
        return self.name + "{" + ",".join(f'{k}="{v}"' for k, v in self.only) + "}"


_SGLANG_RUNNING = "sglang:num_running_reqs"
SERIES: tuple[Series, ...] = (
    # vLLM V1
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
    Series("vllm:gpu_prefix_cache_queries_total", "prefix_queries"),  # before vLLM 0.9
    Series("vllm:gpu_prefix_cache_hits_total", "prefix_hits"),
    # SGLang (scheduler gauges per rank; token counters on the tokenizer side)
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
    Series("sglang:spec_accept_rate", "accept_rate", "mean", _SGLANG_RUNNING),
    # TGI
    Series("tgi_batch_current_size", "running"),
    Series("tgi_queue_size", "waiting"),
    Series("tgi_request_success_total", "finished"),
    Series("tgi_request_generated_tokens_sum", "generated"),
    # llama.cpp server (with --metrics)
    Series("llamacpp:tokens_predicted_total", "generated"),
    Series("llamacpp:prompt_tokens_total", "prompt"),
    Series("llamacpp:requests_processing", "running"),
    Series("llamacpp:requests_deferred", "waiting"),
    Series("llamacpp:spec_decode_num_drafts_total", "drafts"),
    Series("llamacpp:spec_decode_num_draft_tokens_total", "draft_tokens"),
    Series("llamacpp:spec_decode_num_accepted_tokens_total", "accepted"),
    Series("llamacpp:spec_decode_num_accepted_tokens_per_pos_total", "accepted_first",
           only=(("position", "0"),)),
)
BY_NAME: dict[str, Series] = {s.name: s for s in SERIES}
# Latency histograms whose `_sum` and `_count` are kept (window means).
HISTOGRAMS = (
    "vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds",
    "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds", "vllm:iteration_tokens_total",
    "sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
    "sglang:e2e_request_latency_seconds", "tgi_request_duration",
)


def names(meaning: Meaning) -> tuple[str, ...]:
    """The kept names (`Series.key`) with this meaning, in the table's order (vLLM
    first)."""
    return tuple(s.key for s in SERIES if s.meaning == meaning)


def names_of(meaning: Meaning, engine: str | None) -> tuple[str, ...]:
    """The series with this meaning that `engine` exposes (each engine's names start
    with its own), or every engine's when it is unknown or exposes none."""
    every = names(meaning)
    return tuple(n for n in every if engine and n.startswith(engine)) or every
