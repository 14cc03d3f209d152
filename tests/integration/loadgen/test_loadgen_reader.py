"""LineReader on a real loopback TCP connection: lines as they arrive, with arrival stamps."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from geventhttpclient._parser import HTTPParseError
from geventhttpclient.response import HTTPSocketResponse

from specload.loadgen.reader import _KERNEL_STAMPS, LineReader

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.fixture
def conn() -> Iterator[tuple[socket.socket, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    with client, server:
        yield client, server


def test_lines_split_across_reads_with_stamps(conn) -> None:
    client, server = conn
    server.sendall(HEAD + chunk(b"data: a\n"))
    reader = LineReader(HTTPSocketResponse(client))
    assert reader.kernel_stamps == _KERNEL_STAMPS
    first, _ = reader.readline()
    assert first == b"data: a\n"

    server.sendall(chunk(b"data: {\"x\""))
    time.sleep(0.05)  # the second half of the line arrives clearly later
    before_tail = time.time()
    server.sendall(chunk(b": 1}\n\n"))
    line, stamp = reader.readline()
    after = time.time()
    assert line == b'data: {"x": 1}\n'
    assert before_tail <= stamp <= after
    assert reader.readline()[0] == b"\n"

    server.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    assert reader.readline()[0] == b"data: [DONE]\n"
    assert reader.readline()[0] == b"\n"
    assert reader.readline()[0] == b""


@pytest.mark.timing
@pytest.mark.flaky(reruns=1)  # reader's keeper socket: stamping is on before this runs
def test_kernel_stamp_is_arrival_not_read_time(conn) -> None:
    if not _KERNEL_STAMPS:
        pytest.skip("kernel receive timestamps are Linux-only")
    client, server = conn
    server.sendall(HEAD)
    reader = LineReader(HTTPSocketResponse(client))
    sent = time.time()
    server.sendall(chunk(b"data: late read\n"))
    time.sleep(0.2)  # the line sits in the kernel buffer before we read it
    line, stamp = reader.readline()
    assert line == b"data: late read\n"
    assert sent <= stamp < sent + 0.1


def test_connection_closed_mid_body_raises(conn) -> None:
    client, server = conn
    server.sendall(HEAD + chunk(b"data: partial"))
    reader = LineReader(HTTPSocketResponse(client))
    server.close()
    with pytest.raises((HTTPParseError, OSError)):  # what users.py reports as stream_cut
        reader.readline()
    assert reader.raw._sock is None  # released


def test_readlines_on_a_gevent_socket_gives_buffered_lines_and_times_out() -> None:
    from gevent import socket as gsocket

    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = gsocket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    with client, server:
        client.settimeout(0.3)
        server.sendall(HEAD + chunk(b"data: a\n\ndata: b\n\ndata: c"))
        reader = LineReader(HTTPSocketResponse(client))
        lines, _ = reader.readlines()
        assert lines == b"data: a\n\ndata: b\n\n"  # the unterminated line stays buffered
        sent = time.time()
        server.sendall(chunk(b"\n\n"))
        lines, stamp = reader.readlines()
        assert lines == b"data: c\n\n" and sent <= stamp < sent + 0.1
        started = time.monotonic()
        with pytest.raises(TimeoutError):  # nothing more arrives: the socket's timeout
            reader.readlines()
        assert 0.25 <= time.monotonic() - started < 5.0


def test_the_between_chunks_timeout_counts_from_the_last_chunk() -> None:
    """A stream whose chunks keep coming, each well inside the timeout, never times out,
    however long it lasts: 12 chunks 0.05 s apart under a 0.2 s timeout. (A gevent
    Timeout stopped and started again for each wait kept its first deadline: the reader
    timed out 0.2 s after its first wait, with every chunk on time; a soak's 250 users
    lost 0.8% of their requests so at a 1.5 s timeout.)"""
    import gevent
    from gevent import socket as gsocket

    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = gsocket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    with client, server:
        client.settimeout(0.2)
        server.sendall(HEAD)

        def stream() -> None:
            for i in range(12):
                gevent.sleep(0.05)
                server.sendall(chunk(b"data: %d\n\n" % i))

        sender = gevent.spawn(stream)
        reader = LineReader(HTTPSocketResponse(client))
        got = [reader.readlines()[0] for _ in range(12)]
        sender.join()
        assert got == [b"data: %d\n\n" % i for i in range(12)]
        started = time.monotonic()
        with pytest.raises(TimeoutError):  # and a silence still times out
            reader.readlines()
        assert 0.15 <= time.monotonic() - started < 2.0


def _gevent_conn(timeout: float) -> tuple[object, socket.socket, socket.socket]:
    from gevent import socket as gsocket

    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = gsocket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    client.settimeout(timeout)
    return client, server, listener


def test_pump_hands_on_lines_from_the_loop_until_told_to_stop() -> None:
    """The reads run in the event loop's callbacks: 12 chunks 0.05 s apart under a
    0.2 s timeout arrive whole and stamped, the timeout restarting at each; lines that
    came with the head go first; `on_lines` returning True ends the pump."""
    import gevent

    client, server, _ = _gevent_conn(0.2)
    with client, server:
        server.sendall(HEAD + chunk(b"data: head\n\n"))

        def stream() -> None:
            for i in range(12):
                gevent.sleep(0.05)
                server.sendall(chunk(b"data: %d\n\n" % i))
            server.sendall(chunk(b"data: [DONE]\n\n"))

        got: list[tuple[bytes, float]] = []

        def on_lines(lines: bytes, stamp: float) -> bool:
            got.append((lines, stamp))
            return b"[DONE]" in lines

        sender = gevent.spawn(stream)
        started = time.time()
        LineReader(HTTPSocketResponse(client)).pump(on_lines)
        sender.join()
        assert got[0][0] == b"data: head\n\n"
        assert b"".join(lines for lines, _ in got) == (
            b"data: head\n\n" + b"".join(b"data: %d\n\n" % i for i in range(12))
            + b"data: [DONE]\n\n")
        assert len(got) >= 13  # one call per chunk: they came 0.05 s apart
        stamps = [stamp for _, stamp in got[1:]]
        assert stamps == sorted(stamps) and started + 0.5 <= stamps[-1] <= time.time()


def test_pump_returns_at_the_body_end_and_times_out_on_silence() -> None:
    client, server, _ = _gevent_conn(0.2)
    with client, server:
        server.sendall(HEAD + chunk(b"data: a\n\n") + b"0\r\n\r\n")
        got: list[bytes] = []
        LineReader(HTTPSocketResponse(client)).pump(lambda lines, _: got.append(lines) or False)
        assert got == [b"data: a\n\n"]

    client, server, _ = _gevent_conn(0.2)
    with client, server:
        server.sendall(HEAD + chunk(b"data: a"))
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            LineReader(HTTPSocketResponse(client)).pump(lambda lines, _: False)
        assert 0.15 <= time.monotonic() - started < 2.0


def test_pump_raises_what_on_lines_raises_and_a_cut_stream() -> None:
    client, server, _ = _gevent_conn(1.0)
    with client, server:
        server.sendall(HEAD + chunk(b"data: a\n\n"))

        def bad(lines: bytes, stamp: float) -> bool:
            raise ValueError("malformed")

        with pytest.raises(ValueError, match="malformed"):
            LineReader(HTTPSocketResponse(client)).pump(bad)

    client, server, _ = _gevent_conn(1.0)
    with client, server:
        server.sendall(HEAD + chunk(b"data: partial"))
        reader = LineReader(HTTPSocketResponse(client))
        server.close()
        with pytest.raises((HTTPParseError, OSError)):
            reader.pump(lambda lines, _: False)
        assert reader.raw._sock is None  # released


def test_a_killed_pump_leaves_no_watcher_behind() -> None:
    """A user stopped mid-stream (GreenletExit in its wait) stops the socket's watcher
    and timer: nothing is read for it afterwards, and the loop raises nothing."""
    import gevent

    client, server, _ = _gevent_conn(0.2)
    with client, server:
        server.sendall(HEAD)
        got: list[bytes] = []
        reader = LineReader(HTTPSocketResponse(client))
        pumping = gevent.spawn(reader.pump, lambda lines, _: got.append(lines) or False)
        gevent.sleep(0.05)
        pumping.kill()
        server.sendall(chunk(b"data: after\n\n"))
        gevent.sleep(0.4)  # past the timeout, too
        assert got == [] and pumping.dead and not client._read_event.active


def _counting_whole_chunks(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The reads the pump tried as whole chunks, in order."""
    from specload.loadgen import reader as reader_module

    tried: list[bytes] = []
    whole = reader_module.whole_chunks
    monkeypatch.setattr(reader_module, "whole_chunks",
                        lambda data: tried.append(data) or whole(data))
    return tried


