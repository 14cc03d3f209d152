"""Validation of OpenAI chat/completions request bodies into one `GenRequest`.

Accepts what vLLM's OpenAI server accepts for text models (unknown fields are
ignored, as vLLM does) and rejects the rest with an `ApiError` naming the offending
parameter, which the API turns into an OpenAI-style 4xx body. Nothing here raises
anything else for any JSON value, which the fuzz test checks.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

from specload.sim.textgen import (
    CHARS_PER_TOKEN,
    chat_prompt_tokens,
    chat_token_text,
    completion_token_text,
    text_tokens,
)

TOKEN_ID_RANGE = 32_000  # the ids a count answers with: a vocabulary's worth
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool", "developer", "function"})
MAX_INT = 2**63 - 1


class ApiError(Exception):
    """An error response: HTTP status and OpenAI error fields."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 type_: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.type = type_ or {404: "NotFoundError", 413: "RequestTooLarge",
                              429: "RateLimitError"}.get(status, "BadRequestError"
                                                         if status < 500 else "InternalServerError")

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.status}}

    def response(self, tgi: bool = False) -> tuple[int, dict[str, Any]]:
        """The status and body an engine answers this error with: OpenAI's fields, or
        TGI's `ErrorResponse`, where a refused request is a 422 validation error."""
        if not tgi:
            return self.status, self.body()
        if self.status == 400:
            return 422, {"error": self.message, "error_type": "validation"}
        return self.status, {"error": self.message, "error_type": self.type}


@dataclass(frozen=True, slots=True)
class Limits:
    """What the served model accepts."""

    model_name: str
    max_model_len: int
    max_output_tokens: int
    # a max_tokens beyond the room the prompt leaves: cut to the room, or refused
    cut_to_room: bool = False


@dataclass(frozen=True, slots=True)
class GenRequest:
    """A validated generation request."""

    endpoint: Literal["chat", "completions"]
    prompt_text: str
    prompt_tokens: int
    token_text: str  # the prompt as fixed-width tokens, for the prefix cache
    max_tokens: int
    min_tokens: int
    ignore_eos: bool
    stream: bool
    include_usage: bool
    continuous_usage: bool
    seed: int | None
    greedy: bool = False  # temperature 0: the reply does not depend on the seed
    thinking: bool | None = None  # `chat_template_kwargs`' thinking switch, where it is set
    tools: tuple[str, ...] = ()  # the functions offered (`tools`)
    tool_call: str | None = None  # the function the reply calls (tools, tool_choice not none)
    tool_named: bool = False  # ... because `tool_choice` named it
    spec_details: bool = False  # SGLang's `return_spec_tokens_details`


def _bad(message: str, param: str) -> ApiError:
    return ApiError(400, message, param)


def _opt_int(body: dict[str, Any], name: str, lo: int) -> int | None:
    v = body.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_INT:
        raise _bad(f"'{name}' must be an integer >= {lo}", name)
    return v


def _opt_bool(body: dict[str, Any], name: str) -> bool:
    v = body.get(name)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise _bad(f"'{name}' must be a boolean", name)
    return v


def _message_text(i: int, msg: object) -> str:
    param = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise _bad(f"{param} must be an object", param)
    role = msg.get("role")
    if not isinstance(role, str) or role not in CHAT_ROLES:
        raise _bad(f"{param}.role must be one of {', '.join(sorted(CHAT_ROLES))}",
                   f"{param}.role")
    content = msg.get("content")
    if content is None and role in ("assistant", "tool", "function"):
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(
                    part.get("text"), str):
                raise _bad(f"{param}.content[{j}] must be a text part "
                           "({\"type\": \"text\", \"text\": ...}); this model is text-only",
                           f"{param}.content")
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"{param}.content must be a string or a list of text parts", f"{param}.content")


Prompt = tuple[str, int, str]  # text, tokens, token text


def _chat_prompt(body: dict[str, Any]) -> Prompt:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list", "messages")
    texts = [_message_text(i, m) for i, m in enumerate(messages)]
    roles = [m["role"] for m in messages]
    return ("\x1e".join(texts), chat_prompt_tokens(texts),
            chat_token_text(list(zip(roles, texts, strict=True))))


def chat_token_ids(body: object) -> list[int]:
    """The token ids of a chat request's prompt (`messages`), as many as its generation
    counts: one per fixed-width token of its token text. ApiError for a bad body."""
    if not isinstance(body, dict):
        raise _bad("the request body must be a JSON object", "body")
    text = _chat_prompt(body)[2]
    return [zlib.crc32(text[i:i + CHARS_PER_TOKEN].encode()) % TOKEN_ID_RANGE
            for i in range(0, len(text), CHARS_PER_TOKEN)]


def _completion_prompt(body: dict[str, Any]) -> Prompt:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        if not prompt:
            raise _bad("'prompt' must not be empty", "prompt")
        return prompt, text_tokens(prompt), completion_token_text(prompt)
    if (isinstance(prompt, list) and prompt
            and all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2**31
                    for t in prompt)):
        return " ".join(map(str, prompt)), len(prompt), completion_token_text(prompt)
    raise _bad("'prompt' must be a non-empty string, one-element list of strings, or a "
               "list of token ids", "prompt")


