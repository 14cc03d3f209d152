"""StreamPost on a loopback server: the request on the wire, and its response head."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from locust.contrib.fasthttp import FastHttpSession
from locust.event import EventHook

from specload.loadgen.http_post import StreamPost

REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n0\r\n\r\n")


@pytest.fixture
def server() -> Iterator[tuple[str, list[bytes]]]:
    """A server answering every request on its connections with REPLY, one connection at
    a time, keeping what came (an empty entry for each new connection)."""
    listener = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            got.append(b"")
            with conn:
                data = b""
                while True:
                    part = conn.recv(65536)
                    if not part:
                        break
                    data += part
                    head, sep, body = data.partition(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    if sep and len(body) >= length:
                        got.append(data[:len(head) + 4 + length])
                        data = data[len(head) + 4 + length:]
                        conn.sendall(REPLY)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}", got
    listener.close()


def test_the_request_carries_every_field_once_and_the_connection_is_reused(server) -> None:
    address, got = server
    session = FastHttpSession(f"http://u%40x:p%3Aw@{address}/prefix", EventHook(), None)
    post = StreamPost(session, "/v1/chat/completions", {"Content-Type": "application/json",
                                                        "authorization": "Bearer k"})
    for request_id in ("a", "b"):
        raw = post.send(b'{"x": 1}', {"X-Request-Id": request_id})
        assert raw.status_code == 200 and raw.read() == b"data:"
    assert got[0] == b"" and b"" not in got[1:]  # one connection for both
    got = got[1:]
    assert len(got) == 2
    head, _, body = got[0].partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "POST /prefix/v1/chat/completions HTTP/1.1"
    fields = [line.split(": ", 1) for line in lines[1:]]
    names = [name.lower() for name, _ in fields]
    assert len(names) == len(set(names))  # nothing twice: the user's key wins over the URL's
    values = {name.lower(): value for name, value in fields}
    assert values["host"] == address
    assert values["content-length"] == "8" and body == b'{"x": 1}'
    assert values["authorization"] == "Bearer k"
    assert values["x-request-id"] == "a" and b"X-Request-Id: b" in got[1]
    assert values["user-agent"].startswith("python/gevent-http-client")


def test_credentials_in_the_url_become_basic_auth(server) -> None:
    address, got = server
    session = FastHttpSession(f"http://u%40x:p%3Aw@{address}", EventHook(), None)
    StreamPost(session, "/v1/completions", {}).send(b"{}").read()
    got = got[1:]
    assert b"Authorization: Basic dUB4OnA6dw==\r\n" in got[0]  # base64 of "u@x:p:w"
    assert got[0].startswith(b"POST /v1/completions HTTP/1.1\r\n")


def test_through_a_plain_http_proxy_the_target_is_absolute(server) -> None:
    """The request line is geventhttpclient's own: absolute-form to a proxy."""
    address, got = server
    session = FastHttpSession("http://llm.invalid:8000", EventHook(), None,
                              proxy_host=address.split(":")[0],
                              proxy_port=int(address.split(":")[1]))
    StreamPost(session, "/v1/completions", {}).send(b"{}").read()
    got = got[1:]
    assert got[0].startswith(b"POST http://llm.invalid:8000/v1/completions HTTP/1.1\r\n")
    assert b"\r\nHost: llm.invalid:8000\r\n" in got[0]
