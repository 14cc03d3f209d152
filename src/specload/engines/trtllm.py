"""TensorRT-LLM: its registry entry, `draft_len_schedule` writer and caveats.

The entry names `trtllm-serve`, its forced-acceptance environment variable and its load
switch: `draft_len_schedule` in a `--config` YAML, which `TrtllmWriter` writes in the
upper-bound form of current releases, with the older lower-bound form and
`max_concurrency` as comments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from specload.engines.entry import ACCEPTED_DRAFTS, Engine, LoadSwitch, SyntheticAcceptance
from specload.engines.schedule import (
    BATCH_SIZE_CEILING,
    MODEL_PLACEHOLDER,
    NO_DRAFT_MODEL,
    Draft,
    Tier,
    Writer,
    describe,
    starts,
)
from specload.engines.spec_command import SpecSettings

TRTLLM_UPPER_BOUNDS_SINCE = "1.3.0rc8"  # first release notes listing PR #10860
TRTLLM_FILE = "trtllm.yaml"
_TRTLLM_DECODING_TYPES = {"eagle": "Eagle3", "eagle3": "Eagle3", "mtp": "MTP",
                          "ngram": "NGram", "draft_model": "DraftTarget"}


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


ENGINE = Engine(
    "trtllm", "TensorRT-LLM", re.compile(r"\btrtllm-serve\b"),
    # `draft_len_schedule` / `max_concurrency` (PRs #8194, #10860)
    switch=LoadSwitch(TrtllmWriter(), "{trtllm_config}", caveats=(
        "the batch size is the number of active requests (tensorrt_llm/_torch/"
        "pyexecutor/py_executor.py: "
        "get_draft_len_for_batch_size(len(self.active_requests))).",
        f"the keys changed meaning in {TRTLLM_UPPER_BOUNDS_SINCE} (PR #10860): "
        "{1: k, T: 0} passes both validators but means 'speculate only at batch size "
        "1' from then on. trtllm.yaml has the upper-bound form, the older one as a "
        "comment.",
    )),
    # tensorrt_llm/_torch/speculative/interface.py: FORCE_NUM_ACCEPTED_TOKENS_ENV_VAR
    # counts accepted draft tokens, the target's not included
    synthetic=SyntheticAcceptance(
        f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={ACCEPTED_DRAFTS}",
        caveats=("an environment variable: the length less one (the target's token)",
                 "releases whose env spec types it as int take whole numbers only")),
)
