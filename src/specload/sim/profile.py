"""Simulator profiles: the pydantic model of a profile YAML and its loader.

A profile describes one hardware + model + drafter combination: bandwidth and compute
of the GPUs, model weights and KV-cache size, the drafter's acceptance rates and cost,
scheduler limits and CPU overheads, plus the default workload `sim-curve` uses. Unknown
keys are errors, so a typo in a user's copied YAML never passes silently. Profiles are
found by built-in name (`profiles/<name>.yaml` next to this module) or by path.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from specload.sim import SimConfigError
from specload.sim.acceptance import rates_for_length

PROFILES_DIR = Path(__file__).with_name("profiles")
# The open end of an adaptive schedule written `16-:0`: above any running-request cap.
SCHEDULE_CEILING = 100000

Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
Frac = Annotated[float, Field(gt=0, le=1)]
Prob = Annotated[float, Field(ge=0, lt=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hardware(_Strict):
    """The GPUs serving the model (tensor parallel: bandwidth and FLOPs add up)."""

    name: str
    num_gpus: int = Field(1, ge=1)
    mem_bandwidth_gbs: Pos  # per GPU, GB/s
    tflops: Pos  # dense, per GPU, in the weights' precision
    eta_mem: Frac  # achieved fraction of peak bandwidth
    eta_compute: Frac  # achieved fraction of peak FLOPs
    # query tokens per step at which matmuls reach half of that rate (the rate rises with
    # the batch as t / (t + ramp): small matrix products use the units poorly); 0: flat
    compute_ramp_tokens: NonNeg = 0.0
    # matmul kernels that take the step's tokens in tiles of this many and stream the
    # weights once per tile, and once more per token left over (a CPU's repacked-weight
    # GEMM takes 4 rows of activations at once, the rest one by one with a GEMV); 0: none
    compute_tile_tokens: int = Field(0, ge=0)
    # attention runs as kernels of its own after the layer's matmuls, so its KV reads and
    # FLOPs take their own roofline, added to the matmuls' (false: one roofline over the
    # step, the KV reads hidden under a compute-bound step's matmuls)
    attention_apart: bool = False
    # effective tensor-parallel all-reduce bandwidth, GB/s (0: single GPU or NVLink, ignored)
    interconnect_gbs: NonNeg = 0.0
    # fixed latency of one tensor-parallel all-reduce, s (small messages over PCIe)
    allreduce_latency_s: NonNeg = 0.0


class Model(_Strict):
    """The target model: what one forward pass reads and computes."""

    name: str  # served model id
    active_params_b: Pos  # parameters touched per token, billions (FLOPs = 2 * params)
    # of which the output head's, multiplied only for tokens whose logits are computed
    # (decode and verify tokens, a prompt's last); 0: counted for every token
    head_params_b: NonNeg = 0.0
    dense_weight_gb: Pos  # weights read every step (attention, shared experts, embeddings)
    expert_weight_gb: NonNeg = 0.0  # routed-expert weights (MoE); read as experts are hit
    experts_total: int = Field(0, ge=0)
    experts_active: int = Field(0, ge=0)  # routed experts per token
    kv_bytes_per_token: Pos  # K+V bytes of one token over all (full-attention) layers
    # a hybrid model's sliding-window layers: their window and their K+V bytes per token,
    # read only for the window's tokens (0: every layer attends to the whole context)
    sliding_window: int = Field(0, ge=0)
    window_kv_bytes_per_token: NonNeg = 0.0
    attn_flops_per_token_ctx: NonNeg = 0.0  # attention FLOPs per query token per context token
    allreduce_bytes_per_token: NonNeg = 0.0  # tensor-parallel traffic per token per step
    allreduces_per_forward: int = Field(0, ge=0)  # tensor-parallel all-reduces (2 per layer)
    max_model_len: int = Field(ge=2)

    @model_validator(mode="after")
    def _moe_consistent(self) -> Model:
        if self.expert_weight_gb > 0 and not 0 < self.experts_active <= self.experts_total:
            raise ValueError("expert_weight_gb needs 0 < experts_active <= experts_total")
        if self.head_params_b > self.active_params_b:
            raise ValueError("head_params_b is part of active_params_b: it cannot exceed it")
        return self


class VerifyBudget(_Strict):
    """vLLM's adaptive verification (`--spec adaptive` on the vllm flavour): each step
    the drafter drafts k tokens for every request and the target verifies only the
    budget of them that maximises expected tokens per second (`sim/verify_budget.py`)."""

    # what a step verified under a budget adds: sizing the budget, ranking the slots,
    # the variable-length verification kernels
    step_s: NonNeg = 0.0


class EmaTier(_Strict):
    """One batch-size tier of SGLang's adaptive speculation: the step counts it may run
    (0: off) and its hysteresis (`adaptive_spec_params.py`)."""

    candidate_steps: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    up_hysteresis: float = 0.0
    down_hysteresis: float = 0.0


# SGLang's DEFAULT_ADAPTIVE_CONFIG (python/sglang/srt/speculative/adaptive_spec_params.py)
SGLANG_TIERS = {1: EmaTier(candidate_steps=[1, 3, 5, 7], down_hysteresis=-0.25),
                8: EmaTier(candidate_steps=[0, 1, 3]), 32: EmaTier(candidate_steps=[0, 1]),
                64: EmaTier(candidate_steps=[0])}


class EmaTiers(_Strict):
    """SGLang's `--speculative-adaptive` with its `ema` strategy (`--spec adaptive` on
    the sglang flavour, `sim/ema_tiers.py`); defaults are SGLang's."""

    tiers: dict[int, EmaTier] = Field(default_factory=lambda: dict(SGLANG_TIERS))
    ema_alpha: Frac = 0.2
    warmup_batches: int = Field(default=10, ge=0)
    update_interval: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _check(self) -> EmaTiers:
        if not self.tiers or min(self.tiers) != 1:
            raise ValueError("ema_tiers.tiers needs a tier from batch size 1")
        return self


