"""Chunked transfer coding where a read holds whole chunks: the payloads, or None for
everything the HTTP parser must see instead."""

from __future__ import annotations

import pytest

from specload.loadgen.chunked import head_ends_between_chunks, whole_chunks

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def test_whole_chunks_give_their_payloads_in_order() -> None:
    event = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'
    assert whole_chunks(chunk(event)) == [event]
    assert whole_chunks(chunk(b"data: a\n\n") + chunk(b"data: b\n\n")) == [
        b"data: a\n\n", b"data: b\n\n"]
    assert whole_chunks(b"A\r\n" + b"x" * 9 + b"\n\r\n") == [b"x" * 9 + b"\n"]  # upper-case hex


@pytest.mark.parametrize("data", [
    b"",  # nothing read: the end of the connection, which the parser judges
    chunk(b"data: a\n\n")[:-1],  # the chunk's closing CRLF not yet in
    chunk(b"data: a\n\n") + b"9\r\ndata:",  # a second chunk cut between reads
    chunk(b"data: a\n\n") + b"0\r\n\r\n",  # the last chunk: the parser must see the end
    b"0\r\n\r\n",
    b"a;name=value\r\ndata: a\n\n\r\n",  # a chunk extension
    b"+a\r\ndata: a\n\n\r\n",  # int() would take these; HTTP does not
    b" a\r\ndata: a\n\n\r\n",
    b"0xa\r\ndata: a\n\n\r\n",
    b"\r\ndata: a\n\n\r\n",  # no size
    chunk(b"data: {\"x\""),  # an event cut between two chunks: no line end
    b"0" * 17 + b"a\r\ndata: a\n\n\r\n",  # a size line longer than any chunk's
    chunk(b"data: a\n\n").replace(b"\n\r\n", b"\nXY"),  # no CRLF after the payload
])
def test_anything_but_whole_chunks_of_whole_lines_is_none(data: bytes) -> None:
    assert whole_chunks(data) is None


@pytest.mark.parametrize(("head", "coding", "between"), [
    (HEAD, "chunked", True),  # nothing of the body came with the head
    (HEAD + chunk(b"data: a\n\n"), "chunked", True),
    (HEAD[:30], "chunked", False),  # no end of the head found in what was kept
    (HEAD + b"1f\r\n", "chunked", False),  # the size line of a chunk still to come
    (HEAD + chunk(b"data: a\n\n")[:-2], "chunked", False),
    (HEAD, None, False),  # a body sent with a length, or until the connection closes
    (HEAD, ["gzip", "Chunked"], True),
    (b"HTTP/1.1 100 Continue\r\n\r\n" + HEAD, "chunked", False),  # an interim head first
])
def test_the_head_leaves_the_parser_between_chunks(head: bytes, coding, between: bool) -> None:
    assert head_ends_between_chunks(head, coding) is between
