"""Fault injection over HTTP: every kind, applied to all requests (fraction 1)."""

from __future__ import annotations

import http.client
import itertools
import json
import time
from urllib.parse import urlsplit

import pytest

BODY = json.dumps({"messages": [{"role": "user", "content": "fault me"}], "max_tokens": 30,
                   "ignore_eos": True, "stream": True,
                   "stream_options": {"include_usage": True}}).encode()


TINY = json.dumps({"prompt": "x", "max_tokens": 1}).encode()


def post_stream(url: str, body: bytes = BODY, path: str = "/v1/chat/completions",
                ) -> tuple[int, dict[str, str], bytes, float]:
    """Status, headers, whatever body arrived before the connection ended, time to headers."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    t0 = time.monotonic()
    conn.request("POST", path, body=body,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    waited = time.monotonic() - t0
    try:
        payload = resp.read()
    except http.client.IncompleteRead as exc:
        payload = exc.partial
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload, waited


def data_lines(payload: bytes) -> list[str]:
    return [line[6:] for line in payload.decode().split("\n") if line.startswith("data: ")]


def test_error500_and_error429_with_retry_after(sim_server) -> None:
    srv = sim_server(faults=["error500:1"])
    status, _, payload, _ = post_stream(srv.url)
    assert status == 500 and json.loads(payload)["error"]["code"] == 500
    srv = sim_server(faults=["error429:1:7"])
    status, headers, payload, _ = post_stream(srv.url)
    assert status == 429 and headers["retry-after"] == "7"
    assert json.loads(payload)["error"]["type"] == "RateLimitError"
    assert srv.read_trace()[0]["fault"] == "error429"


def test_cut_closes_the_stream_without_done(sim_server) -> None:
    srv = sim_server(faults=["cut:1:5"])
    status, _, payload, _ = post_stream(srv.url)
    lines = data_lines(payload)
    assert status == 200 and "[DONE]" not in lines
    tokens = sum(len(json.loads(x)["choices"][0]["delta"]["content"].split())
                 for x in lines[1:])
    assert 5 <= tokens < 30
    rec = srv.read_trace()[0]
    assert rec["fault"] == "cut" and rec["finish_reason"] == "cut"
    assert "Traceback" not in srv.log_text()


def test_malformed_and_stream_error_chunks(sim_server) -> None:
    srv = sim_server(faults=["malformed:1"])
    _, _, payload, _ = post_stream(srv.url)
    lines = data_lines(payload)
    bad = []
    for line in lines[:-1]:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            bad.append(line)
    assert len(bad) == 1 and lines[-1] == "[DONE]"
    srv = sim_server(faults=["stream_error:1"])
    _, _, payload, _ = post_stream(srv.url)
    lines = data_lines(payload)
    assert lines[-1] == "[DONE]"
    assert json.loads(lines[-2])["error"]["code"] == 500
    assert any("choices" in json.loads(x) for x in lines[:-2])  # error came mid-stream


def test_stalls_delay_first_byte_and_a_later_chunk(sim_server) -> None:
    srv = sim_server(faults=["stall_first_byte:1:0.6"])
    _, _, _, waited = post_stream(srv.url)
    assert waited >= 0.6
    srv = sim_server(faults=["stall_between:1:0.6"])
    post_stream(srv.url)
    chunks = srv.read_trace()[0]["chunks"]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(chunks)]
    assert max(gaps) >= 0.6


def test_fault_selection_is_seeded_fraction(sim_server) -> None:
    picks = []
    for _ in range(2):
        srv = sim_server(faults=["error500:0.3"], seed=4)
        picks.append([post_stream(srv.url, TINY, "/v1/completions")[0] for _ in range(40)])
        srv.stop()
    assert picks[0] == picks[1]
    assert 4 <= picks[0].count(500) <= 20


@pytest.mark.parametrize("bad", ["explode:0.1", "cut:2", "cut:x", "error500:0.7:1:2"])
def test_bad_fault_spec_is_a_one_line_error(sim_server, bad: str) -> None:
    with pytest.raises(RuntimeError, match="--fault"):
        sim_server(faults=[bad])