def parse_request(endpoint: Literal["chat", "completions"], body: object,
                  limits: Limits) -> GenRequest:
    """Validate a decoded JSON body; ApiError (4xx) for anything unacceptable."""
    if not isinstance(body, dict):
        raise _bad("the request body must be a JSON object", "body")
    model = body.get("model")
    if model is not None and model != limits.model_name:
        raise ApiError(404, f"The model `{model}` does not exist.", "model")
    text, prompt_tokens, token_text = (_chat_prompt(body) if endpoint == "chat"
                                       else _completion_prompt(body))
    n = _opt_int(body, "n", 1)
    if n not in (None, 1):
        raise _bad("only n=1 is supported", "n")
    max_tokens = _max_tokens(endpoint, body, prompt_tokens, limits)
    min_tokens = _opt_int(body, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise _bad("'min_tokens' must not exceed 'max_tokens'", "min_tokens")
    stream = _opt_bool(body, "stream")
    opts = _stream_options(body, stream)
    tools = _tools(body) if endpoint == "chat" else ()
    return GenRequest(
        endpoint=endpoint,
        prompt_text=text,
        prompt_tokens=prompt_tokens,
        token_text=token_text,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=_opt_bool(body, "ignore_eos"),
        stream=stream,
        include_usage=_opt_bool(opts, "include_usage"),
        continuous_usage=_opt_bool(opts, "continuous_usage_stats"),
        seed=_seed(body),
        greedy=_temperature(body) == 0,
        thinking=_thinking(body),
        tools=tools,
        tool_call=_tool_call(body, tools),
        tool_named=isinstance(body.get("tool_choice"), dict),
        spec_details=_opt_bool(body, "return_spec_tokens_details"),
    )


def _temperature(body: dict[str, Any]) -> float:
    """The sampling temperature (the OpenAI API's default, 1, where unset)."""
    value = body.get("temperature")
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise _bad("'temperature' must be a number >= 0", "temperature")
    return float(value)


def _thinking(body: dict[str, Any]) -> bool | None:
    """The thinking switch of `chat_template_kwargs` (Qwen3's `enable_thinking`, DeepSeek's
    `thinking`), passed to the chat template as vLLM and SGLang do; None where unset."""
    kwargs = body.get("chat_template_kwargs")
    if kwargs is None:
        return None
    if not isinstance(kwargs, dict):
        raise _bad("'chat_template_kwargs' must be an object", "chat_template_kwargs")
    switch = next((kwargs[k] for k in ("enable_thinking", "thinking") if k in kwargs), None)
    return switch if isinstance(switch, bool) else None


def _tools(body: dict[str, Any]) -> tuple[str, ...]:
    """The names of the functions a chat request offers."""
    tools = body.get("tools")
    if tools is None:
        return ()
    if not isinstance(tools, list):
        raise _bad("'tools' must be a list", "tools")
    names = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if (not isinstance(tool, dict) or tool.get("type") != "function"
                or not isinstance(name, str) or not name):
            raise _bad(f"tools[{i}] must be {{\"type\": \"function\", \"function\": "
                       "{\"name\": ...}}", f"tools[{i}]")
        names.append(name)
    return tuple(names)


def _tool_call(body: dict[str, Any], tools: tuple[str, ...]) -> str | None:
    """The function the reply calls: the one `tool_choice` names, else the first offered
    (auto: the simulated model always takes a tool it is offered); None for `none` or
    without tools."""
    choice = body.get("tool_choice", "auto")
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if name not in tools:
            raise _bad(f"tool_choice names {name!r}, which 'tools' does not offer",
                       "tool_choice")
        return str(name)
    if choice not in ("none", "auto", "required"):
        raise _bad("'tool_choice' must be none, auto, required or a named function",
                   "tool_choice")
    if choice == "required" and not tools:
        raise _bad("tool_choice 'required' needs 'tools'", "tool_choice")
    return tools[0] if tools and choice != "none" else None


def _seed(body: dict[str, Any]) -> int | None:
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                             or abs(seed) > MAX_INT):
        raise _bad("'seed' must be an integer", "seed")
    return seed


def _max_tokens(endpoint: str, body: dict[str, Any], prompt_tokens: int,
                limits: Limits) -> int:
    """The completion budget asked for (or the room left), within the context length."""
    max_tokens = _opt_int(body, "max_tokens", 1)
    if endpoint == "chat":
        mct = _opt_int(body, "max_completion_tokens", 1)
        max_tokens = mct if mct is not None else max_tokens
    if prompt_tokens >= limits.max_model_len:
        raise _bad(f"This model's maximum context length is {limits.max_model_len} tokens. "
                   f"However, your prompt has {prompt_tokens} tokens.", "messages"
                   if endpoint == "chat" else "prompt")
    room = min(limits.max_model_len - prompt_tokens, limits.max_output_tokens)
    if max_tokens is None:
        return room
    if max_tokens > limits.max_output_tokens:
        raise _bad(f"'max_tokens' is {max_tokens}; this server allows at most "
                   f"{limits.max_output_tokens}", "max_tokens")
    if max_tokens > room and not limits.cut_to_room:
        raise _bad(f"This model's maximum context length is {limits.max_model_len} tokens. "
                   f"However, you requested {prompt_tokens + max_tokens} tokens "
                   f"({prompt_tokens} in the prompt, {max_tokens} for the completion).",
                   "max_tokens")
    return min(max_tokens, room)


def _stream_options(body: dict[str, Any], stream: bool) -> dict[str, Any]:
    opts = body.get("stream_options")
    if opts is None:
        return {}
    if not stream:
        raise _bad("Stream options can only be defined when `stream=True`.", "stream_options")
    if not isinstance(opts, dict):
        raise _bad("'stream_options' must be an object", "stream_options")
    return opts
