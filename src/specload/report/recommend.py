"""The engine setting that keeps speculation on below C* and turns it off above.

vLLM V1 takes `speculative_config.num_speculative_tokens_per_batch_size` ranges
[[low, high, k], ...] with k = 0 meaning no speculation for that batch size; SGLang's
adaptive speculation tiers and TensorRT-LLM's `max_concurrency` / `draft_len_schedule`
express the same idea and are given in words. "Never pays off" and "always pays off"
become "turn it off" and "keep it on (up to the largest concurrency measured)".
"""

from __future__ import annotations

import json
import math

from specload.report.crossover import ALWAYS, CROSSES, NEVER, Crossover

# Upper bound of the last batch-size range: larger than any engine's max_num_seqs.
BATCH_SIZE_CEILING = 65536
K_PLACEHOLDER = "<k>"


def recommend(crossover: Crossover, k: int | None) -> dict[str, object]:
    """Recommendation for one spec-on/spec-off pair (JSON-serialisable)."""
    draft: int | str = k if k is not None else K_PLACEHOLDER
    k_note = "" if k is not None else f" (replace {K_PLACEHOLDER} with your draft length)"
    if crossover.verdict == CROSSES and crossover.c_star is not None:
        last_on = max(1, math.floor(crossover.c_star))
        schedule = [[1, last_on, draft], [last_on + 1, BATCH_SIZE_CEILING, 0]]
        cfg = {"num_speculative_tokens": draft, "num_speculative_tokens_per_batch_size": schedule}
        return {
            "verdict": CROSSES,
            "summary": f"Speculate up to {last_on} concurrent requests, turn it off above "
                       f"(C* = {crossover.c_star:.1f}){k_note}.",
            "vllm_speculative_config": cfg,
            "vllm": "vLLM V1: add to your speculative_config (keep its method and model): "
                    + json.dumps(cfg),
            "sglang": f"SGLang: with --speculative-adaptive, use a tier that drafts "
                      f"{draft} tokens for batch sizes 1-{last_on} and a tier with speculation "
                      f"off from batch size {last_on + 1}.",
            "tensorrt_llm": f"TensorRT-LLM: set max_concurrency={last_on} in the speculative "
                            f"decoding config (speculation stops above it), or a "
                            f"draft_len_schedule of {{1: {draft}, {last_on + 1}: 0}}.",
        }
    if crossover.verdict == ALWAYS:
        top = crossover.below
        return {
            "verdict": ALWAYS,
            "summary": f"Speculation pays off at every concurrency measured (up to {top}): "
                       f"keep it on; extend the ladder to find where it stops.",
            "vllm_speculative_config": {"num_speculative_tokens": draft},
            "vllm": "vLLM V1: keep speculative_config as it is (no per-batch-size limit needed "
                    f"up to {top}).",
            "sglang": "SGLang: keep speculative decoding on; no adaptive tier needed.",
            "tensorrt_llm": "TensorRT-LLM: leave max_concurrency unset (or above "
                            f"{top}).",
        }
    if crossover.verdict == NEVER:
        return {
            "verdict": NEVER,
            "summary": f"Speculation never pays off (behind already at C = {crossover.above}): "
                       "turn it off.",
            "vllm_speculative_config": None,
            "vllm": "vLLM V1: remove speculative_config.",
            "sglang": "SGLang: drop --speculative-algorithm (no speculative decoding).",
            "tensorrt_llm": "TensorRT-LLM: disable speculative decoding (no "
                            "speculative_config).",
        }
    return {"verdict": crossover.verdict,
            "summary": "No concurrency was measured by both arms: no recommendation.",
            "vllm_speculative_config": None, "vllm": "", "sglang": "", "tensorrt_llm": ""}
