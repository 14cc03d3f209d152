"""The simulated server over HTTP: SSE format, usage, errors, metrics, trace, determinism."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families


def request(url: str, method: str, path: str, body: Any = None,
            headers: dict[str, str] | None = None,
            raw: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    conn.request(method, path, body=data,
                 headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload


def sse_events(payload: bytes) -> list[str]:
    """The data fields of an SSE body, in order."""
    text = payload.decode()
    assert text.endswith("\n\n")
    events = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        events.append(block[len("data: "):])
    return events


def stream_chat(url: str, **extra: Any) -> tuple[list[dict], list[str]]:
    body = {"model": "meta-llama/Llama-3.1-8B-Instruct", "stream": True,
            "messages": [{"role": "user", "content": "Tell me about speculative decoding."}],
            **extra}
    status, headers, payload = request(url, "POST", "/v1/chat/completions", body)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(payload)
    return [json.loads(e) for e in events if e != "[DONE]"], events


@pytest.fixture(scope="module")
def server(module_sim_server):
    return module_sim_server()


def test_chat_stream_format_with_speculation(server) -> None:
    chunks, events = stream_chat(server.url, max_tokens=64, ignore_eos=True,
                                 stream_options={"include_usage": True})
    assert events[-1] == "[DONE]"
    role, *content, usage = chunks
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 64
    assert usage["usage"]["prompt_tokens"] > 0
    for c in chunks[:-1]:
        assert c["object"] == "chat.completion.chunk" and c["id"].startswith("chatcmpl-")
    assert all(c["choices"][0]["finish_reason"] is None for c in content[:-1])
    assert content[-1]["choices"][0]["finish_reason"] == "length"
    # one chunk per engine step: several chunks carry more than one token
    words = [len(c["choices"][0]["delta"]["content"].split()) for c in content]
    assert sum(words) == 64
    assert max(words) > 1 and len(content) < 64


def test_continuous_usage_is_cumulative_on_every_chunk(server) -> None:
    chunks, _ = stream_chat(server.url, max_tokens=40, ignore_eos=True,
                            stream_options={"include_usage": True,
                                            "continuous_usage_stats": True})
    role, *content, final = chunks
    assert role["usage"]["completion_tokens"] == 0
    counts = [c["usage"]["completion_tokens"] for c in content]
    words = [len(c["choices"][0]["delta"]["content"].split()) for c in content]
    running = 0
    for n, w in zip(counts, words, strict=True):
        running += w
        assert n == running
    assert counts[-1] == final["usage"]["completion_tokens"] == 40


def test_completions_stream_and_no_usage_without_option(server) -> None:
    status, _, payload = request(server.url, "POST", "/v1/completions", {
        "prompt": "Once upon a time", "max_tokens": 20, "ignore_eos": True, "stream": True})
    assert status == 200
    events = sse_events(payload)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "text_completion" and "usage" not in c for c in chunks)
    assert sum(len(c["choices"][0]["text"].split()) for c in chunks) == 20
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_non_streaming_chat_and_completion(server) -> None:
    status, headers, payload = request(server.url, "POST", "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 7,
        "ignore_eos": True}, headers={"X-Request-Id": "unary-1"})
    body = json.loads(payload)
    assert status == 200 and headers["x-request-id"] == "unary-1"
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert len(body["choices"][0]["message"]["content"].split()) == 7
    assert body["usage"]["completion_tokens"] == 7
    status, _, payload = request(server.url, "POST", "/v1/completions",
                                 {"prompt": [1, 2, 3, 4], "max_tokens": 3, "ignore_eos": True})
    body = json.loads(payload)
    assert status == 200 and body["usage"] == {"prompt_tokens": 4, "total_tokens": 7,
                                               "completion_tokens": 3}


def test_eos_length_is_seeded_bounded_and_honours_min_tokens(server) -> None:
    def length(prompt: str, **kw: Any) -> tuple[int, str]:
        _, _, payload = request(server.url, "POST", "/v1/completions",
                                {"prompt": prompt, "max_tokens": 300, **kw})
        body = json.loads(payload)
        return body["usage"]["completion_tokens"], body["choices"][0]["finish_reason"]

    lengths = {p: length(p) for p in ("alpha", "beta", "gamma", "delta", "epsilon")}
    assert all(1 <= n <= 300 for n, _ in lengths.values())
    assert len({n for n, _ in lengths.values()}) > 1  # prompt-dependent
    assert length("alpha") == lengths["alpha"]  # deterministic
    assert length("alpha", seed=5) != lengths["alpha"] or length("beta", seed=5) != lengths[
        "beta"]
    n, reason = length("alpha", min_tokens=299)
    assert n >= 299 and reason in ("stop", "length")


@pytest.mark.parametrize(("path", "body", "status", "param"), [
    ("/v1/chat/completions", {"messages": "hi"}, 400, "messages"),
    ("/v1/chat/completions", {}, 400, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, 400,
     "messages[0].role"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, 400,
     "messages[0].content"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "model": "nope"},
     404, "model"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "max_tokens": 10**6}, 400, "max_tokens"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "max_tokens": "ten"}, 400, "max_tokens"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                              "stream_options": {"include_usage": True}}, 400, "stream_options"),
    ("/v1/completions", {"prompt": ""}, 400, "prompt"),
    ("/v1/completions", {"prompt": "x", "n": 2}, 400, "n"),
    ("/v1/completions", [1, 2], 400, "body"),
])
def test_bad_requests_get_openai_errors(server, path: str, body: Any, status: int,
                                        param: str) -> None:
    got, headers, payload = request(server.url, "POST", path, body)
    assert got == status and headers["content-type"].startswith("application/json")
    err = json.loads(payload)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["param"] == param and err["code"] == status and err["message"]


def test_invalid_json_too_large_and_unknown_route(server) -> None:
    status, _, payload = request(server.url, "POST", "/v1/completions", raw=b"{not json")
    assert status == 400 and json.loads(payload)["error"]["param"] == "body"
    status, _, payload = request(server.url, "POST", "/v1/completions",
                                 raw=b'{"prompt": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    assert status == 413 and "error" in json.loads(payload)
    status, _, payload = request(server.url, "GET", "/v2/nothing")
    assert status == 404 and json.loads(payload)["error"]["code"] == 404
    status, _, _ = request(server.url, "GET", "/health")
    assert status == 200


def test_models_lists_the_profile_model(server) -> None:
    status, _, payload = request(server.url, "GET", "/v1/models")
    data = json.loads(payload)["data"]
    assert status == 200 and [m["id"] for m in data] == ["meta-llama/Llama-3.1-8B-Instruct"]


def metrics(url: str) -> dict[str, float]:
    _, headers, payload = request(url, "GET", "/metrics")
    assert headers["content-type"].startswith("text/plain")
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(payload.decode()):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


def test_metrics_counters_move_as_tokens_are_served(server) -> None:
    before = metrics(server.url)
    stream_chat(server.url, max_tokens=50, ignore_eos=True)
    after = metrics(server.url)
    assert after["vllm:generation_tokens_total"] - before["vllm:generation_tokens_total"] == 50
    assert after["vllm:prompt_tokens_total"] > before["vllm:prompt_tokens_total"]
    drafts = after["vllm:spec_decode_num_drafts_total"] - before[
        "vllm:spec_decode_num_drafts_total"]
    draft_tokens = after["vllm:spec_decode_num_draft_tokens_total"] - before[
        "vllm:spec_decode_num_draft_tokens_total"]
    accepted = after["vllm:spec_decode_num_accepted_tokens_total"] - before[
        "vllm:spec_decode_num_accepted_tokens_total"]
    assert drafts > 0 and draft_tokens == 2 * drafts  # k = 2 for this profile
    assert 0 < accepted <= draft_tokens
    assert after["vllm:time_to_first_token_seconds_count"] > before.get(
        "vllm:time_to_first_token_seconds_count", 0)
    assert after["vllm:e2e_request_latency_seconds_count"] > before.get(
        "vllm:e2e_request_latency_seconds_count", 0)
    for gauge in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                  "vllm:kv_cache_usage_perc", "specload_sim_engine_lag_ratio"):
        assert gauge in after


def test_trace_records_each_request_with_its_chunks(server) -> None:
    request(server.url, "POST", "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "traced"}], "max_tokens": 12,
             "ignore_eos": True, "stream": True}, headers={"X-Request-Id": "trace-me"})
    request(server.url, "POST", "/v1/completions", {"prompt": 3},
            headers={"X-Request-Id": "trace-bad"})
    records = {r["request_id"]: r for r in server.read_trace()}
    rec = records["trace-me"]
    assert rec["status"] == 200 and rec["endpoint"] == "chat" and rec["fault"] is None
    assert rec["output_tokens"] == 12 == sum(n for _, n in rec["chunks"])
    assert rec["finish_reason"] == "length"
    times = [t for t, _ in rec["chunks"]]
    assert rec["arrival"] <= rec["first_token"] == times[0] <= times[-1] <= rec["end"]
    assert times == sorted(times)
    bad = records["trace-bad"]
    assert bad["status"] == 400 and bad["output_tokens"] == 0 and bad["first_token"] is None


def test_text_is_identical_with_speculation_on_and_off(sim_server) -> None:
    on, off = sim_server(spec="on"), sim_server(spec="off", trace=False)

    def text(url: str) -> tuple[str, int]:
        chunks, _ = stream_chat(url, max_tokens=60, seed=11)
        content = [c for c in chunks[1:] if c["choices"]]
        return "".join(c["choices"][0]["delta"]["content"] for c in content), len(content)

    (text_on, chunks_on), (text_off, chunks_off) = text(on.url), text(off.url)
    assert text_on == text_off
    assert chunks_off == len(text_off.split())  # one token per step without speculation
    assert chunks_on < chunks_off
