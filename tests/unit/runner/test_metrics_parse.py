"""Which Prometheus samples the sampler keeps, and how their label sets combine."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.runner.metrics_scrape import combine, parse_metrics, wanted

EXPOSITION = """\
# HELP vllm:generation_tokens_total Generated tokens.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="a"} 120.0
vllm:generation_tokens_total{model_name="b"} 30.0
vllm:generation_tokens_created{model_name="a"} 1.7e9
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 4
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 90
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 60
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 2
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 3
vllm:time_to_first_token_seconds_sum 0.5
vllm:time_to_first_token_seconds_count 3
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{tp_rank="0"} 2.5
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.0
"""


def test_parse_keeps_names_of_interest_summed_over_labels() -> None:
    assert parse_metrics(EXPOSITION) == {
        "vllm:generation_tokens_total": 150.0,
        "vllm:num_requests_running": 4.0,
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"}': 90.0,
        "vllm:time_to_first_token_seconds_sum": 0.5,
        "vllm:time_to_first_token_seconds_count": 3.0,
        "sglang:spec_accept_length": 2.5,
    }


DATA_PARALLEL = """\
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",tp_rank="0"} 3
sglang:num_running_reqs{dp_rank="1",tp_rank="0"} 5
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{dp_rank="0",tp_rank="0"} 2.8
sglang:spec_accept_length{dp_rank="1",tp_rank="0"} 2.6
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",tp_rank="0"} 0.5
sglang:token_usage{dp_rank="1",tp_rank="0"} 0.7
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0"} 0.2
vllm:kv_cache_usage_perc{engine="1"} 0.4
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 7
# TYPE llamacpp:tokens_predicted counter
llamacpp:tokens_predicted_total 42
"""


def test_ratio_gauges_are_averaged_counters_summed_across_ranks() -> None:
    got = parse_metrics(DATA_PARALLEL)
    assert got["sglang:num_running_reqs"] == 8.0  # a queue size: the ranks add up
    # acceptance length weighted by each rank's running requests, never 5.4
    assert got["sglang:spec_accept_length"] == pytest.approx((2.8 * 3 + 2.6 * 5) / 8)
    assert got["sglang:token_usage"] == pytest.approx(0.6)  # no weights: plain mean
    assert got["vllm:kv_cache_usage_perc"] == pytest.approx(0.3)
    assert got["tgi_batch_current_size"] == 7.0
    assert got["llamacpp:tokens_predicted_total"] == 42.0


def test_wanted_drops_buckets_created_and_unrelated_series() -> None:
    assert wanted("vllm:spec_decode_num_drafts_total")
    assert wanted("sglang:spec_accept_rate")
    assert wanted("sglang:num_queue_reqs")
    assert not wanted("vllm:spec_decode_num_drafts_created")
    assert not wanted("vllm:e2e_request_latency_seconds_bucket")
    assert not wanted("python_gc_objects_collected_total")


def test_empty_exposition_is_fine() -> None:
    assert parse_metrics("") == {}


VLLM_METRICS = Path(__file__).resolve().parents[2] / "data" / "vllm-cpu-metrics.txt"


def _reference(text: str) -> dict[str, float]:
    """parse_metrics without the line filter: every family through the reference parser."""
    return combine(text_string_to_metric_families(text))


@pytest.mark.parametrize("text", [
    EXPOSITION, DATA_PARALLEL,
    # labels with spaces and braces in their values, a timestamp, no trailing newline
    '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{path="/v1 {x}"} 3 '
    '1700000000\nvllm:num_requests_running_other 9\nvllm:num_requests_running 2',
    # a counter without `_total` on its sample (TGI's exporter), typed by its family
    "# HELP tgi_request_success Successful requests\n# TYPE tgi_request_success counter\n"
    "tgi_request_success 6.0\n",
    VLLM_METRICS.read_text()])
def test_the_line_filter_keeps_what_the_reference_parser_keeps(text: str) -> None:
    """A real vLLM CPU server's /metrics (0.32.0, under load) among them."""
    assert parse_metrics(text) == _reference(text)
    assert parse_metrics(text)
