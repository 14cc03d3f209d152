"""When the simulated server keeps or closes a connection, per flavour, over real sockets.

llama.cpp's server closes the connection after every streamed response while its
headers say keep-alive, closes (saying so) after error responses, and closes idle
connections after 5 s; `--connection-close` makes any flavour say `Connection: close`
on its streams.
"""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

STREAM = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
                     "stream": True}).encode()
UNARY = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}).encode()
HEADERS = {"Content-Type": "application/json"}
CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _connect(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)


def _exchange(conn: http.client.HTTPConnection, body: bytes,
              path: str = "/v1/chat/completions") -> http.client.HTTPResponse:
    conn.request("POST", path, body=body, headers=HEADERS)
    resp = conn.getresponse()
    resp.read()
    return resp


def _second_on_same_connection(url: str, body: bytes) -> tuple[http.client.HTTPResponse,
                                                               BaseException | None]:
    """The first response, and how a second request sent right after it on the same
    connection ended (None: it was answered)."""
    conn = _connect(url)
    first = _exchange(conn, body)
    sock = conn.sock
    try:
        _exchange(conn, body)
        reused = sock is not None and conn.sock is sock
    except CLOSED as exc:
        return first, exc
    finally:
        conn.close()
    assert reused
    return first, None


def test_llamacpp_closes_after_every_stream_with_keep_alive_headers(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms")
    first, failure = _second_on_same_connection(srv.url, STREAM)
    assert first.status == 200 and first.getheader("Connection") is None
    assert first.getheader("Keep-Alive") == "timeout=5, max=100"
    assert isinstance(failure, CLOSED), failure  # closed before any response byte
    time.sleep(0.2)
    assert len(srv.read_trace()) == 1  # the second request was never taken


def test_vllm_keeps_the_connection_after_a_stream(sim_server) -> None:
    srv = sim_server(flavor="vllm", profile="bench-20ms", trace=False)
    first, failure = _second_on_same_connection(srv.url, STREAM)
    assert first.status == 200 and failure is None
    assert first.getheader("Keep-Alive") is None


def test_llamacpp_keeps_the_connection_after_a_unary_response(sim_server) -> None:
    srv = sim_server(flavor="llamacpp", profile="bench-20ms", trace=False)
    first, failure = _second_on_same_connection(srv.url, UNARY)
    assert first.status == 200 and failure is None


def test_llamacpp_closes_after_an_error_and_says_so(sim_server) -> None:
    conn = _connect(sim_server(flavor="llamacpp", trace=False).url)
    conn.request("GET", "/no/such/route")
    resp = conn.getresponse()
    assert resp.status == 404 and resp.getheader("Connection") == "close"
    assert resp.read() == b'{"error":{"code":404,"message":"File Not Found","type":' \
                          b'"not_found_error"}}'
    assert resp.getheader("Content-Type") == "application/json; charset=utf-8"
    assert resp.getheader("Keep-Alive") is None
    conn.close()


def test_llamacpp_closes_an_idle_connection_after_5_s(sim_server) -> None:
    conn = _connect(sim_server(flavor="llamacpp", trace=False).url)
    conn.request("GET", "/health")
    assert conn.getresponse().read() == b'{"status":"ok"}'
    sock = conn.sock
    assert sock is not None
    sock.settimeout(10)
    t0 = time.monotonic()
    assert sock.recv(1) == b""  # the server's FIN
    assert 4.5 < time.monotonic() - t0 < 6.5
    conn.close()


def test_connection_close_option_says_so_on_streams(sim_server) -> None:
    url = sim_server(flavor="vllm", profile="bench-20ms", trace=False,
                     extra_args=["--connection-close"]).url
    conn = _connect(url)
    stream = _exchange(conn, STREAM)
    assert stream.getheader("Connection") == "close" and conn.sock is None
    unary = _exchange(conn, UNARY)  # http.client opens a new connection
    assert unary.getheader("Connection") is None
    conn.close()
