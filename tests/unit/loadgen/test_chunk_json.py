"""Parsing OpenAI streaming chunks into content / usage / finish / error facts."""

from __future__ import annotations

import orjson
import pytest

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
    assert parse_chunk(chat({field: "hmm"})).has_content


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
