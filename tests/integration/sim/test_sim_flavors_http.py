"""Each flavour's health, admission and metrics conventions, over HTTP."""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest

BODY = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 200,
                   "stream": True}).encode()


def request(url: str, method: str = "GET", path: str = "/", body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes, float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    t0 = time.monotonic()
    conn.request(method, path, body=body, headers={"Content-Type": "application/json",
                                                   **(headers or {})})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, time.monotonic() - t0


def test_llama_cpp_python_rejects_a_request_id_that_is_not_a_uuid(sim_server) -> None:
    url = sim_server(flavor="llama-cpp-python", trace=False).url
    status, body, _ = request(url, "POST", "/v1/chat/completions", BODY,
                              {"X-Request-ID": "vm-16185-1"})
    assert (status, body) == (400, b"")
    status, _, _ = request(url, "POST", "/v1/chat/completions", BODY,
                           {"X-Request-ID": str(uuid.uuid4())})
    assert status == 200
    assert request(url, path="/health")[:2] == (404, b'{"detail":"Not Found"}')
    assert request(url, path="/metrics")[0] == 404


def test_llama_cpp_python_models_waits_behind_a_running_generation(sim_server) -> None:
    url = sim_server(flavor="llama-cpp-python", trace=False, profile="bench-20ms",
                     spec="off", extra_args=["--no-interrupt"]).url
    slow = json.dumps({"prompt": "x", "max_tokens": 80, "stream": True,
                       "ignore_eos": True}).encode()  # ~1.6 s at 20 ms a token
    threading.Thread(target=request, args=(url, "POST", "/v1/completions", slow),
                     daemon=True).start()
    time.sleep(0.3)
    status, _, waited = request(url, path="/v1/models")
    assert status == 200 and waited > 1.0


@pytest.mark.parametrize(("flavor", "path", "status", "body"), [
    ("llamacpp", "/health", 200, b'{"status":"ok"}'),
    ("llamacpp", "/metrics", 501, b'"not_supported_error"'),
    ("ollama", "/", 200, b"Ollama is running"),
    ("ollama", "/metrics", 404, b"404 page not found"),
    ("tgi", "/health", 200, b""),
    ("vllm", "/ping", 200, b""),
])
def test_health_and_metrics_routes(sim_server, flavor: str, path: str, status: int,
                                   body: bytes) -> None:
    got_status, got_body, _ = request(sim_server(flavor=flavor, trace=False).url, path=path)
    assert got_status == status and body in got_body


def test_sglang_health_runs_a_generation(sim_server) -> None:
    _, _, waited = request(sim_server(flavor="sglang", trace=False).url, path="/health")
    assert waited >= 1.0  # it polls once a second until the one-token request is done


def test_data_parallel_ranks_are_labelled(sim_server) -> None:
    url = sim_server(trace=False, extra_args=["--data-parallel", "2"]).url
    threads = [threading.Thread(target=request, args=(url, "POST", "/v1/chat/completions",
                                                      BODY)) for _ in range(4)]
    for t in threads:  # at once: the least-loaded rank takes each
        t.start()
    for t in threads:
        t.join()
    _, text, _ = request(url, path="/metrics")
    finished: dict[str, float] = {}  # by rank, over vLLM's finish reasons
    for ln in text.decode().splitlines():
        if ln.startswith("vllm:request_success_total"):
            rank = ln.split('engine="')[1].split('"')[0]
            finished[rank] = finished.get(rank, 0.0) + float(ln.split()[-1])
    assert finished == {"0": 2.0, "1": 2.0}, text
