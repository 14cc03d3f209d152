"""`specload sim --api-key`: each flavour guards its engine's routes, over HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from specload.runner.sim_launcher import SimOptions, launch

KEY = "sk-sim-7f3a"
CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                   "stream": True}).encode()
LLAMA_401 = b'{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}'


def call(url: str, path: str, headers: dict[str, str] | None = None,
         body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url + path, data=body, headers={
        "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 401),
    ({"Authorization": f"Bearer {KEY}"}, 200),
    ({"Authorization": KEY}, 200),  # a bare key passes: llama.cpp strips "Bearer " if any
    ({"X-Api-Key": KEY}, 200),  # read when no Authorization header came
    ({"Authorization": "Bearer wrong", "X-Api-Key": KEY}, 401),
    ({"Authorization": f"bearer {KEY}"}, 401),  # the prefix is case-sensitive there
])
def test_llamacpp_key_headers(module_sim_server, headers: dict[str, str],
                              status: int) -> None:
    srv = module_sim_server(flavor="llamacpp", profile="bench-20ms", trace=False,
                            extra_args=["--api-key", KEY, "--metrics"])
    got, body = call(srv.url, "/v1/chat/completions", headers, CHAT)
    assert got == status
    if status == 401:
        assert body == LLAMA_401


def test_llamacpp_guards_all_but_health(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", extra_args=["--api-key", KEY, "--metrics"])
    assert call(srv.url, "/health") == (200, b'{"status":"ok"}')
    assert call(srv.url, "/v1/health")[0] == 200
    for path in ("/v1/models", "/metrics", "/no/such/route"):  # 401 before routing
        assert call(srv.url, path) == (401, LLAMA_401), path
    assert call(srv.url, "/metrics", {"Authorization": f"Bearer {KEY}"})[0] == 200
    assert call(srv.url, "/v1/completions", {}, b'{"prompt": "x"}')[0] == 401
    assert [(r["status"], r["endpoint"]) for r in srv.read_trace()] == [(401, "completions")]


def test_vllm_guards_v1_routes_with_a_bearer_key(sim_server) -> None:
    srv = sim_server(flavor="vllm", profile="bench-20ms", trace=False,
                     extra_args=["--api-key", KEY])
    assert call(srv.url, "/v1/models") == (401, b'{"error":"Unauthorized"}')
    assert call(srv.url, "/v1/chat/completions", {"X-Api-Key": KEY}, CHAT)[0] == 401
    assert call(srv.url, "/v1/chat/completions", {"Authorization": KEY}, CHAT)[0] == 401
    for scheme in ("Bearer", "bearer"):
        auth = {"Authorization": f"{scheme} {KEY}"}
        assert call(srv.url, "/v1/chat/completions", auth, CHAT)[0] == 200
    assert call(srv.url, "/health")[0] == 200
    assert call(srv.url, "/metrics")[0] == 200


def test_key_from_the_environment_stays_out_of_files(tmp_path) -> None:
    options = SimOptions.of(profile="bench-20ms", trace_path=tmp_path / "trace.jsonl",
                            extra_args=("--api-key-env", "SIM_TEST_KEY"))
    srv = launch(options, tmp_path / "sim.log", env={"SIM_TEST_KEY": KEY})
    try:
        assert call(srv.url, "/v1/models")[0] == 401
        auth = {"Authorization": f"Bearer {KEY}"}
        assert call(srv.url, "/v1/chat/completions", auth, CHAT)[0] == 200
    finally:
        srv.stop()
    assert "API key required" in srv.log_text()
    for path in tmp_path.iterdir():
        assert KEY not in path.read_text(), path
