"""The simulated server answers malformed requests with OpenAI-style 4xx errors and never
writes a client's Authorization header anywhere.

tests/integration/sim/test_sim_http.py already checks 14 kinds of invalid request
(messages not a list or missing, unknown role, non-text content, unknown model, too many
or non-integer max_tokens, stream_options without stream, empty prompt, n=2, a non-object
body, invalid JSON, an oversized body, an unknown route); this adds 12 more, and
tests/integration/sim/test_sim_fuzz_http.py fuzzes arbitrary JSON bodies.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

SECRET = "sk-specload-secret-sim-5be0c1"
USER = {"role": "user", "content": "hello"}
CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


def send(url: str, method: str, path: str, body: Any = None,
         raw: bytes | None = None) -> tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    conn.request(method, path, body=data, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {SECRET}",
        "X-Request-Id": "rel-sim-1"})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, payload


@pytest.fixture(scope="module")
def server(module_sim_server):
    return module_sim_server(trace=True)


@pytest.mark.parametrize(("method", "path", "body", "status", "param"), [
    ("POST", CHAT, {"messages": []}, 400, "messages"),
    ("POST", CHAT, {"messages": ["hello"]}, 400, "messages[0]"),
    ("POST", CHAT, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400,
     "messages[0].content"),
    ("POST", CHAT, {"messages": [USER], "max_tokens": 0}, 400, "max_tokens"),
    ("POST", CHAT, {"messages": [USER], "max_tokens": True}, 400, "max_tokens"),
    ("POST", CHAT, {"messages": [USER], "max_tokens": 8, "min_tokens": 9}, 400, "min_tokens"),
    ("POST", CHAT, {"messages": [USER], "seed": "lucky"}, 400, "seed"),
    ("POST", CHAT, {"messages": [USER], "stream": "yes"}, 400, "stream"),
    ("POST", CHAT, {"messages": [USER], "stream": True, "stream_options": [1]}, 400,
     "stream_options"),
    ("POST", COMPLETIONS, {"prompt": ["a", "b"]}, 400, "prompt"),
    ("POST", COMPLETIONS, {"prompt": "word " * 200_000}, 400, "prompt"),
    ("GET", CHAT, None, 405, None),
])
def test_more_invalid_requests_get_openai_4xx(server, method: str, path: str, body: Any,
                                              status: int, param: str | None) -> None:
    got, payload = send(server.url, method, path, body)
    assert got == status, payload
    err = json.loads(payload)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == status and err["message"] and err["param"] == param
    assert server.proc.poll() is None


def test_authorization_header_is_never_logged(server) -> None:
    send(server.url, "POST", CHAT, {"messages": [USER], "max_tokens": 4, "stream": True})
    send(server.url, "POST", CHAT, raw=b"{broken")
    send(server.url, "GET", "/v2/unknown")
    server.stop()  # flushes and closes everything it writes
    written = server.log_text() + server.trace_path.read_text()
    assert "rel-sim-1" in written  # the trace saw our requests ...
    assert SECRET not in written and "Bearer" not in written  # ... but not the header
