"""The sweep's /metrics (runs merged, finished rungs' figures) and reading an engine's
series from a Prometheus range query's answer."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload.runner.metrics_export import SweepMetrics, merge
from specload.runner.metrics_scrape import combine
from specload.runner.metrics_sources import PrometheusQuery, from_matrix

ON = ('# TYPE specload_output_tokens_total counter\n'
      'specload_output_tokens_total{arm="on",run="r",rung="4"} 100\n')
OFF = ('# HELP specload_output_tokens_total output tokens\n'
       '# TYPE specload_output_tokens_total counter\n'
       'specload_output_tokens_total{arm="off",run="r",rung="4"} 80\n')


def test_runs_of_two_arms_merge_into_one_family() -> None:
    (family,) = merge([ON, OFF])
    assert family.type == "counter"
    assert {s.labels["arm"]: s.value for s in family.samples} == {"on": 100, "off": 80}


def test_the_sweep_serves_its_runs_and_finished_rungs(tmp_path: Path) -> None:
    exporter = SweepMetrics("quick", 0).start(tmp_path / "20261207T000000Z")
    try:
        exporter.finished_rung("on", {"users": 4, "output_tok_s": 250.0, "ttft_p50_ms": 80.0,
                                      "tpot_p50_ms": float("nan")})
        exporter.finished_rung("on", {"users": 8, "rate": 2.5, "output_tok_s": 300.0})
        with urllib.request.urlopen(exporter.url, timeout=5) as resp:
            text = resp.read().decode()
    finally:
        exporter.stop()
    got = {(s.name, s.labels.get("rung")): s.value
           for f in text_string_to_metric_families(text) for s in f.samples}
    assert got["specload_sweep_info", None] == 1
    assert got["specload_sweep_locust_runs", None] == 0
    assert got["specload_rung_output_tokens_per_second", "4"] == 250
    assert got["specload_rung_ttft_p50_seconds", "4"] == pytest.approx(0.08)
    assert ("specload_rung_tpot_p50_seconds", "4") not in got  # not measured: absent
    assert got["specload_rung_output_tokens_per_second", "2.5"] == 300  # an open loop's rate
    assert 'run="20261207T000000Z"' in text


def test_a_busy_port_is_one_clear_error(tmp_path: Path) -> None:
    first = SweepMetrics("x", 0).start(tmp_path)
    try:
        port = int(first.url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(OSError):
            SweepMetrics("x", port)
    finally:
        first.stop()


MATRIX = [  # a range query's answer, as Prometheus's API gives it
    {"metric": {"__name__": "vllm:num_requests_running", "instance": "a:1", "job": "e"},
     "values": [[100.0, "3"], [101.0, "2"]]},
    {"metric": {"__name__": "vllm:num_requests_running", "instance": "b:1", "job": "e"},
     "values": [[100.5, "1"], [101.5, "4"]]},
    {"metric": {"__name__": "vllm:generation_tokens", "instance": "a:1", "job": "e"},
     "values": [[101.0, "1000"]]},  # a counter stored without `_total`
]


def test_a_range_query_gives_each_series_latest_sample() -> None:
    families, ts = from_matrix(MATRIX)
    assert ts == pytest.approx((101.0 + 101.5 + 101.0) / 3)
    values = combine(families)
    assert values["vllm:num_requests_running"] == 6  # the two replicas' latest, summed
    assert values["vllm:generation_tokens_total"] == 1000


def test_the_query_asks_for_the_kept_series_under_the_selector() -> None:
    query = PrometheusQuery("http://p:9090/", '{job="vllm"}', 2.0, None).query()
    assert query.startswith('{__name__=~"') and query.endswith(',job="vllm"}[1m]')
    names = query.split('"')[1].split("|")
    assert "vllm:num_requests_running" in names and "vllm:generation_tokens_total" in names
    assert "vllm:generation_tokens" in names  # a counter stored without `_total`
