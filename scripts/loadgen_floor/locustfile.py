"""The load generator with its per-chunk work taken out: a floor, not a client.

`scripts/bench_loadgen.py --floor` runs this next to `locustfiles/chat.py` and the
aiohttp reference. Everything a request costs is kept (Locust's users and task loop, the
start gate, the POST, the response head, Locust's statistics, the record row); only the
body's reading is replaced by the least a stamped read can be: while a response
streams, the socket's read watcher calls one small function per read, which takes
what arrived with one `recvmsg` and its kernel timestamp and keeps both. No HTTP
framing, no SSE, no JSON, no tally: each request counts as its `--max-tokens` tokens
and each read as a chunk. What this process spends per chunk is what any client built
on gevent's loop with one stamped read per chunk spends before it looks at a byte.
"""

from __future__ import annotations

import socket
from typing import Any

from gevent.hub import Waiter

from specload.loadgen import plugin, reader, users, wall_clock
from specload.loadgen.measure import StreamTally
from specload.loadgen.users import ChatStreamUser, _accept_head, _Outcome, _release

_BLOCK = 65536
_CHUNKED_END = b"0\r\n\r\n"


def _read(self: users.StreamingUser, raw: Any, tally: StreamTally, out: _Outcome) -> None:
    out.raw = raw
    if not _accept_head(raw, out):
        _release(out)
        return
    sock = raw._sock
    if not hasattr(sock, "_read_event") or not reader._KERNEL_STAMPS:
        raise SystemExit("the floor reads plain gevent sockets with kernel timestamps only")
    tcp, watcher, done = sock._sock, sock._read_event, Waiter(sock.hub)
    tcp.setsockopt(socket.SOL_SOCKET, reader._SO_TIMESTAMPNS, 1)
    reads: list[bytes] = []
    stamps: list[float] = []

    def on_readable() -> None:
        try:
            data, anc, _flags, _addr = tcp.recvmsg(_BLOCK, reader._ANC_SIZE)
        except BlockingIOError:
            return
        if anc:
            sec, nsec = reader._TIMESPEC.unpack_from(anc[0][2])
            stamps.append(sec + nsec * 1e-9)
        else:  # before the host's stamping is on (see reader._keep_stamping_on)
            stamps.append(wall_clock.now())
        reads.append(data)
        if not data or data.endswith(_CHUNKED_END):
            watcher.stop()
            done.switch(None)

    watcher.start(on_readable)
    try:
        done.get()
    finally:
        watcher.stop()
    reader._feed(raw, b"".join(reads))  # the parser sees the body end: the socket is reused
    raw._body_buffer.clear()
    opts = self.ctx.opts if self.ctx is not None else None
    tally.arrivals = stamps
    tally.first_text = stamps[0] if stamps else None
    tally._final_tokens = opts.max_tokens if opts is not None else len(stamps)
    tally.finish_reason = "length"


users.StreamingUser._read = _read  # type: ignore[method-assign]
plugin.install()

__all__ = ["ChatStreamUser"]
