"""Line-by-line reading of a streamed HTTP body, each line stamped with its arrival time.

`LineReader` wraps the geventhttpclient response behind Locust's `FastHttpSession`
(`response._response`) and returns one body line at a time as soon as it is in the
socket buffer — the same logic as geventhttpclient's own `readline`, whose internals it
uses (`_sock`, `_body_buffer`, `feed`, `message_complete`). The difference is the
timestamp: on Linux (64-bit, generic socket ABI) it asks the kernel for receive
timestamps (`SO_TIMESTAMPNS` through `recvmsg`), so a chunk's arrival time is when its
packet reached the host, not when the busy gevent loop got round to this user. That
keeps TTFT and ITL honest when many users share one process. Elsewhere, or if the
option is refused, it stamps with `time.time()` after each read. Stamps are epoch
seconds; bytes already buffered when reading starts carry the reader's creation time.
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
import time
from typing import Any

from geventhttpclient.response import HTTPConnectionClosed

# Not exported by Python's socket module; SO_TIMESTAMPNS(_OLD) in asm-generic/socket.h.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
_KERNEL_STAMPS = sys.platform == "linux" and platform.machine() in {
    "x86_64", "aarch64", "riscv64"}
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) if _KERNEL_STAMPS else 0


class LineReader:
    """Reads LF-terminated lines of one response body with their arrival times."""

    __slots__ = ("_kernel", "last_stamp", "raw")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.last_stamp = time.time()
        self._kernel = False
        sock = raw._sock
        if _KERNEL_STAMPS and sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                self._kernel = True
            except OSError:
                pass

    @property
    def kernel_stamps(self) -> bool:
        return self._kernel

    def readline(self) -> tuple[bytes, float]:
        """The next line (b"" at the end of the body) and when its last bytes arrived."""
        raw = self.raw
        buf = raw._body_buffer
        while True:
            end = buf.find(b"\n")
            if end >= 0:
                line = bytes(buf[: end + 1])
                del buf[: end + 1]
                return line, self.last_stamp
            if raw.message_complete:
                return b"", self.last_stamp
            sock = raw._sock
            if sock is None:
                raise HTTPConnectionClosed("connection closed.")
            try:
                data = self._recv(sock, raw.block_size)
                raw.feed(data)
            except BaseException:
                raw.release()
                raise

    def _recv(self, sock: Any, size: int) -> bytes:
        if not self._kernel:
            data = sock.recv(size)
            self.last_stamp = time.time()
            return data
        data, ancdata, _flags, _addr = sock.recvmsg(size, _ANC_SIZE)
        stamp = None
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                sec, nsec = _TIMESPEC.unpack_from(payload)
                stamp = sec + nsec * 1e-9
        self.last_stamp = stamp if stamp is not None else time.time()
        return data
