"""The user's own fields of every request body (`request.extra_body`), and those specload
keeps for itself.

A team's traffic sends more than a prompt: a thinking switch (`chat_template_kwargs`),
`tools`, `top_p`, `response_format`, engine extensions. `extra_body` is a JSON object
merged into every request's body. The fields specload sets itself (`OWNED`) cannot be
overridden through it, so a measurement never silently streams without usage or runs to
another length than the scenario says: each is refused with the setting that sets it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

# field -> why it is specload's, and what sets it
OWNED: dict[str, str] = {
    "model": "set it with `model`",
    "messages": "the prompts come from `prompts` (or `prompt_tokens`)",
    "prompt": "the prompts come from `prompts` (or `prompt_tokens`)",
    "stream": "every request streams",
    "stream_options": "usage is always asked for (`continuous_usage`: in every chunk)",
    "max_tokens": "set it with `max_tokens` or `output_tokens`",
    "max_completion_tokens": "set it with `max_tokens` or `output_tokens`",
    "min_tokens": "set it with `min_tokens`",
    "temperature": "set it with `temperature`",
    "seed": "set it with `seed`",
    "ignore_eos": "set it with `ignore_eos`",
}


def canonical(value: Mapping[str, Any]) -> str:
    """A JSON object as one line of text, keys sorted: how the setting holds it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def problems(text: str) -> list[str]:
    """Why `text` cannot be merged into a request body: not a JSON object, or fields
    specload sets itself (each with what sets it); "" holds no field."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError as exc:
        return [f"not JSON ({exc})"]
    if not isinstance(value, dict):
        return [f"must be a JSON object of fields, got {type(value).__name__}"]
    return [f"`{key}` is specload's own: {OWNED[key]}" for key in value if key in OWNED]


@functools.cache
def fields(text: str) -> Mapping[str, Any]:
    """The fields to merge (none for ""); `text` has passed `problems`."""
    return json.loads(text) if text else {}