class Speculative(_Strict):
    """The drafter: acceptance per draft position and what drafting costs."""

    method: str = "eagle3"
    k: int = Field(ge=1)  # default number of speculative tokens
    acceptance: list[Prob] = Field(min_length=1)  # P(accept position j | j-1 accepted)
    # the same per prompt category (`sim/categories.py`), for requests whose category is
    # known; others draw `acceptance`
    acceptance_by_category: dict[str, list[Prob]] = Field(default_factory=dict)
    # the same by how many requests a step decodes: a step decoding n draws the rates of
    # the largest key <= n (`acceptance` below the smallest key); a category's own rates
    # come first. `sim-fit` measures them per rung, where an engine's acceptance moves
    # with the batch (llama-server's n-gram drafts at C = 2)
    acceptance_by_batch: dict[int, list[Prob]] = Field(default_factory=dict)
    # target tokens verified per draft position: 1 for a chain, > 1 for a draft tree
    verify_tokens_per_draft: float = Field(1.0, ge=1.0)
    draft_step_s: NonNeg  # fixed cost of one draft forward (kernel launches, weights)
    draft_per_seq_s: NonNeg  # per running request per draft forward
    # draft forwards per step besides the k that draft (SGLang's EAGLE worker runs one
    # more over the accepted tokens to extend the drafter's KV)
    extra_draft_forwards: int = Field(0, ge=0)
    cpu_per_seq_s: NonNeg = 0.0  # extra host time per speculating request per step
    # steps that speculate run without the engine's overlap scheduler (SGLang's EAGLE
    # worker turns it off); k = 0 steps of the adaptive mode keep it
    disables_overlap: bool = False
    # a k = 0 step of the adaptive schedule still runs a draft forward to keep the
    # drafter's KV in sync, as a fraction of the step's modelled time (not of the
    # `unexplained` time). Default: the middle of the
    # +4-11% decode time vLLM PR #53426 measured (MTP, 2x RTX 5090, c = 1 and 2)
    k0_overhead: NonNeg = 0.075
    # GPU memory the drafter takes from the KV pool (weights, its KV, CUDA graphs), GB
    drafter_memory_gb: NonNeg = 0.0
    # running-request cap with fixed-k speculation (SGLang lowers max_running_requests
    # for speculative decoding); None keeps scheduler.max_num_seqs
    max_num_seqs: int | None = Field(None, ge=1)
    # vLLM `num_speculative_tokens_per_batch_size` form: [[lo, hi, k], ...], k = 0 is off
    adaptive: list[tuple[int, int, int]] = Field(default_factory=list)
    # the engines' own controllers, run by `--spec adaptive` on their flavours
    verify_budget: VerifyBudget = Field(default_factory=VerifyBudget)
    ema_tiers: EmaTiers = Field(default_factory=EmaTiers)

    @model_validator(mode="after")
    def _check(self) -> Speculative:
        if self.k > len(self.acceptance):
            raise ValueError(f"k={self.k} needs {self.k} acceptance rates")
        if any(batch < 1 for batch in self.acceptance_by_batch):
            raise ValueError("acceptance_by_batch's keys are request counts (1 or more)")
        for name, table in (("acceptance_by_category", self.acceptance_by_category),
                            ("acceptance_by_batch", self.acceptance_by_batch)):
            for key, rates in table.items():
                if len(rates) != len(self.acceptance):
                    raise ValueError(f"{name}.{key} has {len(rates)} rates; acceptance "
                                     f"has {len(self.acceptance)}")
        for lo, hi, k in self.adaptive:
            if not (1 <= lo <= hi) or not 0 <= k <= len(self.acceptance):
                raise ValueError(f"bad adaptive range [{lo}, {hi}, {k}]")
        return self


