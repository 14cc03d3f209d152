"""Which prompt category a request belongs to, read off its text.

A profile may give acceptance rates per category (`speculative.acceptance_by_category`),
since a drafter accepts code far more often than open chat. The simulator learns a
request's category the way a server could: from what it was sent. The built-in prompt
set (`data/prompts.jsonl`, the client's; the simulator shares the file, not the code)
is indexed by each prompt's text, as the chat endpoint joins its messages and as the
completions endpoint receives it flattened; a request whose text is in neither (a
prompt file of the user's, a synthetic or trimmed prompt) has no category and draws the
profile's own rates.
"""

from __future__ import annotations

import functools
import json
import zlib
from importlib import resources

CHAT_JOIN = "\x1e"  # how `openai_request` joins a chat's messages into one text
FLAT_JOIN = "\n\n"  # how the client flattens a prompt's messages for /v1/completions


def _key(text: str) -> int:
    return zlib.crc32(text.encode())


@functools.cache
def _index() -> dict[int, str]:
    lines = resources.files("specload").joinpath("data/prompts.jsonl").read_text(
        encoding="utf-8").splitlines()
    index: dict[int, str] = {}
    for line in lines:
        obj = json.loads(line)
        texts = ([m["content"] for m in obj["messages"]] if "messages" in obj
                 else [obj["prompt"]])
        for joined in (CHAT_JOIN.join(texts), FLAT_JOIN.join(texts)):
            index[_key(joined)] = obj["category"]
    return index


def category_of(prompt_text: str) -> str | None:
    """The built-in category of a request's prompt text, or None."""
    return _index().get(_key(prompt_text))
