"""Sample a server's Prometheus `/metrics` every second into `<prefix>_server_metrics.csv`.

A background thread of the runner GETs the metrics URL once per interval, parses the
text with prometheus_client's reference parser, keeps the vLLM and SGLang series the
report uses (request queue sizes, token counters, speculative-decoding counters and
gauges, KV-cache usage, latency histogram sums and counts; histogram buckets are
dropped) and appends long-format rows `ts, metric, value`, the value summed over label
sets. Servers without `/metrics`, or without some of these series, are fine: nothing
is written for what is absent. The sampler also keeps the generated-tokens counter in
memory so the runner can print live tok/s without reading the file back.
"""

from __future__ import annotations

import bisect
import csv
import http.client
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from specload.records import SERVER_METRICS_COLUMNS

KEEP_EXACT = frozenset(
    {
        # vLLM (V1 names; V0 names where they differ)
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_requests_swapped",
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:request_success_total",
        "vllm:num_preemptions_total",
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        # SGLang
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:num_used_tokens",
        "sglang:token_usage",
        "sglang:gen_throughput",
        "sglang:cache_hit_rate",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:num_requests_total",
    }
)
# Whole families: every sample except histogram buckets and `_created` timestamps.
KEEP_PREFIXES = ("vllm:spec_decode", "sglang:spec_")
# Histograms whose `_sum` and `_count` give window means (latencies, tokens per step).
KEEP_HISTOGRAMS = (
    "vllm:time_to_first_token_seconds",
    "vllm:time_per_output_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:iteration_tokens_total",
    "sglang:time_to_first_token_seconds",
    "sglang:inter_token_latency_seconds",
    "sglang:e2e_request_latency_seconds",
)
GENERATED_TOKENS = ("vllm:generation_tokens_total", "sglang:generation_tokens_total")


def wanted(sample_name: str) -> bool:
    """Whether a sample name (as exposed, e.g. `..._total`, `..._sum`) is kept."""
    if sample_name in KEEP_EXACT:
        return True
    if sample_name.endswith(("_bucket", "_created")):
        return False
    if sample_name.startswith(KEEP_PREFIXES):
        return True
    base, _, suffix = sample_name.rpartition("_")
    return suffix in ("sum", "count") and base in KEEP_HISTOGRAMS


def parse_metrics(text: str) -> dict[str, float]:
    """Kept samples of a Prometheus text exposition, each summed over its label sets."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if wanted(sample.name):
                out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    return out


class MetricsSampler:
    """A thread appending one row per kept metric per sample to a CSV file."""

    def __init__(
        self,
        url: str,
        out_path: Path,
        interval_s: float = 1.0,
        timeout_s: float = 2.0,
        api_key: str | None = None,
    ) -> None:
        self.url = url
        self.out_path = out_path
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.api_key = api_key
        self.samples_ok = 0
        self.last_error: str | None = None
        self._generated: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metrics-sampler", daemon=True)

    def fetch(self) -> str:
        req = urllib.request.Request(self.url)
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
            return resp.read().decode("utf-8", errors="replace")

    def sample_once(self) -> int:
        """Take one sample now; returns the number of rows written (0 on any failure)."""
        ts = time.time()
        try:
            values = parse_metrics(self.fetch())
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            self.last_error = str(getattr(exc, "reason", exc))
            return 0
        new_file = not self.out_path.exists() or self.out_path.stat().st_size == 0
        with self.out_path.open("a", newline="") as fh:
            writer = csv.writer(fh)
            if new_file:
                writer.writerow(SERVER_METRICS_COLUMNS)
            writer.writerows([f"{ts:.3f}", name, repr(v)] for name, v in values.items())
        generated = [values[n] for n in GENERATED_TOKENS if n in values]
        if generated:
            self._generated.append((ts, sum(generated)))
        self.samples_ok += 1
        return len(values)

    def generated_tok_s(self, t0: float, t1: float) -> float | None:
        """Server-side generated tokens per second between two epoch times, if known."""
        hist = list(self._generated)
        times = [t for t, _ in hist]
        i, j = bisect.bisect_left(times, t0), bisect.bisect_right(times, t1) - 1
        if i >= j or j >= len(hist):
            return None
        (ta, va), (tb, vb) = hist[i], hist[j]
        return (vb - va) / (tb - ta) if tb > ta else None

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def start(self) -> MetricsSampler:
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.timeout_s + 1.0)