class Scheduler(_Strict):
    """Continuous-batching limits, as vLLM V1 names them."""

    max_num_seqs: int = Field(ge=1)
    max_num_batched_tokens: int = Field(ge=1)  # chunked-prefill token budget per step
    kv_capacity_tokens: int = Field(ge=1)
    # automatic prefix caching, on by default in vLLM V1 and SGLang
    # (`--enable-prefix-caching`; SGLang's radix cache unless `--disable-radix-cache`)
    prefix_caching: bool = True
    block_size: int = Field(16, ge=1)  # tokens per KV block: vLLM's default on CUDA


class Overheads(_Strict):
    """Host-side time per step, and whether the engine hides it behind the GPU."""

    step_s: NonNeg  # fixed per step: scheduling, batch metadata, launches
    per_seq_s: NonNeg  # per running request per step: scheduling, detokenising, streaming
    per_waiting_s: NonNeg = 0.0  # per waiting request per step: queue scans
    # host work runs while the GPU computes (SGLang's overlap scheduler, vLLM's async
    # scheduling): a step takes max(GPU, host) instead of GPU + host
    overlap: bool = False
    # the largest step (in query tokens) replayed as a captured CUDA graph (vLLM's
    # max_cudagraph_capture_size; 0: no graphs modelled); a larger step launches its
    # kernels one by one and takes `eager_step_s` longer
    graph_max_tokens: int = Field(0, ge=0)
    eager_step_s: NonNeg = 0.0


class Unexplained(_Strict):
    """Time a published measurement shows that the physical model does not explain.

    Fitted to reproduce that measurement and named as what it is, so that no physical
    parameter is bent to absorb it. Zero (the default) for a profile the physics explains.
    It adds to the step and is never hidden by an overlap scheduler.
    """

    step_s: NonNeg = 0.0  # per step
    per_seq_s: NonNeg = 0.0  # per running request per step
    per_spec_seq_s: NonNeg = 0.0  # per speculating request per step, on top
    # per token a decoding request runs through the target per step: its own and each
    # draft verified (prefill chunks are not counted)
    per_decode_token_s: NonNeg = 0.0
    per_waiting_s: NonNeg = 0.0  # per waiting request per step
    # per waiting request, the share of its own length a step grows by: llama-server's
    # steps slow in proportion, spec-on and spec-off alike, while requests wait for a slot
    # (docs/simulator.md)
    waiting_share: NonNeg = 0.0


class RequestLengths(_Strict):
    """Lengths: sim-curve's default request and the EOS length distribution."""

    prompt_tokens: int = Field(ge=1)  # sim-curve's prompt length
    # of which the same for every request (one shared document: the prefix cache's)
    shared_prefix_tokens: int = Field(0, ge=0)
    output_tokens: int = Field(ge=1)  # sim-curve's output length (ignore_eos)
    eos_mean_tokens: int = Field(ge=1)  # mean output length when stopping at EOS
    max_output_tokens: int = Field(ge=1)  # largest max_tokens accepted


