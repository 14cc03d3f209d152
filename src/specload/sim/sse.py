"""Server-sent-event framing of vLLM-style streaming chunks, from pre-encoded templates.

A request's constant JSON (id, created, model, field names) is encoded once into a
head and tails; each engine step only splices in the new text (vocabulary words need
no escaping) and, with `continuous_usage_stats`, the running token counts. The byte
layout follows vLLM's OpenAI server: chat chunks carry `choices[0].delta`, completion
chunks `choices[0].text`, the last content chunk carries `finish_reason`, the usage
chunk has `choices: []`, and `data: [DONE]` ends the stream.
"""

from __future__ import annotations

from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"
MALFORMED = b'data: {"id": "malformed", "choices": [{"delta": {"content": "unterminated\n\n'


_USAGE_TAIL = b',"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}\n\n'


def frame(obj: Any) -> bytes:
    """One SSE event holding `obj` as JSON."""
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens}


class ChunkWriter:
    """Byte templates for one streamed request."""

    __slots__ = ("_base", "_head", "_mid", "_object", "_prompt_tokens", "_usage_each", "chat")

    def __init__(self, chat: bool, response_id: str, created: int, model: str,
                 prompt_tokens: int, continuous_usage: bool) -> None:
        self.chat = chat
        self._object = "chat.completion.chunk" if chat else "text_completion"
        self._base = {"id": response_id, "object": self._object, "created": created,
                      "model": model}
        prefix = orjson.dumps(self._base)[:-1]
        field = b'"delta":{"content":"' if chat else b'"text":"'
        self._head = b"data: " + prefix + b',"choices":[{"index":0,' + field
        self._mid = b'"},' if chat else b'",'
        self._prompt_tokens = prompt_tokens
        self._usage_each = continuous_usage

    def _usage_tail(self, completion_tokens: int) -> bytes:
        if not self._usage_each:
            return b"}\n\n"
        p = self._prompt_tokens
        return _USAGE_TAIL % (p, p + completion_tokens, completion_tokens)

    def content(self, text: str, completion_tokens: int, finish_reason: str | None) -> bytes:
        """A content chunk; `completion_tokens` counts all tokens sent so far."""
        reason = b"null" if finish_reason is None else b'"' + finish_reason.encode() + b'"'
        return (self._head + text.encode() + self._mid + b'"logprobs":null,"finish_reason":'
                + reason + b',"stop_reason":null}]' + self._usage_tail(completion_tokens))

    def role(self) -> bytes:
        """The chat stream's first, role-only chunk (it carries no token)."""
        obj = {**self._base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                          "content": ""}, "logprobs": None,
                                          "finish_reason": None}]}
        if self._usage_each:
            obj["usage"] = usage(self._prompt_tokens, 0)
        return frame(obj)

    def usage_chunk(self, completion_tokens: int) -> bytes:
        """The final usage-only chunk (stream_options.include_usage)."""
        return frame({**self._base, "choices": [],
                      "usage": usage(self._prompt_tokens, completion_tokens)})
