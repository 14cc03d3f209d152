"""Line-by-line reading of a streamed HTTP body, each line stamped with its arrival time.

`LineReader` wraps a geventhttpclient response (`http_post.StreamPost`'s) and hands
out body lines as soon as they are in the socket buffer — the same logic as
geventhttpclient's own `readline`, whose internals it uses (`_sock`, `_body_buffer`,
the parser's `feed`, `message_complete`). The difference is the timestamp: on Linux
(64-bit, generic socket ABI) it asks the kernel for receive timestamps
(`SO_TIMESTAMPNS` through `recvmsg`), so a chunk's arrival time is when its packet
reached the host, not when the busy gevent loop got round to this user. That keeps
TTFT and ITL honest when many users share one process. Elsewhere, or if the option is
refused, it stamps with the process's clock (`wall_clock.now()`) after each read.
Stamps are epoch seconds on the process's clock (kernel stamps are moved by the test
seam's `wall_clock.SHIFT_S` like every other stamp); bytes already buffered when reading
starts carry the reader's creation time.

Cost per chunk matters (one load process streams thousands of chunks a second), so a
response is read by `pump`: the socket's read watcher stays started for the whole
response and its callback, in the event loop's own greenlet, reads, stamps and hands
every complete line to the caller's `on_lines`; the reading greenlet sleeps once per
response instead of being switched to and from twice per chunk. `readline` and
`readlines` are the blocking form, for the few bytes after `[DONE]` and for plain
sockets: they wait for readability *before* reading when the previous read did not fill
its buffer (gevent's own `recv` would first fail with EAGAIN, raise and catch that
error, and build a fresh `Timeout` for every wait). Either way the between-chunks
timeout is one libev timer per reader, restarted with `again` (after = repeat = the
timeout): a gevent `Timeout` or timer stopped and started again keeps its first deadline
(gevent 26.9's libev loop), which made the timeout count from the first wait of the
response, not from the last chunk. Lines are handed out as every complete line already
buffered in one piece (an SSE event and its blank line), so the decoder sees one call
per event, not two. A chunked body whose reads each hold whole chunks of whole lines (one
SSE event per chunk, as servers write them) skips the HTTP parser: each chunk's payload
is handed on as it is (`chunked.whole_chunks`), while the parser, which saw the head and
stands between two chunks, waits for the first read that holds anything else, and then
reads the rest of the response.

Over HTTPS the connection is a `tls.TLSStream`: the reader reads its ciphertext from the
TCP socket the same way (stamped) and takes the plaintext from the in-memory TLS
object, so HTTPS keeps the kernel's stamps.
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any

from gevent import getcurrent
from gevent.hub import Waiter
from geventhttpclient._parser import HTTPResponseParser
from geventhttpclient.response import HTTPConnectionClosed

from specload.loadgen import wall_clock
from specload.loadgen.chunked import head_ends_between_chunks, whole_chunks
from specload.loadgen.tls import CIPHER_BLOCK, TLSStream

# Not exported by Python's socket module; SO_TIMESTAMPNS(_OLD) in asm-generic/socket.h.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")
_KERNEL_STAMPS = sys.platform == "linux" and platform.machine() in {
    "x86_64", "aarch64", "riscv64"}
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) if _KERNEL_STAMPS else 0
# The HTTP parser's own `feed`, in C: geventhttpclient's Python override only mends
# bodies sent after a HEAD response's head, and a stream is never one.
_feed = HTTPResponseParser.feed


def _keep_stamping_on() -> socket.socket | None:
    """A socket holding receive timestamps on for the life of the process.

    Linux switches receive timestamping on for the whole host lazily: when the first
    socket asks (and none has it), the switch is a deferred work item, and packets that
    land before it has run carry no stamp, so their lines would get read-time stamps.
    With one socket keeping the option on, every later `setsockopt` takes effect at once.
    """
    if not _KERNEL_STAMPS:
        return None
    try:
        keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        return None
    try:
        keeper.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        keeper.close()
        return None
    return keeper


_STAMPING_KEEPER = _keep_stamping_on()


class LineReader:
    """Reads LF-terminated lines of one response body with their arrival times."""

    __slots__ = ("_full", "_gevent", "_kernel", "_tcp", "_timer", "_tls", "last_stamp", "raw")

    def __init__(self, raw: Any, timer: Any = None) -> None:
        """`timer`: a `read_timer` of the connection's socket to reuse (one is made
        otherwise)."""
        self.raw = raw
        self.last_stamp = wall_clock.now()
        self._kernel = False
        self._full = False  # the last read filled its buffer: more is probably waiting
        sock = raw._sock
        self._tls: TLSStream | None = None
        if isinstance(sock, TLSStream):
            self._tls, sock = sock, sock.tcp
        # a gevent socket: wait on its read watcher ourselves (see the module docstring)
        self._gevent = sock is not None and hasattr(sock, "_read_event")
        self._timer: Any = (timer or read_timer(sock)) if self._gevent else None
        # the socket reads go to: under gevent's, the real one, which never waits
        self._tcp: Any = sock._sock if self._gevent else sock
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
        buf = self._fill()
        if not buf:
            return b"", self.last_stamp
        end = buf.find(b"\n") + 1
        line = bytes(buf[:end])
        del buf[:end]
        return line, self.last_stamp

    def readlines(self) -> tuple[bytes, float]:
        """Every complete line buffered (at least one; b"" at the end) and their stamp."""
        buf = self._fill()
        return (_cut_lines(buf) if buf else b""), self.last_stamp

    def pump(self, on_lines: Callable[[bytes, float], bool]) -> None:
        """Hand every complete line to `on_lines(lines, stamp)` as it arrives, until it
        returns True or the body ends.

        Raises what reading raised (`TimeoutError` between chunks, `OSError`,
        `HTTPParseError`) or what `on_lines` raised. On a gevent socket the reads run in
        the event loop's callbacks and the calling greenlet sleeps until the end.
        """
        if not self._gevent:
            while True:
                lines, stamp = self.readlines()
                if not lines or on_lines(lines, stamp):
                    return
        _Pump(self, on_lines, self._socket()).run()

    def _between_chunks(self) -> bool:
        """Whether reads of whole chunks may skip the HTTP parser (`_Pump._read_whole`): a
        chunked body over plain TCP whose parser stands between two chunks, no line begun."""
        raw = self.raw
        return (self._tls is None and not raw._body_buffer and not raw.message_complete
                and head_ends_between_chunks(getattr(raw, "head_bytes", b""),
                                             raw.get("transfer-encoding")))

    def _socket(self) -> Any:
        """The TCP socket the body comes in on (under TLS, the one under it)."""
        return self._tls.tcp if self._tls is not None else self.raw._sock

    def _fill(self) -> bytearray:
        """The body buffer once it holds a complete line (waiting for it); empty at the
        end of the body."""
        buf = self.raw._body_buffer
        read = not self._gevent or self._more_waiting()
        while True:
            got = self._gather(read)
            if got:
                return buf
            if got is None:
                return bytearray()
            self._wait(self._socket())
            read = True

    def _gather(self, read: bool) -> bool | None:
        """Whether a complete line is buffered, reading what has arrived if `read` and
        none is (a blocking socket: waiting for it); None at the end of the body."""
        raw = self.raw
        buf = raw._body_buffer
        tls = self._tls
        while buf.find(b"\n") < 0:
            if raw.message_complete:
                return None
            if raw._sock is None:
                raise HTTPConnectionClosed("connection closed.")
            if not read:
                return False
            try:
                if tls is None:
                    _feed(raw, self._take(self._tcp, raw.block_size))
                else:
                    _feed(raw, tls.read_plain(raw.block_size,
                                              lambda: self._take(self._tcp, CIPHER_BLOCK)))
            except BlockingIOError:  # nothing has arrived (a gevent socket)
                return False
            except BaseException:
                raw.release()
                raise
            read = self._more_waiting()
        return True

    def _more_waiting(self) -> bool:
        """Whether a read now probably finds more: the last one filled its buffer, or
        TLS holds decrypted bytes (or a partial record) the socket will not signal."""
        tls = self._tls
        return self._full or (tls is not None and bool(tls.obj.pending() or tls.incoming.pending))

    def _take(self, sock: Any, size: int) -> bytes:
        """One read of what the socket holds (BlockingIOError if nothing), stamped."""
        if self._kernel:
            data, anc, _flags, _addr = sock.recvmsg(size, _ANC_SIZE)
            self._full = len(data) == size
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
                    sec, nsec = _TIMESPEC.unpack_from(payload)
                    self.last_stamp = sec + nsec * 1e-9 + wall_clock.SHIFT_S
                    return data
        else:
            data = sock.recv(size)
            self._full = len(data) == size
        self.last_stamp = wall_clock.now()
        return data

    def _wait(self, sock: Any) -> None:
        wait_readable(sock, self._timer)

def _cut_lines(buf: bytearray) -> bytes:
    """Every complete line at the start of `buf`, taken out of it."""
    end = buf.rfind(b"\n") + 1
    if end == len(buf):
        lines = bytes(buf)
        buf.clear()
    else:
        lines = bytes(buf[:end])
        del buf[:end]
    return lines


def read_timer(sock: Any) -> Any:
    """The libev timer `wait_readable` and `LineReader` restart for a gevent socket's
    reads: after = repeat = its timeout (None: the socket has none)."""
    if sock.timeout is None:
        return None
    return sock.hub.loop.timer(sock.timeout, sock.timeout)


def wait_readable(sock: Any, timer: Any) -> None:
    """Block this greenlet until the gevent socket `sock` is readable; TimeoutError after
    `timer`'s interval (a `read_timer`; None: no timeout). Cheaper than gevent's own
    wait, which builds a `Timeout` each time."""
    if timer is None:
        sock.hub.wait(sock._read_event)
        return
    timer.again(getcurrent().throw, TimeoutError("timed out"))
    try:
        sock.hub.wait(sock._read_event)
    finally:
        timer.stop()


class _Pump:
    """One response's reads, run by the event loop's callbacks (`LineReader.pump`).

    A greenlet that waits for each chunk pays two switches, a watcher start and stop and
    a timer restart per chunk; here the socket's read watcher stays started, its callback
    reads and hands lines on in the loop's own greenlet, and the reading greenlet is
    switched to once, when the response ends, fails or times out.
    """

    __slots__ = ("_ended", "_on_lines", "_reader", "_timer", "_waiter", "_watcher")

    def __init__(self, reader: LineReader, on_lines: Callable[[bytes, float], bool],
                 sock: Any) -> None:
        self._reader = reader
        self._on_lines = on_lines
        self._watcher = sock._read_event
        self._timer = reader._timer
        self._waiter = Waiter(sock.hub)
        self._ended = False

    def run(self) -> None:
        self._step(read=False)  # lines that came in with the headers
        if not self._ended:
            if self._reader._between_chunks():
                self._watcher.start(self._read_whole)
            else:
                self._watcher.start(self._step, True)
            if self._timer is not None:
                self._timer.again(self._time_out)
        try:
            self._waiter.get()
        finally:
            self._stop()

    def _step(self, read: bool) -> None:
        reader = self._reader
        raw = reader.raw
        try:
            got = reader._gather(read)
            while got:
                if self._on_lines(_cut_lines(raw._body_buffer), reader.last_stamp):
                    self._end(None)
                    return
                # every complete line was taken: more only from the socket, or the end
                more = reader._more_waiting()
                if not (more or raw.message_complete):
                    break
                got = reader._gather(more)
        except BaseException as exc:
            self._end(exc)
            return
        if got is None:
            self._end(None)
        elif read and self._timer is not None:
            self._timer.again(self._time_out)

    def _read_whole(self) -> None:
        """One read while the body's reads have held whole chunks (`chunked.whole_chunks`):
        their payloads go to `on_lines` as they are, without the HTTP parser. Anything
        else (a chunk cut between reads, the body's end, a read that filled its buffer)
        goes to the parser as `_step` reads, and so does the rest of the response."""
        reader = self._reader
        raw = reader.raw
        try:
            data = reader._take(reader._tcp, raw.block_size)
        except BlockingIOError:
            return
        except BaseException as exc:
            raw.release()
            self._end(exc)
            return
        payloads = None if reader._full else whole_chunks(data)
        if payloads is None:
            self._watcher.stop()
            self._watcher.start(self._step, True)
            try:
                _feed(raw, data)
            except BaseException as exc:
                raw.release()
                self._end(exc)
                return
            self._step(read=False)
            if not self._ended and self._timer is not None:
                self._timer.again(self._time_out)
            return
        stamp, on_lines = reader.last_stamp, self._on_lines
        try:
            for payload in payloads:
                if on_lines(payload, stamp):
                    self._end(None)
                    return
        except BaseException as exc:
            self._end(exc)
            return
        if self._timer is not None:
            self._timer.again(self._time_out)

    def _time_out(self) -> None:
        self._end(TimeoutError("timed out"))

    def _end(self, exc: BaseException | None) -> None:
        self._ended = True
        self._stop()
        if exc is None:
            self._waiter.switch(None)
        else:
            self._waiter.throw(exc)

    def _stop(self) -> None:
        self._watcher.stop()
        if self._timer is not None:
            self._timer.stop()
