"""The llamacpp flavour's `timings` and `--metrics`, against a real simulated server."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specload import engines
from specload.runner.metrics_scrape import parse_metrics
from specload.sim.metrics import LLAMACPP_SERIES

HEADERS = {"Content-Type": "application/json"}


def _body(chat: bool = True, stream: bool = True, usage: bool = False,
          max_tokens: int = 24) -> bytes:
    body: dict[str, Any] = {"max_tokens": max_tokens, "ignore_eos": True, "stream": stream}
    if chat:
        body["messages"] = [{"role": "user", "content": "tell me about the sea"}]
    else:
        body["prompt"] = "tell me about the sea"
    if usage:
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


def _open(url: str, path: str, body: bytes) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", path, body=body, headers=HEADERS)
    return conn.getresponse()


def _events(resp: http.client.HTTPResponse, limit: int | None = None) -> list[dict[str, Any]]:
    """The stream's JSON events ([DONE] left out), at most `limit` of them."""
    out: list[dict[str, Any]] = []
    while limit is None or len(out) < limit:
        line = resp.readline()
        if not line or line == b"data: [DONE]\n":
            break
        if line.startswith(b"data: "):
            out.append(json.loads(line[6:]))
    return out


def _stream(url: str, chat: bool = True, usage: bool = False) -> list[dict[str, Any]]:
    return _events(_open(url, "/v1/chat/completions" if chat else "/v1/completions",
                         _body(chat, usage=usage)))


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {s.name + (json.dumps(s.labels) if s.labels else ""): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _trace_of(srv: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while not (records := srv.read_trace()) and time.monotonic() < deadline:
        time.sleep(0.05)
    (record,) = records
    return record


def _check_timings(timings: dict[str, Any], record: dict[str, Any], spec: bool) -> None:
    """The timings hold the trace's truth: its tokens and its first-to-last token time."""
    assert timings["predicted_n"] == record["output_tokens"]
    assert timings["prompt_n"] + timings["cache_n"] == record["prompt_tokens"]
    assert timings["prompt_ms"] > 0 and timings["prompt_per_second"] > 0
    first, last = record["chunks"][0][0], record["chunks"][-1][0]
    # the trace stamps each chunk as sent, the engine its token as made: the first one's
    # bytes leave later (the headers go out only once it exists), and any chunk's send
    # may wait on a busy event loop (the last one's once waited 2.4 ms more than the
    # first's), so the two spans agree to a scheduling delay either way
    span_ms = (last - first) * 1e3
    assert span_ms - 30 < timings["predicted_ms"] < span_ms + 30
    steps = timings["predicted_n"] - 1
    assert timings["predicted_per_second"] == pytest.approx(
        steps / timings["predicted_ms"] * 1e3)
    if spec:
        assert timings["draft_n"] > 0 and 0 <= timings["draft_n_accepted"] <= timings["draft_n"]
        assert timings["draft_n_accepted"] < timings["predicted_n"]
    else:
        assert "draft_n" not in timings and "draft_n_accepted" not in timings


@pytest.mark.parametrize("usage", [True, False])
def test_chat_stream_timings_ride_on_the_last_chunk(sim_server, usage: bool) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms")
    events = _stream(srv.url, usage=usage)
    assert [i for i, e in enumerate(events) if "timings" in e] == [len(events) - 1]
    last = events[-1]
    if usage:  # the usage chunk
        assert last["choices"] == [] and last["usage"]["completion_tokens"] == 24
    else:  # the finish chunk
        assert last["choices"][0]["delta"] == {} and "usage" not in last
        assert last["choices"][0]["finish_reason"] == "length"
    _check_timings(last["timings"], _trace_of(srv), spec=True)


def test_completions_stream_ends_with_a_final_chunk_of_usage_and_timings(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms")
    events = _stream(srv.url, chat=False)  # include_usage not asked for
    last = events[-1]
    assert last["choices"] == [{"index": 0, "text": "", "logprobs": None,
                                "finish_reason": "length"}]
    assert last["usage"]["completion_tokens"] == 24
    assert all(e["choices"] and e["choices"][0]["finish_reason"] is None for e in events[:-1])
    assert not any("timings" in e or "usage" in e for e in events[:-1])
    _check_timings(last["timings"], _trace_of(srv), spec=True)


def test_unary_responses_carry_timings_without_drafts_when_spec_is_off(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms", spec="off")
    resp = _open(srv.url, "/v1/chat/completions", _body(stream=False))
    body = json.loads(resp.read())
    record = _trace_of(srv)
    assert body["timings"]["predicted_n"] == record["output_tokens"] == 24
    assert body["timings"]["prompt_n"] + body["timings"]["cache_n"] == record["prompt_tokens"]
    assert "draft_n" not in body["timings"]


def test_vllm_sends_no_timings(sim_server) -> None:
    events = _stream(sim_server(flavor="vllm", profile="bench-20ms", trace=False).url,
                     usage=True)
    assert not any("timings" in e for e in events)


def test_metrics_flag_serves_llamacpps_names(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms", extra_args=["--metrics"])
    _stream(srv.url)
    with urllib.request.urlopen(srv.url + "/metrics", timeout=10) as resp:
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4"
        assert int(resp.headers["Process-Start-Time-Unix"]) > 0
        text = resp.read().decode()
    for name, kind, help_text, _ in LLAMACPP_SERIES:
        assert f"# HELP llamacpp:{name} {help_text}\n# TYPE llamacpp:{name} {kind}\n" in text
    kept = parse_metrics(text)  # what the sampler keeps
    llamacpp = engines.get("llamacpp")
    assert llamacpp is not None
    read = [s.key for s in llamacpp.series]
    assert read and all(name in kept for name in read), set(read) - set(kept)
    assert 'position="0"' in text  # accepted tokens per draft position


def test_token_and_draft_counters_advance_only_when_a_request_ends(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms", extra_args=["--metrics"])
    resp = _open(srv.url, "/v1/chat/completions", _body(usage=True, max_tokens=60))
    assert len(_events(resp, limit=8)) == 8  # tokens are streaming
    during = _scrape(srv.url)
    assert during["llamacpp:requests_processing"] == 1
    assert during["llamacpp:prompt_tokens_total"] > 0  # counted as it is computed
    for name in ("tokens_predicted_total", "spec_decode_num_drafts_total",
                 "spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total"):
        assert during[f"llamacpp:{name}"] == 0, name
    timings = _events(resp)[-1]["timings"]
    after = _scrape(srv.url)
    assert after["llamacpp:tokens_predicted_total"] == _trace_of(srv)["output_tokens"] == 60
    assert after["llamacpp:spec_decode_num_draft_tokens_total"] == timings["draft_n"]
    assert after["llamacpp:spec_decode_num_accepted_tokens_total"] == \
        timings["draft_n_accepted"]
    assert after["llamacpp:requests_processing"] == 0
    assert after["llamacpp:predicted_tokens_seconds"] > 0
    assert _scrape(srv.url)["llamacpp:predicted_tokens_seconds"] == 0  # reset by a scrape