class Profile(_Strict):
    """One simulated server."""

    description: str = ""
    hardware: Hardware
    model: Model
    speculative: Speculative
    scheduler: Scheduler
    overheads: Overheads
    unexplained: Unexplained = Field(default_factory=Unexplained)
    workload: RequestLengths
    # where each parameter's value comes from, by dotted path ("overheads.step_s":
    # "fitted"); `specload sim-fit` writes it, the built-in profiles say it in comments
    origins: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Profile:
        unknown = [p for p in self.origins if p not in parameter_paths()]
        if unknown:
            raise ValueError(f"origins name unknown parameters: {', '.join(unknown)}")
        w, m = self.workload, self.model
        if w.prompt_tokens + w.output_tokens > m.max_model_len:
            raise ValueError("workload prompt_tokens + output_tokens exceed max_model_len")
        if w.shared_prefix_tokens >= w.prompt_tokens:
            raise ValueError("workload shared_prefix_tokens must be below prompt_tokens")
        need = m.max_model_len + len(self.speculative.acceptance) + 1
        if self.kv_capacity(drafter=True) < need:
            raise ValueError(f"the KV pool ({self.kv_capacity(drafter=True)} tokens with the "
                             f"drafter loaded) must hold max_model_len + drafts ({need})")
        return self

    def max_num_seqs(self, speculating: bool) -> int:
        """Running-request cap, with the speculative cap when speculating at fixed k."""
        cap = self.speculative.max_num_seqs if speculating else None
        return cap or self.scheduler.max_num_seqs

    def kv_capacity(self, drafter: bool) -> int:
        """KV-cache tokens, less what the drafter's memory takes when it is loaded."""
        cap = self.scheduler.kv_capacity_tokens
        if drafter:
            cap -= int(self.speculative.drafter_memory_gb * 1e9 / self.model.kv_bytes_per_token)
        return cap


SECTIONS: dict[str, type[_Strict]] = {
    "hardware": Hardware, "model": Model, "speculative": Speculative, "scheduler": Scheduler,
    "overheads": Overheads, "unexplained": Unexplained, "workload": RequestLengths,
}


def parameter_paths() -> list[str]:
    """Every parameter's dotted path, section by section ("hardware.eta_mem", ...)."""
    return [f"{name}.{key}" for name, section in SECTIONS.items() for key in section.model_fields]


def _flow(value: object) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip()
    return text.removesuffix("...").strip()


def to_yaml(profile: Profile, header: Sequence[str] = ()) -> str:
    """The profile as YAML that `load_profile` reads back; every parameter whose origin is
    known carries it as a comment, and the `origins` mapping repeats them."""
    data = profile.model_dump(mode="json")
    # batch sizes stay numbers (JSON's keys are strings)
    data["speculative"]["acceptance_by_batch"] = profile.speculative.acceptance_by_batch
    lines = [f"# {line}".rstrip() for line in header]
    lines.append(f"description: {_flow(data['description'])}")
    for name in SECTIONS:
        lines.append(f"{name}:")
        for key, value in data[name].items():
            line = f"  {key}: {_flow(value)}"
            origin = profile.origins.get(f"{name}.{key}")
            lines.append(f"{line}  # {origin}" if origin else line)
    if profile.origins:
        lines.append("origins:")
        lines += [f"  {path}: {_flow(origin)}" for path, origin in profile.origins.items()]
    return "\n".join(lines) + "\n"


