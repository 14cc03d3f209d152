"""Each engine's own validation and lookup rules, re-implemented to check specload's output.

Every function cites the engine code it follows (stored copies read for
/work/notes/spec-config-facts.md; re-check them when the engines change). Validators
raise ValueError with the engine's message; lookups return the draft length the engine
would use at a batch size.
"""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

# vllm/config/speculative.py `SpeculativeMethod` (MTP model names are rewritten to "mtp").
VLLM_METHODS = ("ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class",
                "eagle", "eagle3", "extract_hidden_states", "mtp", "dflash", "ngram_gpu",
                "dspark")


def vllm_validate_schedule(schedule: object) -> list[tuple[int, int, int]]:
    """vllm/v1/spec_decode/dynamic/utils.py `validate_and_normalize_dynamic_sd_schedule`
    (vllm-project/vllm, stored commit a6f6bb1d), 3-item entries."""
    if schedule is None:
        raise ValueError("num_speculative_tokens_per_batch_size is required for dynamic "
                         "speculative decoding.")
    if not isinstance(schedule, list):
        raise ValueError("num_speculative_tokens_per_batch_size must be a non-empty list of "
                         "(range_start, range_end, num_speculative_tokens) entries.")
    if not schedule:
        raise ValueError("num_speculative_tokens_per_batch_size must not be empty.")
    parsed = []
    for entry in schedule:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError("Each num_speculative_tokens_per_batch_size entry must be a "
                             "3-item sequence: (range_start, range_end, num_speculative_tokens).")
        start, end, k = int(entry[0]), int(entry[1]), int(entry[2])
        if start <= 0 or end <= 0:
            raise ValueError(f"Batch-size range ({start}, {end}) must be positive.")
        if start > end:
            raise ValueError(f"Batch-size range start must be <= end for ({start}, {end}, {k})")
        if k < 0:
            raise ValueError("num_speculative_tokens_per_batch_size values must be >= 0.")
        parsed.append((start, end, k))
    parsed.sort()
    previous_end = 0
    for start, end, _ in parsed:
        if start <= previous_end:
            raise ValueError("Batch-size ranges must be non-overlapping and sorted.")
        previous_end = end
    if parsed[0][0] != 1:
        raise ValueError("The first batch-size range must start at 1 so every runtime batch "
                         "size has a defined schedule.")
    return parsed


def vllm_lookup(schedule: object, max_num_seqs: int, num_speculative_tokens: int) -> list[int]:
    """Same file, `build_dynamic_sd_schedule_lookup`: dense[bs] for bs in 1..max_num_seqs
    (index 0 unused); k clamped to num_speculative_tokens; gaps and the tail carry the
    previous k forward."""
    dense = [0] * (max_num_seqs + 1)
    next_bs, last_k = 1, None
    for start, end, k in vllm_validate_schedule(schedule):
        if start > next_bs and last_k is not None:
            for bs in range(next_bs, min(start, max_num_seqs + 1)):
                dense[bs] = min(num_speculative_tokens, last_k)
        for bs in range(max(start, next_bs), min(end, max_num_seqs) + 1):
            dense[bs] = min(num_speculative_tokens, k)
        next_bs, last_k = max(next_bs, end + 1), k
    if last_k is not None:
        for bs in range(next_bs, max_num_seqs + 1):
            dense[bs] = min(num_speculative_tokens, last_k)
    return dense


def vllm_validate_config(config: Mapping[str, Any]) -> None:
    """`SpeculativeConfig`: a known method, num_speculative_tokens > 0 (Field gt=0), and
    every scheduled k <= num_speculative_tokens (docs dynamic_speculative_decoding.md: a
    contract the engine enforces only by clamping)."""
    if config.get("method") not in VLLM_METHODS:
        raise ValueError(f"unknown method {config.get('method')!r}")
    nst = config.get("num_speculative_tokens")
    if not isinstance(nst, int) or nst <= 0:
        raise ValueError("Expected num_speculative_tokens to be greater than zero")
    schedule = config.get("num_speculative_tokens_per_batch_size")
    if schedule is not None and any(k > nst for _, _, k in vllm_validate_schedule(schedule)):
        raise ValueError("Every optimal_K must be less than or equal to num_speculative_tokens")


def sglang_load(config: Mapping[str, Any]) -> dict[int, list[int]]:
    """python/sglang/srt/speculative/adaptive_spec_params.py `_load_adaptive_config` and
    `resolve_adaptive_strategy` (sgl-project/sglang, stored commit 015c8726): digit keys
    are slots, each with a non-empty candidate_steps list of ints >= 0."""
    strategy = config.get("strategy", "ema")
    if strategy not in ("ema", "throughput_aware"):
        raise ValueError("speculative adaptive config 'strategy' must be 'ema' or "
                         f"'throughput_aware', got {strategy!r}")
    slots = {}
    for key, entry in config.items():
        if not key.isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
        if (not isinstance(steps, list) or not steps
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                           for s in steps)):
            raise ValueError(f"BS {key}: candidate_steps must be a list of non-negative ints, "
                             f"got {steps!r}")
        slots[int(key)] = steps
    if not slots:
        raise ValueError("speculative_adaptive_config must contain at least one integer-string "
                         'BS key, e.g. {"1": {"candidate_steps": [1,3,7]}}.')
    return dict(sorted(slots.items()))


