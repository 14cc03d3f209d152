"""One streaming POST on a user's pooled connection, without Locust's session layers.

Locust's `FastHttpSession.post` passes each request through geventhttpclient's
`UserAgent` (retries, redirects, cookies, a compatibility request object), Locust's
response wrappers and `HTTPClient.request` (header dictionaries merged, checked and
rendered anew) before a byte is sent. For a load process sending hundreds of requests a
second that costs more CPU than reading the streams. `StreamPost` renders the request
head once per user (the request line and fields geventhttpclient would send, taken
from its own `_build_request`, plus the user's) and sends each request in one write,
on a connection from the same geventhttpclient pool, so the pool's timeouts, TLS
context, proxy and `keepalive.get_socket` reuse rules all apply. The response head is
read by geventhttpclient's parser as before. A streamed completion needs no redirects,
retries or cookies; the keep-alive close race is resent by the caller
(`keepalive.is_close_race`).
"""

from __future__ import annotations

import errno
from typing import Any

from geventhttpclient.response import HTTPSocketPoolResponse
from geventhttpclient.url import URL

from specload.loadgen.reader import read_timer, wait_readable
from specload.loadgen.tls import TLSStream


class HeadKeepingResponse(HTTPSocketPoolResponse):
    """geventhttpclient's pooled response, keeping the bytes its head came in with: the
    reader needs them to know where a chunked body's framing stands when it takes over
    (`chunked.head_ends_between_chunks`)."""

    head_bytes = b""

    # geventhttpclient hints `str | bytes`; its connection feeds the socket's bytes only
    def feed(self, data: bytes) -> None:  # type: ignore[override]
        if not self.headers_complete:
            self.head_bytes += data
        super().feed(data)


class StreamPost:
    """POSTs of one user to one URL; `send(body, extra)` returns the response head read."""

    __slots__ = ("_block_size", "_head", "_headers_type", "_pool", "timer")

    def __init__(self, session: Any, path: str, headers: dict[str, str]) -> None:
        url = URL(session.base_url + path)
        client = session.client.clientpool.get_client(url)
        self._pool = client._connection_pool
        self._block_size = client.block_size
        self._headers_type = client.headers_type
        target = getattr(url, "quoted_uri", url.request_uri)
        # the request line (absolute through a plain-HTTP proxy) and default fields
        request_line, *default = client._build_request(
            "POST", target, body=None, headers=None).split("\r\n")
        fields: dict[str, tuple[str, str]] = {}  # by lower-case name: later ones win
        for line in default:
            name, sep, value = line.partition(": ")
            if sep and name.lower() != "content-length":
                fields[name.lower()] = (name, value)
        if session.auth_header:
            fields["authorization"] = ("Authorization", session.auth_header)
        fields.update((name.lower(), (name, value)) for name, value in headers.items())
        head = f"{request_line}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.values())
        self._head = head.encode("latin-1")
        # the user's one libev timer for its socket reads (reader.read_timer): the wait on
        # the head here, and the between-chunks timeout of the reader it hands it to
        self.timer: Any = None

    def send(self, body: bytes, extra: dict[str, str] | None = None) -> HeadKeepingResponse:
        """Send one request (with `extra` header fields) and read its response head.

        Raises what connecting, sending or reading the head raised.
        """
        head = self._head
        if extra:
            head += "".join(f"{k}: {v}\r\n" for k, v in extra.items()).encode("latin-1")
        request = b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)
        pool = self._pool
        sock = pool.get_socket()
        try:
            sock.sendall(request)
        except OSError as exc:
            if exc.errno not in (errno.ECONNRESET, errno.EPIPE):
                pool.release_socket(sock)
                raise
            # the server may have answered (a 401 on the head) and closed before the body
            # was in: its response is worth more than the broken pipe, if there is one
        else:
            self._await_head(sock, pool)
        return HeadKeepingResponse(sock, pool, block_size=self._block_size, method="POST",
                                   headers_type=self._headers_type)

    def _await_head(self, sock: Any, pool: Any) -> None:
        """Wait for the response's first bytes the cheap way (gevent's `recv` would fail,
        raise, build a `Timeout` and wait); the parser's read then finds them."""
        tcp = sock.tcp if isinstance(sock, TLSStream) else sock
        if not hasattr(tcp, "_read_event"):
            return
        if self.timer is None:
            self.timer = read_timer(tcp)
        try:
            wait_readable(tcp, self.timer)
        except BaseException:
            pool.release_socket(sock)
            raise
