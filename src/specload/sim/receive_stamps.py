"""When a request really arrived: kernel receive timestamps on the server's sockets.

A busy event loop reads a request some time after its bytes reached the host (while it
writes a step's chunks to hundreds of streams, new requests wait in their sockets). That
wait is part of the latency a client sees, so the simulator's ground truth must count
it: `listen_socket` returns a listening socket whose accepted connections ask the
kernel for receive timestamps (`SO_TIMESTAMPNS`) and read through `recvmsg`, keeping
the stamp of each connection's latest read. `received_at` gives that stamp for a
transport, i.e. when the bytes of the request being handled reached the host. Where
the kernel gives no stamps (not Linux, or the option is refused) it returns None and
the caller stamps with the clock. The simulator is an island: this does not share the
load generator's reader, although both speak the same socket option.
"""

from __future__ import annotations

import contextlib
import platform
import socket
import struct
import sys
from typing import Any

# Not exported by Python's socket module; SO_TIMESTAMPNS(_OLD) in asm-generic/socket.h.
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
KERNEL_STAMPS = sys.platform == "linux" and platform.machine() in {
    "x86_64", "aarch64", "riscv64"}
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) if KERNEL_STAMPS else 0
_received: dict[int, float] = {}  # fd -> kernel time of that connection's latest read


class StampingSocket(socket.socket):
    """A connection whose reads record the kernel's receive timestamp."""

    __slots__ = ()

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, anc, _flags, _addr = self.recvmsg(bufsize, _ANC_SIZE, flags)
        self._note(anc)
        return data

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        """As asyncio's TLS transport reads (a buffered protocol), with the stamp kept."""
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        n, anc, _flags, _addr = self.recvmsg_into([view], _ANC_SIZE, flags)
        self._note(anc)
        return n

    def _note(self, anc: list[tuple[int, int, bytes]]) -> None:
        stamp = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = _TIMESPEC.unpack_from(payload)
                stamp = sec + nsec * 1e-9
        if stamp is None:
            _received.pop(self.fileno(), None)
        else:
            _received[self.fileno()] = stamp


class StampingListener(socket.socket):
    """A listening socket that hands out `StampingSocket` connections.

    The option is set on the listener (`listen_socket`): connections inherit it from
    the moment the kernel creates them, so a request that lands before a busy server
    accepts its connection is stamped as well.
    """

    __slots__ = ()

    def accept(self) -> tuple[socket.socket, Any]:
        fd, addr = self._accept()  # type: ignore[attr-defined]  # private, not in typeshed
        _received.pop(fd, None)  # a stamp of an earlier connection on this fd
        return StampingSocket(self.family, self.type, self.proto, fileno=fd), addr


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for (host, port); OSError if that fails."""
    family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                               flags=socket.AI_PASSIVE)[0]
    cls = StampingListener if KERNEL_STAMPS else socket.socket
    sock = cls(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if KERNEL_STAMPS:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.bind(addr)
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def received_at(transport: Any) -> float | None:
    """Kernel time of the latest bytes read on `transport`'s socket, if known."""
    if transport is None:
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    return _received.get(sock.fileno())
