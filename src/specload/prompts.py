"""Prompts: the built-in set, ShareGPT / JSON-lines loaders, and the seeded request order.

The built-in set (`data/prompts.jsonl`, made by `scripts/gen_prompts.py`) has 225 prompts
in five categories (chat, code, summarisation, reasoning, extraction) because speculative
acceptance depends on the kind of text. A JSON-lines file has one object per line with
`prompt` (a string) or `messages` (OpenAI chat messages), and optional `max_tokens` and
`category`. A ShareGPT file is a JSON array of `{"conversations": [{"from": "human",
"value": ...}, ...]}`; the first human turn is the prompt. Errors name the file and the
line (JSONL) or entry (ShareGPT). `PromptOrder` is a seeded permutation walked as one
global sequence that load processes share round-robin, so the requests' prompts are the
same for every arm and do not depend on how many workers there are.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from specload.errors import UserError

BUILTIN_NAME = "builtin"
CATEGORIES = ("chat", "code", "summarisation", "reasoning", "extraction")


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt as chat messages; `text` is the flat form for /v1/completions."""

    messages: tuple[dict[str, str], ...]
    category: str
    max_tokens: int | None = None
    chars: int | None = None  # synthetic prompts: characters sent, for calibration

    @property
    def text(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


def load_prompts(path: str | None) -> list[Prompt]:
    """The built-in set for None/"" /"builtin", else the file at `path` by its suffix."""
    if not path or path == BUILTIN_NAME:
        text = resources.files("specload").joinpath("data/prompts.jsonl")
        return parse_jsonl(text.read_text(encoding="utf-8"), "built-in prompts")
    file = Path(path)
    try:
        content = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read prompt file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if file.suffix == ".jsonl":
        return parse_jsonl(content, path)
    return parse_sharegpt(content, path)


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
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, list):
        raise UserError(f"{source}: a ShareGPT file is a JSON array of conversations")
    prompts: list[Prompt] = []
    for index, entry in enumerate(data):
        where = f"{source}: entry {index}"
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list):
            raise UserError(f"{where}: missing `conversations` list")
        for turn in turns:
            if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
                raise UserError(f"{where}: each turn needs `from` and a string `value`")
            if turn.get("from") in ("human", "user") and turn["value"].strip():
                prompts.append(Prompt(({"role": "user", "content": turn["value"]},), "sharegpt"))
                break
    if not prompts:
        raise UserError(f"{source}: no conversation has a human turn")
    return prompts


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


class PromptOrder:
    """Seeded order over `prompts`; share `index` of `count` takes every count-th position.

    Position p of the global sequence is `perm[p % n]`, so one process (count=1) and N
    workers together send the same prompts, and two arms with the same seed match.
    """

    def __init__(self, prompts: list[Prompt], seed: int, index: int = 0, count: int = 1):
        if not 0 <= index < count:
            raise ValueError(f"share index {index} outside 0..{count - 1}")
        self.prompts = prompts
        self._perm = random.Random(seed).sample(range(len(prompts)), len(prompts))
        self._pos = index
        self._step = count

    def next(self) -> Prompt:
        """The next prompt of this share."""
        prompt = self.prompts[self._perm[self._pos % len(self._perm)]]
        self._pos += self._step
        return prompt
