"""HTTPS for the streaming users, with the same kernel receive timestamps as plain HTTP.

An `ssl.SSLSocket` reads the TCP socket inside OpenSSL, so no receive timestamp can be
asked for, and reading the TCP socket beside it would read ciphertext. Here TLS runs
in memory instead (`ssl.MemoryBIO` + `SSLObject`): `TLSStream` reads ciphertext from
the TCP socket itself (the line reader does so with `recvmsg`, keeping the kernel's
stamp of when the bytes arrived), feeds it to the TLS object and hands out plaintext;
writes go the other way. geventhttpclient sees a socket-like object (`sendall`,
`recv`, `close`, timeouts) and never knows the difference.

`context_factory(ca_bundle, insecure)` is what a user sets as its
`ssl_context_factory`: verification is on by default against the system CAs
(`SSL_CERT_FILE` honoured, as geventhttpclient passes its default bundle in), or
against `--ca-bundle`; `--insecure` turns it off.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

CIPHER_BLOCK = 65536  # bytes of ciphertext read at once (several TLS records)


class TLSStream:
    """A client TLS connection over a gevent TCP socket, TLS done in memory."""

    __slots__ = ("incoming", "obj", "outgoing", "tcp")

    def __init__(self, tcp: Any, obj: ssl.SSLObject, incoming: ssl.MemoryBIO,
                 outgoing: ssl.MemoryBIO) -> None:
        self.tcp = tcp  # gevent socket: cooperative, honours its timeout
        self.obj = obj
        self.incoming = incoming
        self.outgoing = outgoing

    # -- what geventhttpclient and the keep-alive check use ------------------------------

    @property
    def _sock(self) -> Any:
        """The OS-level socket (the keep-alive check peeks at it)."""
        return self.tcp._sock

    @property
    def timeout(self) -> float | None:
        return self.tcp.timeout

    def settimeout(self, value: float | None) -> None:
        self.tcp.settimeout(value)

    def gettimeout(self) -> float | None:
        return self.tcp.gettimeout()

    def fileno(self) -> int:
        return self.tcp.fileno()

    def setsockopt(self, *args: Any) -> None:
        self.tcp.setsockopt(*args)

    def close(self) -> None:
        self.tcp.close()

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = self.obj.write(view)
            view = view[n:]
            self.flush()

    def recv(self, size: int) -> bytes:
        """Plaintext; b"" at the end of the stream."""
        return self.read_plain(size, lambda: self.tcp.recv(CIPHER_BLOCK))

    # -- TLS in memory --------------------------------------------------------------------

    def flush(self) -> None:
        """Send whatever ciphertext the TLS object has produced."""
        pending = self.outgoing.read()
        if pending:
            self.tcp.sendall(pending)

    def read_plain(self, size: int, read_cipher: Callable[[], bytes]) -> bytes:
        """Plaintext already decrypted, else ciphertext from `read_cipher` until some is."""
        while True:
            try:
                return self.obj.read(size)
            except ssl.SSLWantReadError:
                self.flush()
                data = read_cipher()
                if not data:
                    self.incoming.write_eof()
                    return b""
                self.incoming.write(data)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""  # close_notify, or a peer that just closed (ragged EOF)

    def handshake(self) -> None:
        while True:
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                self.flush()
                data = self.tcp.recv(CIPHER_BLOCK)
                if not data:
                    raise ConnectionResetError(
                        "connection closed during the TLS handshake") from None
                self.incoming.write(data)
            else:
                self.flush()
                return


class StampingTLSContext(ssl.SSLContext):
    """An SSLContext whose `wrap_socket` gives a `TLSStream` (TLS in memory)."""

    # narrower than SSLContext's: geventhttpclient passes the socket and the host only
    def wrap_socket(self, sock: Any, server_hostname: str | None = None,  # type: ignore[override]
                    **_: Any) -> TLSStream:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = self.wrap_bio(incoming, outgoing, server_side=False,
                            server_hostname=server_hostname)
        stream = TLSStream(sock, obj, incoming, outgoing)
        stream.handshake()
        return stream


def context_factory(ca_bundle: str | None, insecure: bool) -> Callable[..., ssl.SSLContext]:
    """An `ssl_context_factory` for geventhttpclient (called with its default CA bundle)."""

    def make(cafile: str | None = None, **_: Any) -> ssl.SSLContext:
        ctx = StampingTLSContext(ssl.PROTOCOL_TLS_CLIENT)
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_bundle or cafile:
            ctx.load_verify_locations(cafile=ca_bundle or cafile)
        else:
            ctx.load_default_certs()
        return ctx

    return make
