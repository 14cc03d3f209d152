"""The prefix cache over HTTP: a shared system prompt hits, in each flavour's metrics."""

from __future__ import annotations

import http.client
import json
import re
from urllib.parse import urlsplit

import pytest

SYSTEM = "You answer questions about the attached report. " * 40  # ~490 tokens


def post(url: str, question: str) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = {"messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": question}], "max_tokens": 4}
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    assert conn.getresponse().read()
    conn.close()


def metric(url: str, name: str) -> float:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    match = re.search(rf"^{re.escape(name)}{{[^}}]*}} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


def traced(server) -> list[dict]:
    return [json.loads(line) for line in server.trace_path.read_text().splitlines()]


@pytest.mark.parametrize("caching", [True, False])
def test_a_shared_system_prompt_hits_in_vllm_counters(sim_server, caching: bool) -> None:
    server = sim_server(profile="bench-20ms", spec="off",
                        extra_args=[] if caching else ["--no-prefix-caching"])
    post(server.url, "What is the total?")
    post(server.url, "Who wrote it?")
    first, second = traced(server)
    queries = metric(server.url, "vllm:prefix_cache_queries_total")
    hits = metric(server.url, "vllm:prefix_cache_hits_total")
    assert queries == first["prompt_tokens"] + second["prompt_tokens"]
    assert hits == first["cached_tokens"] + second["cached_tokens"]
    if caching:
        # the system message's full 16-token blocks, not the question's
        assert first["cached_tokens"] == 0 and 400 < second["cached_tokens"] < 500
        assert second["cached_tokens"] % 16 == 0
    else:
        assert hits == 0


def test_sglang_cache_hit_rate_is_the_latest_admission_s(sim_server) -> None:
    server = sim_server(profile="bench-20ms", spec="off", flavor="sglang")
    post(server.url, "What is the total?")
    assert metric(server.url, "sglang:cache_hit_rate") == 0.0
    post(server.url, "Who wrote it?")
    second = traced(server)[1]
    assert metric(server.url, "sglang:cache_hit_rate") == pytest.approx(
        second["cached_tokens"] / second["prompt_tokens"])
