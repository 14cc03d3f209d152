"""The incremental SSE decoder: every byte boundary, line endings, comments, multi-line data."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from specload.loadgen.sse import SSEDecoder, SSEEvent

STREAM = (
    b": keep-alive comment\r\n"
    b"data: {\"a\": 1}\r\n\r\n"
    b"event: message\n"
    b"data: line one\n"
    b"data:line two\n"
    b"id: 7\n"
    b"\n"
    b"data: \xc3\xa9t\xc3\xa9\r\r"
    b"retry: 10\n"
    b"\n"
    b"data\n\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SSEEvent(b'{"a": 1}'),
    SSEEvent(b"line one\nline two", "message"),
    SSEEvent("été".encode()),
    SSEEvent(b""),
    SSEEvent(b"[DONE]"),
]


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    dec = SSEDecoder()
    out: list[SSEEvent] = []
    for piece in pieces:
        out.extend(dec.feed(piece))
    last = dec.finish()
    if last is not None:
        out.append(last)
    return out


def test_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_split_at_every_byte_boundary() -> None:
    for i in range(len(STREAM) + 1):
        assert decode([STREAM[:i], STREAM[i:]]) == EXPECTED, f"split at {i}"


def test_split_at_every_pair_of_boundaries() -> None:
    n = len(STREAM)
    for i in range(0, n + 1, 3):
        for j in range(i, n + 1, 5):
            assert decode([STREAM[:i], STREAM[i:j], STREAM[j:]]) == EXPECTED, (i, j)


def test_one_byte_at_a_time() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_random_splits(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    assert decode([STREAM[a:b] for a, b in pairwise(bounds)]) == EXPECTED


def test_cr_then_lf_in_next_read_is_one_line_ending() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: x\r") == []
    assert dec.feed(b"\n") == []
    assert dec.feed(b"\r\n") == [SSEEvent(b"x")]


def test_event_without_blank_line_is_returned_by_finish() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: [DONE]") == []
    assert dec.finish() == SSEEvent(b"[DONE]")
    assert dec.finish() is None


def test_blank_lines_and_comments_alone_dispatch_nothing() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"\n\n: ping\n\n\r\n") == []
    assert dec.finish() is None


def test_events_are_returned_in_order_from_one_read() -> None:
    dec = SSEDecoder()
    events = dec.feed(b"data: 1\n\ndata: 2\n\ndata: 3")
    assert [e.data for e in events] == [b"1", b"2"]
    assert dec.feed(b"\n\n") == [SSEEvent(b"3")]


def test_event_field_resets_after_dispatch() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"event: error\ndata: x\n\ndata: y\n\n") == [
        SSEEvent(b"x", "error"), SSEEvent(b"y")]


def test_whole_events_as_a_line_reader_hands_them_out() -> None:
    # readlines() gives each event with its blank line in one piece: the fast path must
    # agree with the general one, also after an `event:` line or pending data lines
    stream = (b"event: message\n", b"data: {\"a\": 1}\n\n", b"data: x\n",
              b"data: y\n\n", b"data:z\n\n", b"data: [DONE]\n\n")
    expected = [SSEEvent(b'{"a": 1}', "message"), SSEEvent(b"x\ny"), SSEEvent(b"z"),
                SSEEvent(b"[DONE]")]
    assert decode(list(stream)) == expected
    assert decode([bytes([b]) for b in b"".join(stream)]) == expected


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=6),
       st.sampled_from([b'data: {"a": 1}\n\n', b"data:[DONE]\n\n", b"data: x\r\n\r\n",
                        b"data: a\ndata: b\n\n", b"event: e\ndata: x\n\n", b"data: x\n",
                        b": c\n\n", b"\ndata: x\n\n", b"data: x\n\ndata: y\n\n"]))
def test_the_one_event_shortcut_is_what_feed_gives(cuts: list[int], piece: bytes) -> None:
    """`whole_event_data` (users read a server's usual event without `feed`'s list)
    answers only where `feed` would give exactly one event with no `event` field, and
    gives its data, whatever the decoder holds from earlier reads."""
    ends = sorted(cuts)
    for before in [b"", *(STREAM[:end] for end in ends)]:
        shortcut, fed = SSEDecoder(), SSEDecoder()
        shortcut.feed(before)
        fed.feed(before)
        events = fed.feed(piece)
        data = shortcut.whole_event_data(piece)
        if data is not None:
            assert events == [SSEEvent(data)], (before, piece)


def test_the_one_event_shortcut_answers_for_the_usual_shape_only() -> None:
    dec = SSEDecoder()
    assert dec.whole_event_data(b'data: {"a": 1}\n\n') == b'{"a": 1}'
    assert dec.whole_event_data(b"data:[DONE]\n\n") == b"[DONE]"
    for other in (b"data: x\r\n\r\n", b"data: a\ndata: b\n\n", b"event: e\ndata: x\n\n",
                  b"data: x\n", b"data: x\n\ndata: y\n\n"):
        assert dec.whole_event_data(other) is None, other
    dec.feed(b"event: e\n")  # an event field waiting for its data
    assert dec.whole_event_data(b"data: x\n\n") is None