def sglang_check_flags(flags: str, config: Mapping[str, Any]) -> dict[str, list[str]]:
    """python/sglang/srt/arg_groups/speculative_hook.py `_init_adaptive_speculative_params`:
    --speculative-num-steps must be in the union of the slots' candidate_steps; adaptive
    needs EAGLE/EAGLE3, topk 1 and no attention DP (adaptive_unsupported_reason)."""
    args: dict[str, list[str]] = {}
    current = None
    for word in shlex.split(flags):
        if word.startswith("--"):
            current = word
            args[current] = []
        elif current is not None:
            args[current].append(word)
    union = {s for steps in sglang_load(config).values() for s in steps}
    steps = int(args["--speculative-num-steps"][0])
    if steps not in union:
        raise ValueError(f"--speculative-num-steps={steps} is not in the adaptive config "
                         f"candidate_steps {sorted(union)}. Pass one of those values.")
    if args["--speculative-algorithm"][0] not in ("EAGLE", "EAGLE3"):
        raise ValueError("only EAGLE/EAGLE3 are supported")
    if args.get("--speculative-eagle-topk", ["1"])[0] != "1":
        raise ValueError("only topk=1 is supported")
    if "--enable-dp-attention" in args or "--speculative-adaptive" not in args:
        raise ValueError("adaptive speculative decoding is not enabled")
    return args


def sglang_route(slots: Mapping[int, list[int]], batch_size: int,
                 capture: Sequence[int]) -> int:
    """python/sglang/srt/speculative/adaptive_step_router.py `batch_size_key_for_batch`
    (stored commit a12239f6): pad to the next captured CUDA-graph size, then the largest
    key <= it (the smallest key below all keys). A single candidate never moves."""
    sizes = sorted(capture)
    i = bisect.bisect_left(sizes, batch_size)
    padded = sizes[i] if i < len(sizes) else batch_size
    keys = list(slots)
    key = keys[max(0, bisect.bisect_right(keys, padded) - 1)]
    (steps,) = slots[key]
    return steps


def trtllm_validate(spec: Mapping[str, Any]) -> None:
    """tensorrt_llm/llmapi/llm_args.py `DecodingBaseConfig` >= 1.3.0rc8 (PR #10860):
    `validate_draft_len_schedule_and_sort` and
    `validate_max_concurrency_and_draft_len_schedule_mutually_exclusive`."""
    schedule = spec.get("draft_len_schedule")
    max_draft_len = spec.get("max_draft_len")
    if spec.get("max_concurrency") is not None:
        if schedule is not None:
            raise ValueError("max_concurrency and draft_len_schedule are mutually exclusive")
        if not isinstance(spec["max_concurrency"], int) or spec["max_concurrency"] <= 0:
            raise ValueError("max_concurrency must be a positive int")
    if schedule is None:
        return
    if any(not isinstance(k, int) or k < 1 for k in schedule):
        raise ValueError("draft_len_schedule: batch size threshold must be >= 1")
    if any(not isinstance(v, int) or v < 0 for v in schedule.values()):
        raise ValueError("draft length must be >= 0")
    if max_draft_len is not None:
        smallest = min(schedule)
        if schedule[smallest] != max_draft_len:
            raise ValueError(f"draft_len_schedule[{smallest}] must equal max_draft_len because "
                             "it is the smallest batch-size key.")
        if any(v > max_draft_len for v in schedule.values()):
            raise ValueError("all draft lengths must be <= max_draft_len")


def trtllm_lookup(schedule: Mapping[int, int], batch_size: int) -> int:
    """tensorrt_llm/_torch/speculative/utils.py `get_draft_len_for_batch_size` (new
    semantics): the value of the first key >= batch size, 0 above the largest key."""
    keys = sorted(schedule)
    i = bisect.bisect_left(keys, batch_size)
    return schedule[keys[i]] if i < len(keys) else 0


def trtllm_validate_old(schedule: Mapping[int, int], max_draft_len: int) -> None:
    """Before 1.3.0rc8 (PR #8194): key 1 required, [1] == max_draft_len, values <= it."""
    if 1 not in schedule:
        raise ValueError("draft_len_schedule must include batch_size=1")
    if schedule[1] != max_draft_len:
        raise ValueError("draft_len_schedule[1] must equal max_draft_len for consistency")
    if any(v > max_draft_len or v < 0 for v in schedule.values()):
        raise ValueError("all draft lengths must be <= max_draft_len")


def trtllm_lookup_old(schedule: Mapping[int, int], batch_size: int) -> int:
    """Old `Drafter.get_draft_len_for_batch_size`: the largest key <= batch size."""
    keys = sorted(schedule)
    return schedule[keys[bisect.bisect_right(keys, batch_size) - 1]]
