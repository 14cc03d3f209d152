"""A schedule of draft lengths by batch size, written in each engine's own syntax.

A schedule is a tuple of `Tier`s covering batch sizes from 1 up: each tier's last batch
size (None: no upper bound) and its draft length k (0: no speculation). One pure
function per engine turns it into that engine's setting, keeping the method and draft
model the spec-on arm ran with (`SpecSettings`) and leaving a visible placeholder for
what the run does not tell, and one `Writer` per engine bundles them (the setting as
data, its files, the line that applies them, the README's use of each file, what a
verification arm's start line gets in the engine's placeholder) for the engine's entry
in the registry (`specload.engines`). Each function cites where its format and the
rules it must pass come from; `tests/support/engine_rules.py` re-implements those rules.

- vLLM: the whole `--speculative-config` JSON with
  `num_speculative_tokens_per_batch_size` as inclusive `[start, end, k]` ranges.
- SGLang: the `--speculative-adaptive-config` JSON (batch-size lower-bound keys, one
  `candidate_steps` value per slot, so the step never adapts away) and its flags line.
- TensorRT-LLM: a `--config` YAML whose `draft_len_schedule` keys are inclusive upper
  bounds (>= 1.3.0rc8); the older lower-bound form and `max_concurrency` as comments.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specload.report.spec_command import SpecSettings

Draft = int | str  # a draft length, or a placeholder when the run does not tell it
K_PLACEHOLDER = "<k>"
METHOD_PLACEHOLDER = "<method: eagle3, eagle, mtp, ngram, draft_model, ...>"
MODEL_PLACEHOLDER = "<draft model or EAGLE head>"
# End of the last vLLM range: larger than any max_num_seqs (the engine's dense lookup
# stops at max_num_seqs, vllm/v1/spec_decode/dynamic/utils.py).
BATCH_SIZE_CEILING = 65536
# Methods that run without a separate draft model in vLLM (vllm/config/speculative.py:
# mtp uses the target model's own layers, ngram looks up the prompt).
NO_DRAFT_MODEL = ("mtp", "ngram", "ngram_gpu", "suffix")
_SGLANG_ALGORITHMS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN",
                      "ngram": "NGRAM", "draft_model": "STANDALONE"}
_TRTLLM_DECODING_TYPES = {"eagle": "Eagle3", "eagle3": "Eagle3", "mtp": "MTP",
                          "ngram": "NGram", "draft_model": "DraftTarget"}
TRTLLM_UPPER_BOUNDS_SINCE = "1.3.0rc8"  # first release notes listing PR #10860
VLLM_FILE = "vllm-speculative-config.json"
SGLANG_ADAPTIVE_CONFIG = "sglang-adaptive.json"
SGLANG_FLAGS_FILE = "sglang-flags.txt"
TRTLLM_FILE = "trtllm.yaml"


@dataclass(frozen=True, slots=True)
class Tier:
    """Batch sizes from the previous tier's last + 1 up to `last` draft `k` tokens."""

    last: int | None
    k: Draft


def threshold_schedule(last_on: int, k: Draft) -> tuple[Tier, ...]:
    """Speculate with k draft tokens up to batch size last_on, not at all above."""
    return (Tier(last_on, k), Tier(None, 0))


def starts(tiers: Sequence[Tier]) -> list[int]:
    """The first batch size of each tier."""
    return [1] + [t.last + 1 for t in tiers[:-1] if t.last is not None]


def max_k(tiers: Sequence[Tier]) -> Draft:
    """The largest draft length of a schedule (the placeholder if any k is unknown)."""
    ks = [t.k for t in tiers]
    return max(k for k in ks if isinstance(k, int)) if all(isinstance(k, int) for k in ks) \
        else next(k for k in ks if isinstance(k, str))


def describe(tiers: Sequence[Tier]) -> str:
    """'3 draft tokens at batch sizes 1-15, none from 16' for a schedule."""
    parts = []
    for first, tier in zip(starts(tiers), tiers, strict=True):
        where = (f"from {first}" if tier.last is None else
                 f"at batch size {first}" if tier.last == first else
                 f"at batch sizes {first}-{tier.last}")
        parts.append(f"none {where}" if tier.k == 0 else f"{tier.k} draft tokens {where}")
    return ", ".join(parts)


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
        out["num_speculative_tokens_per_batch_size"] = vllm_ranges(tiers)
    return out


def vllm_ranges(tiers: Sequence[Tier]) -> list[list[Draft]]:
    """The schedule as vLLM's inclusive [start, end, k] ranges (also the simulator's
    `--adaptive-schedule` form); the open last tier ends at BATCH_SIZE_CEILING."""
    return [[first, tier.last if tier.last is not None else BATCH_SIZE_CEILING, tier.k]
            for first, tier in zip(starts(tiers), tiers, strict=True)]


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


def _yaml_scalar(value: Draft) -> str:
    return str(value) if isinstance(value, int) else json.dumps(value)


def trtllm_upper_bound_schedule(tiers: Sequence[Tier]) -> dict[int, Draft]:
    """`draft_len_schedule` in the >= 1.3.0rc8 form: key = last batch size of a tier.

    From `get_draft_len_for_batch_size` (tensorrt_llm/_torch/speculative/utils.py):
    "Values represent draft_len to use for batch sizes UP TO that key", and batch sizes
    above the largest key get 0, so a final k = 0 tier needs no key.
    """
    out: dict[int, Draft] = {}
    for tier in tiers:
        if tier.last is not None:
            out[tier.last] = tier.k
        elif tier.k != 0:
            out[BATCH_SIZE_CEILING] = tier.k
    return out


