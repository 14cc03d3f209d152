"""Request arrival is when the bytes reached the host, not when the busy server read them."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from urllib.parse import urlsplit

import pytest

from specload.sim.receive_stamps import KERNEL_STAMPS, StampingSocket, listen_socket, received_at

pytestmark = pytest.mark.skipif(not KERNEL_STAMPS, reason="kernel receive timestamps: Linux")


class _Transport:
    """The one thing `received_at` asks of an asyncio transport."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> socket.socket | None:
        return self.sock if name == "socket" else None


@pytest.mark.parametrize("accept_first", [True, False], ids=["accepted", "not-yet-accepted"])
def test_stamp_is_when_bytes_arrived_not_when_read(accept_first: bool) -> None:
    listener = listen_socket("127.0.0.1", 0)
    listener.setblocking(True)
    client = socket.create_connection(listener.getsockname())
    conn = listener.accept()[0] if accept_first else None
    try:
        sent = time.time()
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        time.sleep(0.2)  # the server is busy elsewhere
        conn = conn or listener.accept()[0]
        assert isinstance(conn, StampingSocket)
        read = time.time()
        assert conn.recv(1024) == b"GET / HTTP/1.1\r\n\r\n"
        stamp = received_at(_Transport(conn))
        assert stamp is not None
        assert sent - 0.001 <= stamp <= sent + 0.05 < read
    finally:
        for s in (client, conn, listener):
            if s is not None:
                s.close()


def test_unknown_transport_has_no_stamp() -> None:
    assert received_at(None) is None
    with socket.socket() as plain:
        assert received_at(_Transport(plain)) is None


def test_trace_counts_the_time_a_request_waited_in_its_socket(sim_server) -> None:
    """The sim is frozen (SIGSTOP) while a request arrives: its TTFT must include that."""
    server = sim_server(profile="h100-llama8b-eagle3", spec="off")
    parts = urlsplit(server.url)
    body = json.dumps({"model": "meta-llama/Llama-3.1-8B-Instruct", "stream": True,
                       "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: frozen-1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            sent = time.time()
            sock.sendall(head.encode() + body.encode())
            time.sleep(0.3)
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        data = b""
        while b"data: [DONE]" not in data:
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    deadline = time.monotonic() + 10
    while not (recs := [r for r in server.read_trace() if r["request_id"] == "frozen-1"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rec = recs[0]
    assert sent - 0.001 <= rec["arrival"] <= sent + 0.05
    assert rec["first_token"] - rec["arrival"] >= 0.3
