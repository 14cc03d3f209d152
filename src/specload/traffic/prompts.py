"""Prompts: the built-in set, ShareGPT / JSON-lines parsers, and the seeded request order.

Files are read through `traffic/prompt_sets.py`, which knows every format. The built-in
set (`data/prompts.jsonl`, made by `scripts/gen_prompts.py`) has 45 prompts in each of
the categories of `CATEGORIES` because speculative acceptance depends on the kind of
text. A JSON-lines file has one object per line with `prompt` (a string) or `messages`
(OpenAI chat messages), and optional `max_tokens` and `category`. A ShareGPT file is a
JSON array of `{"conversations": [{"from": "human", "value": ...}, ...]}`; the first
human turn is the prompt. Errors name the file and the line (JSONL) or entry (ShareGPT);
`read_text` and `sharegpt_turns` serve the multi-turn loader
(`traffic/conversations.py`) too. `PromptOrder` is a seeded permutation walked as one
global sequence that load processes share round-robin, so the requests' prompts (or
conversations) are the same for every arm and do not depend on how many workers there
are.
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from specload.errors import UserError

BUILTIN_NAME = "builtin"
# the built-in set's categories; rag: long retrieved context, json: structured output
CATEGORIES = ("chat", "code", "summarisation", "reasoning", "extraction", "rag",
              "multi_turn", "translation", "json")


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt as chat messages; `text` is the flat form for /v1/completions."""

    messages: tuple[dict[str, str], ...]
    category: str
    max_tokens: int | None = None
    chars: int | None = None  # synthetic prompts: characters sent, for calibration
    index: int | None = None  # its place in the set it came from (None: made up)

    @property
    def text(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


def request_seed(seed: int, prompt: Prompt) -> int:
    """The sampling seed a request carries: the run's seed mixed with its prompt, so that
    two arms send the same seed with the same prompt while different prompts draw apart.
    One seed for every request would make an engine's random draws alike in all of
    them: llama-server seeds its synthetic draft acceptance (`--spec-synth-len`) with the
    request's seed (tools/server/server-context.cpp, `spec_synth_rng.seed`), so every
    request would accept the same drafts and a whole run one draw of the target."""
    return zlib.crc32(prompt.text.encode(), seed & 0xFFFFFFFF) & 0x7FFFFFFF


def run_seed(seed: int, first_rung: int) -> int:
    """The seed of a Locust run whose first rung is the ladder's `first_rung` (0: the
    scenario's own seed). A run per rung (interleaved arms; resumed or added rungs)
    against a server that stays up would otherwise send the first run's prompts again,
    in the same order, and an engine's prefix cache would serve their prefill from
    memory: every arm gets the same prompts at a rung, and each rung new ones."""
    if first_rung == 0:
        return seed
    return zlib.crc32(f"{seed}:{first_rung}".encode()) & 0x7FFFFFFF


def read_text(path: str, what: str) -> str:
    """A UTF-8 file's text; UserError naming the file (and `what` it is) otherwise."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def parse_jsonl(content: str, source: str) -> list[Prompt]:
    """Parse JSON lines (blank lines skipped); errors say `source:line: ...`."""
    prompts: list[Prompt] = []
    for lineno, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not valid JSON ({exc.msg})") from exc
        prompts.append(_prompt_from_object(obj, where))
    if not prompts:
        raise UserError(f"{source}: no prompts")
    return prompts


def parse_sharegpt(content: str, source: str) -> list[Prompt]:
    """Parse a ShareGPT JSON array; entries without a human turn are skipped."""
    prompts: list[Prompt] = []
    for index, entry in enumerate(json_array(content, source)):
        turns = sharegpt_turns(entry, f"{source}: entry {index}")
        first = next((text for role, text in turns if role == "user" and text.strip()), None)
        if first is not None:
            prompts.append(Prompt(({"role": "user", "content": first},), "sharegpt"))
    if not prompts:
        raise UserError(f"{source}: no conversation has a human turn")
    return prompts


def json_array(content: str, source: str) -> list[Any]:
    """A ShareGPT file's JSON array of conversations."""
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, list):
        raise UserError(f"{source}: a ShareGPT file is a JSON array of conversations")
    return data


SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant",
                  "assistant": "assistant", "chatgpt": "assistant", "bing": "assistant",
                  "bard": "assistant", "system": "system"}


def sharegpt_turns(entry: object, where: str) -> list[tuple[str, str]]:
    """(role, text) of each turn of a ShareGPT entry, roles as in OpenAI chat messages
    ("user", "assistant", "system"; turns of other speakers are left out)."""
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list):
        raise UserError(f"{where}: missing `conversations` list")
    out = []
    for turn in turns:
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise UserError(f"{where}: each turn needs `from` and a string `value`")
        role = SHAREGPT_ROLES.get(str(turn.get("from", "")).lower())
        if role is not None:
            out.append((role, turn["value"]))
    return out


def _prompt_from_object(obj: object, where: str) -> Prompt:
    if not isinstance(obj, dict):
        raise UserError(f"{where}: each line must be a JSON object")
    category = obj.get("category", "custom")
    if not isinstance(category, str) or not category:
        raise UserError(f"{where}: `category` must be a non-empty string")
    max_tokens = obj.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise UserError(f"{where}: `max_tokens` must be a positive integer")
    if "messages" in obj:
        return Prompt(_messages(obj["messages"], where), category, max_tokens)
    text = obj.get("prompt")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: needs `prompt` (a non-empty string) or `messages`")
    return Prompt(({"role": "user", "content": text},), category, max_tokens)


def _messages(raw: object, where: str) -> tuple[dict[str, str], ...]:
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{where}: `messages` must be a non-empty list")
    out = []
    for i, m in enumerate(raw):
        if not (isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)):
            raise UserError(f"{where}: messages[{i}] needs string `role` and `content`")
        out.append({"role": m["role"], "content": m["content"]})
    return tuple(out)


T = TypeVar("T")


class PromptOrder(Generic[T]):
    """Seeded order over `items`; share `index` of `count` takes every count-th position.

    Position p of the global sequence is `perm[p % n]`, so one process (count=1) and N
    workers together send the same prompts (or conversations), and two arms with the
    same seed match.
    """

    def __init__(self, items: list[T], seed: int, index: int = 0, count: int = 1):
        if not 0 <= index < count:
            raise ValueError(f"share index {index} outside 0..{count - 1}")
        self.items = items
        self._perm = random.Random(seed).sample(range(len(items)), len(items))
        self._pos = index
        self._step = count

    def next(self) -> T:
        """The next item of this share."""
        item = self.items[self._perm[self._pos % len(self._perm)]]
        self._pos += self._step
        return item
