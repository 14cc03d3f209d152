"""A client that leaves mid-stream: the engine drops the request and the trace says so."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families


def _running(url: str) -> float:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        if family.name == "vllm:num_requests_running":
            return sum(s.value for s in family.samples)
    raise AssertionError("no vllm:num_requests_running")


def test_client_leaving_mid_stream_aborts_the_request(sim_server) -> None:
    server = sim_server(profile="h100-llama8b-eagle3", spec="on")
    parts = urlsplit(server.url)
    body = json.dumps({"model": "meta-llama/Llama-3.1-8B-Instruct", "stream": True,
                       "max_tokens": 2000, "ignore_eos": True,
                       "messages": [{"role": "user", "content": "a long answer please"}]})
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: leaver-1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head.encode() + body.encode())
        data = b""
        while data.count(b'"content":"') < 5:  # the role chunk and a few content chunks
            data += sock.recv(65536)
        assert _running(server.url) == 1
    deadline = time.monotonic() + 10
    while not (recs := [r for r in server.read_trace() if r["request_id"] == "leaver-1"]):
        assert time.monotonic() < deadline, "the sim never noticed the client left"
        time.sleep(0.05)
    rec = recs[0]
    assert rec["status"] == 499 and rec["finish_reason"] == "abort"
    assert 0 < rec["output_tokens"] < 2000
    assert rec["output_tokens"] == sum(n for _, n in rec["chunks"])
    assert _running(server.url) == 0