def trtllm_lower_bound_schedule(tiers: Sequence[Tier]) -> dict[int, Draft]:
    """`draft_len_schedule` before 1.3.0rc8 (PR #8194): key = first batch size of a tier."""
    return {first: tier.k for first, tier in zip(starts(tiers), tiers, strict=True)}


def trtllm_yaml(tiers: Sequence[Tier], spec: SpecSettings) -> str:
    """A TensorRT-LLM `--config` YAML for a schedule, older forms as comments.

    Validators of `DecodingBaseConfig` (tensorrt_llm/llmapi/llm_args.py, a strict
    model): keys >= 1, values >= 0, the smallest key's value equal to max_draft_len,
    every value <= max_draft_len, and `max_concurrency` not together with
    `draft_len_schedule` (PR #10860). Before 1.3.0rc8 the keys were lower bounds with
    key 1 required (PR #8194). The boundary is the v1.3.0rc8 release notes
    (github.com/NVIDIA/TensorRT-LLM/releases/tag/v1.3.0rc8), which list PR #10860.
    """
    k = tiers[0].k
    method = spec.method or ""
    decoding = _TRTLLM_DECODING_TYPES.get(method, "<decoding_type: Eagle3, MTP, NGram, ...>")
    schedule = trtllm_upper_bound_schedule(tiers) if len(tiers) > 1 else {}
    lines = [f"# specload: {describe(tiers)}.",
             f"# TensorRT-LLM >= {TRTLLM_UPPER_BOUNDS_SINCE} (PR #10860): draft_len_schedule "
             "keys are inclusive upper bounds;",
             "# batch sizes above the largest key draft 0 tokens.",
             f"# Run: trtllm-serve <model> --config {TRTLLM_FILE}",
             "speculative_config:",
             f"  decoding_type: {_yaml_scalar(decoding)}",
             f"  max_draft_len: {_yaml_scalar(k)}"]
    if method not in NO_DRAFT_MODEL:
        lines.append(f"  speculative_model: {_yaml_scalar(spec.model or MODEL_PLACEHOLDER)}"
                     "  # speculative_model_dir in older releases")
    if schedule:
        lines.append("  draft_len_schedule:")
        previous = 0
        for key, value in schedule.items():
            lines.append(f"    {key}: {_yaml_scalar(value)}  # batch sizes {previous + 1}-{key}")
            previous = key
        lines.append(f"    # from batch size {previous + 1}: 0 (implicit)")
    if len(tiers) == 2 and tiers[1].k == 0 and tiers[0].last is not None:
        lines += ["# The same policy with max_concurrency (instead of draft_len_schedule, "
                  "never both):",
                  f"#   max_concurrency: {tiers[0].last}"]
    if len(tiers) > 1:
        old = ", ".join(f"{key}: {_yaml_scalar(v)}"
                        for key, v in trtllm_lower_bound_schedule(tiers).items())
        lines += [f"# TensorRT-LLM before {TRTLLM_UPPER_BOUNDS_SINCE} (PR #8194): keys are "
                  "lower bounds, key 1 required:",
                  f"#   draft_len_schedule: {{{old}}}"]
        if len(tiers) == 2 and tiers[1].k == 0:
            lines.append(f"#   or max_concurrency: {tiers[0].last}  "
                         "# speculate while at most this many requests are active")
        lines += ["# Open PR #16888 would keep drafting at length 1 above the largest key "
                  "for some",
                  "# one-engine modes (min_runtime_draft_len): check your build if off "
                  "must mean 0."]
    return "\n".join(lines) + "\n"


def as_json(data: Any) -> str:
    """Indented JSON with each innermost list on one line ([1, 15, 3], not five lines)."""
    text = json.dumps(data, indent=2)
    return re.sub(r"\[[^\[\]{}]*\]", lambda m: json.dumps(json.loads(m.group(0))), text) + "\n"


class Writer(ABC):
    """One engine's setting of a schedule, for an engine that switches by batch size."""

    names: tuple[str, ...] = ()  # the files it writes, the first the one a placeholder names
    summary_key: str | None = None  # summary.json's field holding `setting`

    @abstractmethod
    def setting(self, tiers: Sequence[Tier], spec: SpecSettings) -> Any:
        """The setting as data."""

    @abstractmethod
    def files(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> dict[str, str]:
        """Each file's name and text, `folder` being where they are written."""

    @abstractmethod
    def apply(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        """How to apply the setting, the words after the engine's name."""

    @abstractmethod
    def uses(self, folder: str) -> dict[str, str]:
        """How each file is used, for the README's table."""

    def fill(self, tiers: Sequence[Tier], spec: SpecSettings, folder: Path) -> str:
        """What the engine's placeholder in `command.verify_command` becomes; `folder`
        is the absolute path of the files."""
        return str(folder / self.names[0])


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


class TrtllmWriter(Writer):
    """TensorRT-LLM: the `--config` YAML, older forms as comments."""

    names = (TRTLLM_FILE,)

    def setting(self, tiers: Sequence[Tier], spec: SpecSettings) -> dict[int, Draft]:
        return trtllm_upper_bound_schedule(tiers)

    def files(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> dict[str, str]:
        return {TRTLLM_FILE: trtllm_yaml(tiers, spec)}

    def apply(self, tiers: Sequence[Tier], spec: SpecSettings, folder: str) -> str:
        return (f">= {TRTLLM_UPPER_BOUNDS_SINCE} (file {folder}/{TRTLLM_FILE}): "
                f"draft_len_schedule {self.setting(tiers, spec)}")

    def uses(self, folder: str) -> dict[str, str]:
        return {TRTLLM_FILE: f"`trtllm-serve <model> --config {folder}/{TRTLLM_FILE}`"}
