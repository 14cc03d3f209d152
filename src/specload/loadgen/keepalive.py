"""Connection reuse as real clients do it: a check that does not yield, and the close race.

geventhttpclient checks a pooled connection before reusing it with gevent's `select`
(timeout 0), which ends in `gevent.sleep(0)`: the user's greenlet goes to the back of
the run queue between its TTFT start stamp and sending the request. With hundreds of
streams in one process that wait is milliseconds (tens at p99) of client time counted
as server TTFT. `install()` replaces the pool's `get_socket` with one whose check is a
non-blocking `MSG_PEEK` read on the raw socket, with the same meaning (an idle
keep-alive socket has nothing to read; readable means FIN or stray bytes) and no
`select` limit on descriptor numbers. Over HTTPS the TLS records waiting unread
(session tickets) are fed to the TLS object first.

The check cannot see a FIN that is still on its way. llama.cpp's server closes the
connection right after every streamed response while it answers with keep-alive
headers (tools/server/server-http.cpp: the chunked content provider returns `has_next`,
false, after `sink.done()`; cpp-httplib's `write_content_chunked` takes a provider's
false for `Error::Canceled` and the connection is closed), so a request sent on the
pooled connection meets the close before any response byte: the classic keep-alive
race. geventhttpclient resends only idempotent methods (RFC 9110 section 9.2.2); a
connection closed before any byte of the response means the server never took the
request, so the user sends it again once, on a new connection (`is_close_race`,
`fresh_connection`). `REUSE` learns per host: after `CLOSED_IN_A_ROW` pooled
connections found closed (by the check or by the race) with no successful reuse in
between, that host is no longer offered reused connections in this process, so no
request pays the extra round trip. Which socket a request got is kept per greenlet
(one user, one request at a time). Patches only the process that calls `install()`.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import gevent.local
import gevent.queue
from geventhttpclient.connectionpool import ConnectionPool
from geventhttpclient.response import HTTPConnectionClosed

from specload.loadgen.tls import TLSStream

_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT
# Errors of a request whose reused connection was closed before any response byte: the
# parser's "connection closed." (no byte read, or a reset before one), or a send that
# broke because the peer had already gone.
_CLOSED_ERRORS = (HTTPConnectionClosed, BrokenPipeError, ConnectionResetError)
CLOSED_IN_A_ROW = 2

HostKey = tuple[str, int]


class ReusePolicy:
    """Per host: whether pooled connections are still offered for reuse."""

    __slots__ = ("_closed", "_never")

    def __init__(self) -> None:
        self._closed: dict[HostKey, int] = {}
        self._never: set[HostKey] = set()

    def offers(self, host: HostKey) -> bool:
        return host not in self._never

    def found_closed(self, host: HostKey) -> None:
        """A pooled connection to `host` was closed when a request wanted it."""
        n = self._closed.get(host, 0) + 1
        self._closed[host] = n
        if n >= CLOSED_IN_A_ROW:
            self._never.add(host)

    def reused(self, host: HostKey) -> None:
        """A reused connection to `host` carried a response."""
        self._closed[host] = 0


REUSE = ReusePolicy()


class _Handed(gevent.local.local):
    """What `get_socket` last handed this greenlet, and whether it must be new."""

    reused = False
    host: HostKey = ("", 0)
    fresh_only = False


_HANDED = _Handed()


def socket_is_idle(sock: Any) -> bool:
    """True when a pooled connection is open and has nothing unread (safe to reuse)."""
    if sock is None:
        return False
    if isinstance(sock, TLSStream):
        return tls_is_idle(sock)
    raw = getattr(sock, "_sock", sock)  # gevent socket -> the real one, never blocks
    try:
        if raw.fileno() < 0:
            return False
        raw.recv(1, _PEEK)
    except BlockingIOError:
        return True  # nothing to read: an idle, open connection
    except (OSError, ValueError):
        return False
    return False  # b"" (peer closed) or unexpected bytes


def tls_is_idle(stream: TLSStream) -> bool:
    """A TLS connection is idle when what waits unread is TLS housekeeping only.

    A TLS 1.3 server sends session tickets after the handshake; they sit in the socket
    until the next read, and a bare peek would take them for stray bytes and reconnect
    (a new handshake per request). They are fed to the TLS object here instead: idle
    as long as no application data and no end of stream comes out.
    """
    raw = stream._sock
    try:
        if raw.fileno() < 0:
            return False
        while True:
            data = raw.recv(65536, socket.MSG_DONTWAIT)
            if not data:
                return False  # peer closed
            stream.incoming.write(data)
    except BlockingIOError:
        pass
    except (OSError, ValueError):
        return False
    try:
        return not stream.obj.read(1)
    except ssl.SSLWantReadError:
        return True
    except (ssl.SSLError, OSError):
        return False


def _close(sock: Any) -> None:
    with contextlib.suppress(Exception):
        sock.close()


def get_socket(pool: ConnectionPool) -> Any:
    """geventhttpclient 2.6's `ConnectionPool.get_socket` with this module's reuse rules."""
    pool._semaphore.acquire()
    if pool._closed:
        raise RuntimeError("connection pool closed")
    host = (pool._request_host, pool._request_port)
    offer = REUSE.offers(host) and not _HANDED.fresh_only
    _HANDED.host = host
    while not pool._socket_queue.empty():
        try:
            sock = pool._socket_queue.get(block=False)
        except gevent.queue.Empty:
            break
        if offer and socket_is_idle(sock):
            _HANDED.reused = True
            return sock
        if offer:
            REUSE.found_closed(host)
        _close(sock)
    _HANDED.reused = False
    try:
        return pool._create_socket()
    except BaseException:
        pool._semaphore.release()
        raise


def is_close_race(error: BaseException) -> bool:
    """True when a request failed with `error` on a reused connection closed before any
    response byte (and `REUSE` is told)."""
    if _HANDED.reused and isinstance(error, _CLOSED_ERRORS):
        REUSE.found_closed(_HANDED.host)
        return True
    return False


def head_arrived() -> None:
    """A request's response head arrived: a reused connection carried it (`REUSE`)."""
    if _HANDED.reused:
        REUSE.reused(_HANDED.host)


@contextlib.contextmanager
def fresh_connection() -> Iterator[None]:
    """Requests of this greenlet inside the block get a new connection."""
    _HANDED.fresh_only = True
    try:
        yield
    finally:
        _HANDED.fresh_only = False


def install() -> None:
    """Use this module's `get_socket` for every geventhttpclient pool in this process."""
    # patching a library's class: the types are the library's methods', on purpose
    ConnectionPool.get_socket = get_socket  # type: ignore[method-assign,assignment]
    ConnectionPool._is_socket_alive = staticmethod(  # type: ignore[method-assign,assignment]
        socket_is_idle)
