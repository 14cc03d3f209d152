"""Fuzz the streaming path a user's request runs through: arbitrary bytes, split at
arbitrary points, fed to the SSE decoder, each event to the users' chunk handler
(`StreamingUser._on_event`: `parse_chunk` plus the tally), then the per-request figures
and the record row. The only exception allowed out of the handler is `MalformedChunk`,
which `StreamingUser._read` turns into a `malformed_chunk` failure; everything else ends
as a clean result or a failure kind from `records.ERROR_KINDS`.
"""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import example, given, settings
from hypothesis import strategies as st

from specload.loadgen.chunk_json import MalformedChunk, error_message_from_body
from specload.loadgen.measure import StreamTally
from specload.loadgen.sse import SSEDecoder
from specload.loadgen.users import StreamingUser, _judge_complete_stream, _Outcome
from specload.runfiles.records import ERROR_KINDS, REQUEST_COLUMNS, RequestRecord, encode_chunks

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["choices", "delta", "content", "text", "usage", "completion_tokens",
                         "prompt_tokens", "finish_reason", "error", "object", "message",
                         "reasoning_content", "x"]), kids, max_size=4),
    max_leaves=12,
)
# data lines that are JSON shaped like (or nearly like) OpenAI chunks, plus raw junk
payloads = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.sampled_from([b"[DONE]", b'{"choices": []}', b'{"error": {"message": "boom"}}',
                     b'{"choices": [{"delta": {"content": "a"}}], "usage": '
                     b'{"completion_tokens": 3}}']),
)
streams = st.one_of(
    st.binary(max_size=400),
    st.lists(payloads, max_size=8).map(
        lambda ps: b"".join(b"data: " + p + b"\n\n" for p in ps)),
)


def consume(body: bytes, cuts: list[int]) -> tuple[_Outcome, StreamTally, bool]:
    """Feed `body` in pieces as `StreamingUser._read` does; returns how it ended."""
    tally, out, done = StreamTally(1000.0), _Outcome(), False
    decoder = SSEDecoder()
    bounds = [0, *sorted(c % (len(body) + 1) for c in cuts), len(body)]
    try:
        for i, (a, b) in enumerate(pairwise(bounds)):
            for event in decoder.feed(body[a:b]):
                done = StreamingUser._on_event(event.data, 1000.0 + i, tally, out) or done
            if out.error_kind:
                break
        if not done and not out.error_kind:
            last = decoder.finish()
            done = last is not None and StreamingUser._on_event(last.data, 2000.0, tally, out)
        if not done and not out.error_kind:
            out.fail("stream_cut", "stream cut before [DONE]")
        if not out.error_kind:
            _judge_complete_stream(tally, out)
    except MalformedChunk as exc:
        out.fail("malformed_chunk", f"malformed chunk: {exc}")
        out.detail = exc.preview
    return out, tally, done


@settings(max_examples=400, deadline=None)
@given(body=streams, cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_arbitrary_bytes_end_in_a_result_or_a_failure_kind(body: bytes, cuts: list[int]) -> None:
    out, tally, done = consume(body, cuts)
    assert out.error_kind in ERROR_KINDS or (out.error_kind == "" and done)
    assert "\n" not in out.error
    measured = tally.result()
    gaps, tokens = encode_chunks(tally.t0, measured.arrivals, measured.chunk_tokens)
    row = RequestRecord(
        request_id="c-1", client_id="c", user_id=1, endpoint="chat", category="fuzz",
        start=tally.t0, end=tally.t0 + 1, status=200, ttft_ms=measured.ttft_ms,
        e2e_ms=measured.e2e_ms, tpot_ms=measured.tpot_ms, output_tokens=measured.output_tokens,
        tokens_source=measured.tokens_source, num_chunks=len(tally.arrivals),
        finish_reason=measured.finish_reason, error_kind=out.error_kind, error=out.full_error(),
        chunk_gaps_us=gaps, chunk_tokens=tokens).row()
    assert len(row) == len(REQUEST_COLUMNS)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
@example(b'{"choices": null, "error": " "}')  # a blank message: the body is said instead
def test_error_bodies_always_give_a_short_message(body: bytes) -> None:
    message = error_message_from_body(body)
    assert isinstance(message, str) and 0 < len(message) <= 200 and "\n" not in message


def test_decoder_splits_do_not_change_the_outcome() -> None:
    body = (b'data: {"choices": [{"delta": {"content": "a"}, "finish_reason": "stop"}], '
            b'"usage": {"completion_tokens": 2}}\r\n\r\ndata: [DONE]\n\n')
    whole = consume(body, [])
    for cut in range(len(body) + 1):
        out, tally, done = consume(body, [cut])
        assert (out.error_kind, tally.result().output_tokens, done) == (
            whole[0].error_kind, whole[1].result().output_tokens, whole[2]) == ("", 2, True)