def _send_apart(server: socket.socket, parts: list[bytes]) -> object:
    """A greenlet sending each part 0.05 s after the one before: one read each."""
    import gevent

    server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def stream() -> None:
        for part in parts:
            gevent.sleep(0.05)
            server.sendall(part)

    return gevent.spawn(stream)


def test_whole_chunks_skip_the_parser_until_a_read_holds_something_else(monkeypatch) -> None:
    """A response whose head came with whole chunks has each later read of whole chunks
    handed on without the HTTP parser, one call per chunk; from the first read that holds
    anything else (here half a chunk) the parser reads the rest: a chunk extension and
    the body's end. Every line arrives once, in order, and the body ends complete."""
    from specload.loadgen.http_post import HeadKeepingResponse

    tried = _counting_whole_chunks(monkeypatch)
    client, server, _ = _gevent_conn(1.0)
    with client, server:
        server.sendall(HEAD + chunk(b"data: head\n\n"))
        parts = [chunk(b"data: 0\n\n"), chunk(b"data: 1\n\n") + chunk(b"data: 2\n\n"),
                 chunk(b"data: 3\n\n")[:5], chunk(b"data: 3\n\n")[5:],
                 b"9;x=y\r\ndata: 4\n\n\r\n", chunk(b"data: 5\n\n") + b"0\r\n\r\n"]
        sender = _send_apart(server, parts)
        raw = HeadKeepingResponse(client, None)  # no pool: the test closes the socket
        got: list[bytes] = []
        LineReader(raw).pump(lambda lines, _: got.append(lines) or False)
        sender.join()
        assert got == [b"data: head\n\n", *(b"data: %d\n\n" % i for i in range(6))]
        assert tried == parts[:3] and raw.message_complete


def test_a_head_that_came_with_part_of_a_chunk_leaves_the_body_to_the_parser(
        monkeypatch) -> None:
    """The head's read ended after a chunk's size line: the parser stands mid-chunk, so
    no read skips it, even one that would pass for a whole chunk (this chunk's payload
    is shaped like one), and the lines come out as the server sent them."""
    from specload.loadgen.http_post import HeadKeepingResponse

    tried = _counting_whole_chunks(monkeypatch)
    client, server, _ = _gevent_conn(1.0)
    with client, server:
        server.sendall(HEAD + b"c\r\n")
        sender = _send_apart(server, [b"7\r\nhello\n\n\r\n", b"\r\n" + chunk(b"data: b\n\n"),
                                      b"0\r\n\r\n"])
        raw = HeadKeepingResponse(client, None)
        got: list[bytes] = []
        LineReader(raw).pump(lambda lines, _: got.append(lines) or False)
        sender.join()
        assert got == [b"7\r\nhello\n\n\r\n", b"data: b\n\n"] and tried == []
        assert raw.message_complete
