"""Pure parsing of one OpenAI streaming chunk (the JSON of one SSE `data:` field).

Turns a chat or text-completion chunk into the few facts the measurement needs: does it
carry generated content (`delta.content`, `delta.reasoning_content`/`reasoning`, a
tool call's name or argument fragment in `delta.tool_calls`, or `text`; a role-only
delta is not a token) and the reply text it adds (`delta.content`
or `text`: what a chat session sends back as the assistant's turn) and the other text it
generates (reasoning and tool calls: with the reply, the reply's fingerprint), the cumulative
completion and prompt tokens from its `usage` (final usage chunk, or per-chunk
`continuous_usage_stats`), whether it is the final usage-only chunk (`"choices": []`,
or no `choices` key at all), its finish reason, the request's own drafted and accepted
tokens and verification steps where an engine sends them, and the drafts accepted at
each step where it lists them (the fields every registered engine declares,
`engines.request_speculation`: llama.cpp's `timings`, vLLM's
`metrics.speculative_decoding`), and an error object if the
server put one in the stream. Anything that is not the JSON we expect raises
`MalformedChunk`; speculation fields that are not counts are left out, not guessed.

This runs for every chunk a load process reads, so the few fields read are decoded in
one call by msgspec into typed structs, the rest of the payload skipped unread; a
payload the typed decoder refuses is read again with orjson by the same rules, which
name what is wrong with it or read it as the odd-shaped chunk it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, TypeGuard, cast

import msgspec
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
    other: str = ""  # the other text it generates: reasoning, a tool call's name and arguments
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    usage_only: bool = False  # no choices, only usage: the final `include_usage` chunk
    finish_reason: str | None = None
    error: str | None = None
    speculation: DraftCounts | None = None  # where the engine says


# The fields a chunk is read for, decoded in one call by msgspec (everything else in the
# payload is skipped unread); anything of another type sends the payload to `_lenient`.
_Count = Annotated[int, msgspec.Meta(ge=0)]


class _Delta(msgspec.Struct):
    content: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    tool_calls: Any = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    text: Any = None
    finish_reason: Any = None


class _Usage(msgspec.Struct):
    completion_tokens: _Count | None = None
    prompt_tokens: _Count | None = None


class _WireBase(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: Any = None
    object: Any = None


# plus the top-level object of each engine's own speculation, read as it comes
_Wire = cast("type[_WireBase]", msgspec.defstruct(
    "_Wire", [(key, Any, None) for key in dict.fromkeys(k for k, _ in _SPECULATION_KEYS)],
    bases=(_WireBase,)))
_decode = msgspec.json.Decoder(_Wire).decode


def parse_chunk(data: bytes) -> Chunk:
    """Parse one `data:` payload (not `[DONE]`)."""
    try:
        wire = _decode(data)
    except msgspec.MsgspecError:
        wire = _lenient(data)  # the reason it is malformed, or a chunk of an odd shape
    return _chunk(wire, data)


def _chunk(wire: _WireBase, data: bytes) -> Chunk:
    """What a decoded payload says."""
    if wire.error is not None or wire.object == "error":
        return Chunk(error=_error_message(orjson.loads(data)))
    chunk = Chunk()
    usage = wire.usage
    if usage is not None:
        chunk.completion_tokens = usage.completion_tokens
        chunk.prompt_tokens = usage.prompt_tokens
    for key, spec in _SPECULATION_KEYS:
        section = getattr(wire, key)
        if section is not None:
            _speculation(chunk, section, spec)
    choices = wire.choices
    if choices is None and usage is None:
        raise MalformedChunk("chunk has no `choices` list")
    if not choices:
        chunk.usage_only = usage is not None  # the final usage chunk: `choices` [] or left out
        return chunk
    choice = choices[0]
    delta = choice.delta
    if delta is not None:
        content = delta.content
        chunk.text = content if isinstance(content, str) else ""
        reasoning, calls = delta.reasoning_content or delta.reasoning, delta.tool_calls
        if reasoning is None and calls is None:  # content alone: most chunks
            chunk.has_content = bool(content)
        else:
            tools = tool_call_text(calls)
            chunk.other = (reasoning if isinstance(reasoning, str) else "") + tools
            chunk.has_content = bool(content or reasoning or tools)
    elif isinstance(choice.text, str) and choice.text:
        chunk.has_content, chunk.text = True, choice.text
    if choice.finish_reason is not None:
        chunk.finish_reason = str(choice.finish_reason)
    return chunk


def _lenient(data: bytes) -> _WireBase:
    """A payload the typed decoder refused, read by the same rules: MalformedChunk saying
    why it is not a chunk, or its fields (a chunk of an odd shape, e.g. with a second
    choice that is not an object, which nothing reads)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedChunk("invalid JSON", data) from exc
    if type(obj) is not dict:  # orjson gives plain dicts
        raise MalformedChunk("chunk is not a JSON object", data)
    if obj.get("error") is not None or obj.get("object") == "error":
        return _Wire(error=obj.get("error"), object=obj.get("object"))
    usage = obj.get("usage")
    if usage is not None:
        if type(usage) is not dict:
            raise MalformedChunk("`usage` is not an object")
        usage = _Usage(_count(usage, "completion_tokens"), _count(usage, "prompt_tokens"))
    choices = obj.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise MalformedChunk("chunk has no `choices` list")
    if choices:
        choice = choices[0]
        if not isinstance(choice, dict):
            raise MalformedChunk("`choices[0]` is not an object")
        delta = choice.get("delta")
        if delta is not None:
            if not isinstance(delta, dict):
                raise MalformedChunk("`delta` is not an object")
            delta = _Delta(delta.get("content"), delta.get("reasoning_content"),
                           delta.get("reasoning"), delta.get("tool_calls"))
        choices = [_Choice(delta, choice.get("text"), choice.get("finish_reason"))]
    return _Wire(choices=choices, usage=usage,
                 **{key: obj.get(key) for key, _ in _SPECULATION_KEYS})


def tool_call_text(calls: object) -> str:
    """The text a `delta.tool_calls` streams: each call's function name and argument
    fragment ("" when it carries neither). A list of calls as OpenAI sends them, or one
    call as an object (TGI)."""
    if isinstance(calls, dict):
        calls = [calls]
    if not isinstance(calls, list):
        return ""
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            out += [v for v in (function.get("name"), function.get("arguments"))
                    if isinstance(v, str)]
    return "".join(out)


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
        if msg is not None and (short := _shorten(str(msg))):  # a blank message says nothing
            return short
    return _preview(body)


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _preview(data: bytes) -> str:
    return _shorten(data[:800].decode("utf-8", "replace")) or "(empty body)"
