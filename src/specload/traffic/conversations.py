"""Multi-turn conversations for chat sessions: the built-in set and ShareGPT files.

A session replays the *user* side of a conversation: the server writes every reply,
and the next turn sends the whole history with the replies it really streamed, so
only the human turns (and an optional system message) are kept from a file. Files are
ShareGPT as people have them: a JSON array of `{"conversations": [{"from": "human",
"value": ...}, {"from": "gpt", "value": ...}, ...]}`, or JSON lines with one such entry
per line (the built-in set, `data/conversations.jsonl`, made by
`scripts/gen_conversations.py`, is that, with a `category` per entry). Entries without
a human turn are skipped; errors name the file and the entry or line. `SessionDeck`
deals one load process's sessions: conversations in the seeded shared order
(`prompts.PromptOrder`), how many turns each runs, and the think times between them.
Pure: no I/O but the file, no clock.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from specload.errors import UserError
from specload.traffic.prompts import (
    BUILTIN_NAME,
    PromptOrder,
    json_array,
    read_text,
    sharegpt_turns,
)
from specload.traffic.shapes import LengthSpec, ThinkTime

BUILTIN_FILE = "data/conversations.jsonl"


@dataclass(frozen=True, slots=True)
class Conversation:
    """The user's turns of one conversation, in order, and its system message if any."""

    turns: tuple[str, ...]
    category: str
    system: str | None = None
    index: int | None = None  # its place in the set it came from

    def opening(self) -> list[dict[str, str]]:
        """The messages a session starts from (the system message, or none)."""
        return [{"role": "system", "content": self.system}] if self.system else []


def load_conversations(path: str | None) -> list[Conversation]:
    """The built-in set for None/""/"builtin", else a ShareGPT .json or .jsonl file."""
    if not path or path == BUILTIN_NAME:
        text = resources.files("specload").joinpath(BUILTIN_FILE).read_text(encoding="utf-8")
        found = _parse_lines(text, "built-in conversations")
    else:
        content = read_text(path, "conversations")
        found = _parse_lines(content, path) if Path(path).suffix == ".jsonl" else _collect(
            [(f"{path}: entry {i}", e) for i, e in enumerate(json_array(content, path))], path)
    return [replace(c, index=i) for i, c in enumerate(found)]


def _parse_lines(content: str, source: str) -> list[Conversation]:
    entries = []
    for lineno, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append((f"{source}:{lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise UserError(f"{source}:{lineno}: not valid JSON ({exc.msg})") from exc
    return _collect(entries, source)


def _collect(entries: list[tuple[str, Any]], source: str) -> list[Conversation]:
    found = [c for where, entry in entries if (c := _conversation(entry, where)) is not None]
    if not found:
        raise UserError(f"{source}: no conversation has a human turn")
    return found


def _conversation(entry: Any, where: str) -> Conversation | None:
    turns = sharegpt_turns(entry, where)
    users = tuple(text for role, text in turns if role == "user" and text.strip())
    if not users:
        return None
    system = next((text for role, text in turns if role == "system" and text.strip()), None)
    category = entry.get("category", "sharegpt")
    if not isinstance(category, str) or not category:
        raise UserError(f"{where}: `category` must be a non-empty string")
    return Conversation(users, category, system)


class SessionDeck:
    """Sessions for one load process: share `index` of `count` of the seeded order."""

    def __init__(self, conversations: list[Conversation], seed: int, think: ThinkTime,
                 turns: LengthSpec | None = None, index: int = 0, count: int = 1) -> None:
        self._order = PromptOrder(conversations, seed, index, count)
        self._rng = random.Random(f"sessions-{seed}-{index}")
        self.think = think
        self.turns = turns

    def deal(self) -> tuple[Conversation, int]:
        """The next conversation and how many of its turns the session runs."""
        conversation = self._order.next()
        n = len(conversation.turns)
        if self.turns is not None:
            n = min(n, self.turns.sample(self._rng))
        return conversation, n

    def pause(self) -> float:
        """A think time, in seconds."""
        return self.think.sample(self._rng)

    def first_pause(self) -> float:
        """A new user's wait before its first turn: a random part of one think time, so
        users that start together do not send together."""
        return self.pause() * self._rng.random()