def builtin_names() -> list[str]:
    """Names of the profiles shipped with specload."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_profile(name_or_path: str) -> Profile:
    """Load a built-in profile by name or a YAML file by path; SimConfigError if bad. A
    profile that names another in `extends` is that one with its own keys on top, section
    by section (a variant: the same server with another drafter's acceptance)."""
    data = _profile_data(name_or_path, ())
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SimConfigError(f"profile {name_or_path}: {where}: {first['msg']}{more}") from None


def _where(name_or_path: str) -> str:
    """The file a profile name or path stands for (resolved, for telling loops)."""
    path = Path(name_or_path)
    if not path.suffix and (PROFILES_DIR / f"{name_or_path}.yaml").is_file():
        path = PROFILES_DIR / f"{name_or_path}.yaml"
    return str(path.resolve())


def _profile_data(name_or_path: str, seen: tuple[str, ...]) -> dict[str, Any]:
    """A profile file's mapping with its `extends` chain resolved (`seen`: the files
    that extend it)."""
    path = Path(_where(name_or_path))
    if not path.is_file():
        raise SimConfigError(
            f"profile {name_or_path!r} is neither a built-in ({', '.join(builtin_names())}) "
            "nor a YAML file"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SimConfigError(f"profile {path}: cannot read YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SimConfigError(f"profile {path}: expected a mapping at the top level")
    base = data.pop("extends", None)
    if base is None:
        return data
    if isinstance(base, str) and Path(base).suffix and not Path(base).is_absolute():
        base = str(path.parent / base)  # a file beside this one
    here = str(path.resolve())
    if not isinstance(base, str) or _where(base) in (*seen, here):
        raise SimConfigError(f"profile {path}: extends {base!r}: a profile name or file that "
                             "does not extend this one")
    merged = _profile_data(base, (*seen, here))
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def parse_schedule(text: str) -> list[tuple[int, int, int]]:
    """`--adaptive-schedule` text -> vLLM-form [(lo, hi, k), ...]; SimConfigError if bad.

    Two spellings: `1-15:3,16-:0` (ranges of batch sizes, an open end runs to
    `SCHEDULE_CEILING`) or JSON `[[1, 15, 3], [16, 100000, 0]]`. The ranges must start
    at 1, follow each other without gaps or overlaps, and end open (or at the ceiling),
    so every batch size has exactly one k.
    """
    text = text.strip()
    try:
        if text.startswith("["):
            ranges = [tuple(int(v) for v in item) for item in json.loads(text)]
        else:
            ranges = [_schedule_item(item) for item in text.split(",") if item.strip()]
    except (ValueError, TypeError) as exc:
        raise SimConfigError(f"--adaptive-schedule {text!r}: write it like 1-15:3,16-:0 or "
                             f"[[1, 15, 3], [16, {SCHEDULE_CEILING}, 0]] ({exc})") from None
    problems = schedule_problems(ranges)
    if problems:
        raise SimConfigError(f"--adaptive-schedule {text!r}: {'; '.join(problems)}")
    return [(lo, hi, k) for lo, hi, k in ranges]


def _schedule_item(item: str) -> tuple[int, int, int]:
    span, _, k = item.strip().partition(":")
    lo, dash, hi = span.partition("-")
    if not k or not dash:
        raise ValueError(f"{item.strip()!r} is not LO-HI:K or LO-:K")
    return int(lo), int(hi) if hi.strip() else SCHEDULE_CEILING, int(k)


def schedule_problems(ranges: Sequence[tuple[int, ...]]) -> list[str]:
    """What keeps a [(lo, hi, k), ...] schedule from covering every batch size once."""
    if not ranges:
        return ["the schedule is empty"]
    problems = [f"{list(r)} needs 3 numbers" for r in ranges if len(r) != 3]
    if problems:
        return problems
    problems += [f"[{lo}, {hi}, {k}] needs 1 <= lo <= hi and k >= 0"
                 for lo, hi, k in ranges if not (1 <= lo <= hi and k >= 0)]
    if ranges[0][0] != 1:
        problems.append("the first range must start at batch size 1")
    problems += [f"[{a[0]}, {a[1]}, ...] is not followed by a range from {a[1] + 1}"
                 for a, b in itertools.pairwise(ranges) if b[0] != a[1] + 1]
    return problems


def with_schedule(profile: Profile, schedule: Sequence[tuple[int, int, int]]) -> Profile:
    """The profile with `speculative.adaptive` replaced (validated like the YAML's)."""
    try:
        spec = Speculative.model_validate(
            {**profile.speculative.model_dump(), "adaptive": list(schedule)})
    except ValidationError as exc:
        raise SimConfigError(f"adaptive schedule: {exc.errors()[0]['msg']}") from None
    return profile.model_copy(update={"speculative": spec})


def with_acceptance_length(profile: Profile, length: float, k: int | None = None) -> Profile:
    """The profile with its acceptance rates scaled so a step drafting `k` tokens (default:
    the profile's) emits `length` tokens on average (`acceptance.rates_for_length`)."""
    spec = profile.speculative
    k = k or spec.k
    try:
        rates = rates_for_length(spec.acceptance, k, length)
    except ValueError as exc:
        raise SimConfigError(f"--acceptance-length: {exc}") from None
    return profile.model_copy(update={"speculative": spec.model_copy(
        update={"acceptance": [*rates, *spec.acceptance[k:]]})})


def engine_profile(args: argparse.Namespace) -> Profile:
    """The profile `sim` and `sim-curve` run: `--profile`, its acceptance rates scaled to
    `--acceptance-length` when given, with `--adaptive-schedule`'s schedule in place of
    the profile's when given (only `--spec schedule` uses one)."""
    profile = load_profile(args.profile)
    length = getattr(args, "acceptance_length", None)
    if length is not None:
        profile = with_acceptance_length(profile, length, getattr(args, "k", None))
    text = getattr(args, "adaptive_schedule", None)
    if text is None:
        return profile
    if getattr(args, "spec", None) != "schedule":
        raise SimConfigError("--adaptive-schedule applies to --spec schedule")
    return with_schedule(profile, parse_schedule(text))
