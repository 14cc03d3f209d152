"""Server-sent-event framing of streaming chunks, in each engine flavour's shape.

`ChunkWriter.step` turns the tokens one engine step produced for one request into the
SSE events that flavour sends for them: the role chunk with the first token, one
content chunk (or one per token), and a separate finish chunk where the engine sends
one; `tail` adds the usage chunk and `data: [DONE]`. Where the engine reports a
request's own stats, they are top-level fields of a final chunk: llama.cpp's `timings`
ride on the last chunk before `[DONE]`, the usage chunk when there is one, else the
finish chunk (a llama.cpp /v1/completions stream ends with an empty-text finish chunk
that carries usage whether asked for or not and the timings); vLLM's `metrics` only on
the usage chunk. A request's constant JSON (id, created, model, the flavour's extra
fields) is encoded once into byte templates, so a step only splices in its words
(vocabulary words need no escaping) and, with `continuous_usage_stats`, the running
token counts. See `flavors.py` for each
engine's conventions and where they come from.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import orjson

from specload.sim.flavors import Flavor
from specload.sim.tool_calls import ToolCallStream

DONE = b"data: [DONE]\n\n"
MALFORMED = b'data: {"id": "malformed", "choices": [{"delta": {"content": "unterminated\n\n'

_USAGE = b'"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}'
_ZERO_USAGE = b',"usage":{"prompt_tokens":0,"total_tokens":0,"completion_tokens":0}'


def frame(obj: Any) -> bytes:
    """One SSE event holding `obj` as JSON."""
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens}


def chunk_id(flavor: Flavor, chat: bool, request_id: str) -> str:
    """The `id` field of a response's chunks, as the flavour's engine makes it."""
    prefix = "chatcmpl-" if chat else "cmpl-"
    kind = flavor.chunk_id
    if kind == "hex":
        return uuid.uuid4().hex
    if kind == "empty":
        return ""
    if kind == "small_int":
        return f"{prefix}{random.randrange(999)}"
    if kind == "uuid":
        return f"{prefix}{uuid.uuid4()}"
    return prefix + request_id


def with_fields(chunk: bytes, fields: dict[str, Any] | None) -> bytes:
    """One chunk's event with top-level fields added (unchanged without any)."""
    if not fields:
        return chunk
    return chunk[:-3] + _tail(fields) + b"}\n\n"


def _tail(obj: dict[str, Any]) -> bytes:
    """`{"a":1,"b":null}` -> `,"a":1,"b":null` (empty for an empty dict): fields to add
    after an object's last one."""
    return b"," + orjson.dumps(obj)[1:-1] if obj else b""


