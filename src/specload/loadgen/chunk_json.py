"""Pure parsing of one OpenAI streaming chunk (the JSON of one SSE `data:` field).

Turns a chat or text-completion chunk into the few facts the measurement needs: does it
carry generated content (`delta.content`, `delta.reasoning_content`/`reasoning`, or
`text`; a role-only delta is not a token) and the reply text it adds (`delta.content`
or `text`: what a chat session sends back as the assistant's turn), the cumulative
completion and prompt tokens from its `usage` (final usage chunk, or per-chunk
`continuous_usage_stats`), whether it is the final usage-only chunk (`"choices": []`,
or no `choices` key at all), its finish reason, the request's own drafted and accepted
tokens and verification steps where an engine sends them, and the drafts accepted at
each step where it lists them (the fields every registered engine declares,
`engines.request_speculation`: llama.cpp's `timings`, vLLM's
`metrics.speculative_decoding`), and an error object if the
server put one in the stream. Anything that is not the JSON we expect raises
`MalformedChunk`; speculation fields that are not counts are left out, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeGuard

import orjson

from specload.engines import RequestSpeculation, request_speculation

DONE = b"[DONE]"
SPECULATION: tuple[RequestSpeculation, ...] = request_speculation()
_SPECULATION_KEYS = tuple((spec.section[0], spec) for spec in SPECULATION)


class DraftCounts(NamedTuple):
    """A request's own speculation so far, as its engine counts it."""

    drafted: int  # draft tokens proposed
    accepted: int  # draft tokens the target accepted
    steps: int | None  # verification steps, where the engine counts them
    per_step: tuple[int, ...] | None = None  # accepted at each step, where it lists them


class MalformedChunk(ValueError):
    """A data line that is not an OpenAI streaming chunk.

    `str()` is a short reason that groups well in Locust's failure table; `preview`
    holds the start of the offending payload for the per-request record.
    """

    def __init__(self, reason: str, data: bytes = b"") -> None:
        super().__init__(reason)
        self.preview = _preview(data)


@dataclass(slots=True)
class Chunk:
    """What one streaming chunk says; token counts are cumulative as the server reports."""

    has_content: bool = False
    text: str = ""  # the reply's text in this chunk (reasoning is not part of the reply)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    usage_only: bool = False  # no choices, only usage: the final `include_usage` chunk
    finish_reason: str | None = None
    error: str | None = None
    speculation: DraftCounts | None = None  # where the engine says


def parse_chunk(data: bytes) -> Chunk:
    """Parse one `data:` payload (not `[DONE]`)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedChunk("invalid JSON", data) from exc
    if type(obj) is not dict:  # orjson gives plain dicts
        raise MalformedChunk("chunk is not a JSON object", data)
    if obj.get("error") is not None or obj.get("object") == "error":
        return Chunk(error=_error_message(obj))
    chunk = Chunk()
    usage = obj.get("usage")
    if usage is not None:
        _usage(chunk, usage)
    for key, spec in _SPECULATION_KEYS:
        section = obj.get(key)
        if section is not None:
            _speculation(chunk, section, spec)
    choices = obj.get("choices")
    if choices is None and usage is not None:
        chunk.usage_only = True  # a usage chunk that leaves `choices` out
        return chunk
    if not isinstance(choices, list):
        raise MalformedChunk("chunk has no `choices` list")
    if not choices:
        chunk.usage_only = usage is not None
        return chunk
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedChunk("`choices[0]` is not an object")
    chunk.has_content, chunk.text = _content(choice)
    finish = choice.get("finish_reason")
    if finish is not None:
        chunk.finish_reason = str(finish)
    return chunk


def _content(choice: dict) -> tuple[bool, str]:
    """Whether the choice carries generated content, and its reply text."""
    delta = choice.get("delta")
    if delta is not None:
        if not isinstance(delta, dict):
            raise MalformedChunk("`delta` is not an object")
        content = delta.get("content")
        text = content if isinstance(content, str) else ""
        return bool(content or delta.get("reasoning_content") or delta.get("reasoning")), text
    text = choice.get("text")
    return (True, text) if isinstance(text, str) and text else (False, "")


def _usage(chunk: Chunk, usage: object) -> None:
    if type(usage) is not dict:
        raise MalformedChunk("`usage` is not an object")
    completion, prompt = usage.get("completion_tokens"), usage.get("prompt_tokens")
    # plain non-negative ints (a bool is not one) pass without a call: this runs per chunk
    chunk.completion_tokens = (completion if type(completion) is int and completion >= 0
                               else _count(usage, "completion_tokens"))
    chunk.prompt_tokens = (prompt if type(prompt) is int and prompt >= 0
                           else _count(usage, "prompt_tokens"))


def _speculation(chunk: Chunk, section: object, spec: RequestSpeculation) -> None:
    for key in spec.section[1:]:
        section = section.get(key) if isinstance(section, dict) else None
    if not isinstance(section, dict):
        return
    drafted, accepted = section.get(spec.drafted), section.get(spec.accepted)
    if _is_count(drafted) and _is_count(accepted) and accepted <= drafted:
        steps = section.get(spec.steps) if spec.steps else None
        chunk.speculation = DraftCounts(drafted, accepted, steps if _is_count(steps) else None,
                                        _per_step(section, spec, accepted))


def _per_step(section: dict, spec: RequestSpeculation, accepted: int
              ) -> tuple[int, ...] | None:
    """The accepted drafts of each verification step, when they are counts that add up
    to the request's accepted total."""
    listed = section.get(spec.per_step) if spec.per_step else None
    if not isinstance(listed, list) or not all(_is_count(a) for a in listed):
        return None
    return tuple(listed) if sum(listed) == accepted else None


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(usage: dict, key: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedChunk(f"`usage.{key}` is not a non-negative integer")
    return value


def _error_message(obj: dict) -> str | None:
    err = obj.get("error")
    if err is not None:
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or err)
        return str(err)
    if obj.get("object") == "error":
        return str(obj.get("message") or "error")
    return None


def error_message_from_body(body: bytes) -> str:
    """The server's error message from a non-2xx body: its first 200 characters, or the
    message field of a JSON error; "(empty body)" when the server sent nothing."""
    if not body.strip():
        return "(empty body)"
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _preview(body)
    if isinstance(obj, dict):
        msg = _error_message(obj) or obj.get("detail")
        if msg is not None:
            return _shorten(str(msg))
    return _preview(body)


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _preview(data: bytes) -> str:
    return _shorten(data[:800].decode("utf-8", "replace")) or "(empty body)"
