"""A keep-alive check that does not yield, so a request leaves as soon as it is started.

geventhttpclient checks a pooled connection before reusing it with gevent's `select`
(timeout 0), which ends in `gevent.sleep(0)`: the user's greenlet goes to the back of
the run queue between its TTFT start stamp and sending the request. With hundreds of
streams in one process that wait is milliseconds (tens at p99) of client time counted
as server TTFT. `install()` replaces the check with one non-blocking `MSG_PEEK` read on
the raw socket, with the same meaning (an idle keep-alive socket has nothing to read;
readable means FIN or stray bytes) and no `select` limit on descriptor numbers (the
original also fails, and so reconnects every time, for descriptors above 1023). Over
HTTPS the TLS records waiting unread (session tickets) are fed to the TLS object first.
Imported by the user module; it only changes the process it runs in.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

from geventhttpclient.connectionpool import ConnectionPool

from specload.loadgen.tls import TLSStream

_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT


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


def install() -> None:
    """Use `socket_is_idle` for every geventhttpclient connection pool in this process."""
    ConnectionPool._is_socket_alive = staticmethod(socket_is_idle)  # type: ignore[method-assign]