class ChunkWriter:
    """Byte templates for one streamed request in one flavour."""

    __slots__ = ("_chunk_usage", "_delta_extra", "_flavor", "_head", "_prompt",
                 "_role_sent", "_role_top", "_tail_finish", "_tail_role", "_tail_token", "_tool",
                 "_usage_chunk", "_usage_each", "_usage_in_final", "_usage_top",
                 "_zero_usage", "chat")

    def __init__(self, flavor: Flavor, chat: bool, response_id: str, created: int, model: str,
                 prompt_tokens: int, include_usage: bool, continuous_usage: bool,
                 tool: ToolCallStream | None = None) -> None:
        self.chat = chat
        self._flavor = flavor
        self._tool = tool
        base: dict[str, Any] = {"id": response_id,
                                "object": "chat.completion.chunk" if chat else "text_completion",
                                "created": created, "model": model, **flavor.extra_chunk}
        self._usage_each = (continuous_usage and flavor.usage == "continuous"
                            and (include_usage or not flavor.continuous_needs_include_usage))
        self._zero_usage = (not chat and include_usage
                            and flavor.zero_usage_each_completion_chunk)
        if self._usage_each:
            base.pop("usage", None)
        self._head = b"data: " + orjson.dumps(base)[:-1] + b',"choices":[{"index":0,'
        self._delta_extra = flavor.extra_delta
        # the choice's closing fields for the role chunk, a token chunk and the finish
        choice = _tail(flavor.extra_choice)
        token = _tail(flavor.token_choice_extra) if chat else b""
        self._tail_role, self._tail_token = choice, choice + token
        self._tail_finish = choice + (_tail(flavor.finish_choice_extra) if chat else b"") + token
        self._role_top = _tail(flavor.role_chunk_extra)
        # the per-chunk usage template, with the flavour's extra usage fields
        inner = _tail(flavor.chunk_usage_extra) if chat else b""
        self._chunk_usage = _USAGE[:-1] + inner + b"}"
        self._usage_top = _tail(flavor.usage_chunk_extra) if chat else b""
        self._prompt = prompt_tokens
        self._usage_in_final = not chat and flavor.completions_final_chunk
        self._usage_chunk = (include_usage and flavor.usage != "never"
                             and not self._usage_in_final)
        # "every"/"first": the role rides on content chunks, never on a chunk of its own
        self._role_sent = False

    # -- pieces -----------------------------------------------------------------------

    def _end(self, completion_tokens: int | None, top: bytes = b"") -> bytes:
        """Close a chunk: `]` of choices, per-chunk usage if any, the chunk's own extra
        fields `top`, `}` and the blank line."""
        if self._usage_each and completion_tokens is not None:
            p = self._prompt
            usage = self._chunk_usage % (p, p + completion_tokens, completion_tokens)
            return b"]," + usage + top + b"}\n\n"
        if self._zero_usage:
            return b"]" + _ZERO_USAGE + top + b"}\n\n"
        return b"]" + top + b"}\n\n"

    def _chat_chunk(self, delta: dict[str, Any], finish: str | None,
                    completion_tokens: int | None, role: bool = False) -> bytes:
        delta = {**self._delta_extra, **delta}
        reason = b"null" if finish is None else b'"' + finish.encode() + b'"'
        tail = (self._tail_role if role else self._tail_token if finish is None
                else self._tail_finish)
        return (self._head + b'"delta":' + orjson.dumps(delta) + b',"logprobs":null,'
                b'"finish_reason":' + reason + tail + b"}"
                + self._end(completion_tokens, self._role_top if role else b""))

    def _text_chunk(self, text: str, finish: str | None, completion_tokens: int) -> bytes:
        reason = b"null" if finish is None else b'"' + finish.encode() + b'"'
        return (self._head + b'"text":"' + text.encode() + b'","logprobs":null,'
                b'"finish_reason":' + reason + b"}" + self._end(completion_tokens))

    def _usage(self, completion_tokens: int) -> bytes:
        p = self._prompt
        return _USAGE % (p, p + completion_tokens, completion_tokens)

    def _completion_final(self, finish: str, completion_tokens: int) -> bytes:
        """llama.cpp's last /v1/completions chunk: no text, the finish, usage always."""
        return (self._head + b'"text":"","logprobs":null,"finish_reason":"' + finish.encode()
                + b'"}],' + self._usage(completion_tokens) + b"}\n\n")

    def _delta(self, content: str, reasoning: str, last: bool = False) -> dict[str, Any]:
        """A delta of content (or of the call's arguments, for a reply that calls a tool)
        after any reasoning; `last`: the reply's last."""
        key = self._flavor.reasoning_key
        if key is None:
            content, reasoning = reasoning + content, ""
        delta: dict[str, Any] = {}
        if self._flavor.role == "every" or (self._flavor.role == "first"
                                            and not self._role_sent):
            delta["role"] = "assistant"
        if reasoning and key is not None:
            delta[key] = reasoning
        if self._tool is not None and (content or last):
            delta |= self._tool.delta(content, last)
        elif content or not reasoning:
            delta["content"] = content
        return delta

    def _role_chunk(self) -> bytes:
        kind = self._flavor.role
        delta: dict[str, Any] = {"role": "assistant"}
        if kind == "empty":
            delta["content"] = ""
        elif kind == "null":
            delta["content"] = None
        return self._chat_chunk(delta, None, 0, role=True)

    # -- what the API calls -----------------------------------------------------------

    @property
    def holds_until_done(self) -> bool:
        """The reply is a call the engine sends whole, once it is complete (Ollama)."""
        return self._tool is not None and self._tool.wire.whole

    def opening(self) -> bytes:
        """The role chunk, where the flavour sends one and it has not gone out yet."""
        if self.chat and not self._role_sent and self._flavor.role in ("empty", "null",
                                                                        "absent"):
            self._role_sent = True
            return self._role_chunk()
        return b""

    def step(self, words: list[str], sent_before: int, finish: str | None,
             reasoning_left: int = 0, final: dict[str, Any] | None = None) -> bytes:
        """Every event for `words`, the tokens one step produced (`sent_before` already
        sent); `finish` on the request's last step, with the `final` fields where no
        usage chunk follows; the first `reasoning_left` words are reasoning."""
        flavor = self._flavor
        if finish == "stop" and flavor.eos_text_empty:
            words = [*words[:-1], ""]  # the EOS token: counted, its text stripped
        out = self.opening()
        groups = ([[w] for w in words] if flavor.per_token_chunks and not self.holds_until_done
                  else [words])
        done = sent_before
        last = len(groups) - 1
        separate = flavor.finish_separate if self.chat else self._usage_in_final
        inline_finish = None if separate or finish is None else finish
        for i, group in enumerate(groups):
            r = min(len(group), max(0, reasoning_left - (done - sent_before)))
            done += len(group)
            reason = inline_finish if i == last else None
            if self.chat:
                delta = self._delta("".join(group[r:]), "".join(group[:r]),
                                    finish is not None and i == last)
                out += self._chat_chunk(delta, reason, done)
                self._role_sent = True
            else:
                out += self._text_chunk("".join(group), reason, done)
        if finish is None:
            return out
        if separate:
            out += (self._chat_chunk({}, finish, None) if self.chat
                    else self._completion_final(finish, done))
        return out if self._usage_chunk else with_fields(out, final)

    def tail(self, completion_tokens: int, final: dict[str, Any] | None = None,
             own: dict[str, Any] | None = None) -> bytes:
        """The end of a finished stream: a chunk of the `own` top-level fields if any
        (SGLang's `sglext`), the usage chunk when asked for (with the `final` fields),
        then [DONE]."""
        head = self._head[: -len(b'"choices":[{"index":0,')]
        first = (head.replace(b'"usage":null,', b"") + b'"choices":[],"usage":null,'
                 + orjson.dumps(own)[1:] + b"\n\n") if own else b""
        if not self._usage_chunk:
            return first + DONE
        if self._usage_each or b'"usage":null' not in head:
            body = head + b'"choices":[],'
        else:
            body = head.replace(b'"usage":null,', b"") + b'"choices":[],'
        chunk = body + self._usage(completion_tokens) + self._usage_top + b"}\n\n"
        return first + with_fields(chunk, final) + DONE
