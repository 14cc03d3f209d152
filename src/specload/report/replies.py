"""Each rung's replies by prompt: what `report/parity.py` compares between arms.

A request is known by what it asked: the prompt's index in its set, the turn of its
conversation (0 outside sessions) and the max_tokens it sent. Two requests with the
same key sent the same body to their servers, so at temperature 0 their replies should
be the same. A rung keeps, for each key among the requests that started in its window
and succeeded, the first such reply's fingerprint (`runfiles/reply_digest.py`) and its
length in characters and tokens (the tokens place a first difference along the reply).
Requests with synthetic prompts, and records written before replies were fingerprinted,
have no key and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

Key = tuple[int, int, int]  # (prompt index, turn, max_tokens)


class Reply(NamedTuple):
    """One reply's fingerprint as the rung keeps it."""

    digest: str
    blocks: str
    chars: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ReplyColumns:
    """The record columns that identify a request and its reply, one entry per row."""

    prompt_index: np.ndarray  # float: NaN where the prompt was made up
    turn: np.ndarray
    max_tokens: np.ndarray
    digest: np.ndarray  # object: "" where the reply was not fingerprinted
    chars: np.ndarray
    blocks: pd.Series  # Arrow strings, read only for the rows kept

    @classmethod
    def of(cls, req: pd.DataFrame) -> ReplyColumns:
        n = len(req)

        def numbers(name: str) -> np.ndarray:
            return (req[name].to_numpy(dtype=float) if name in req
                    else np.full(n, np.nan))

        digest = req["reply_hash"].to_numpy(dtype=object) if "reply_hash" in req else (
            np.full(n, "", dtype=object))
        blocks = req["reply_blocks"] if "reply_blocks" in req else pd.Series([""] * n)
        return cls(numbers("prompt_index"), numbers("turn"), numbers("max_tokens"), digest,
                   numbers("reply_chars"), blocks.reset_index(drop=True))


def by_prompt(cols: ReplyColumns, tokens: np.ndarray, rows: np.ndarray) -> dict[Key, Reply]:
    """The replies of the `rows` (a mask) by key: the first reply of each key."""
    keep = rows & np.isfinite(cols.prompt_index) & np.isfinite(cols.max_tokens) & (
        cols.digest != "")
    found: dict[Key, Reply] = {}
    for i in np.flatnonzero(keep):
        key = (int(cols.prompt_index[i]),
               int(cols.turn[i]) if np.isfinite(cols.turn[i]) else 0, int(cols.max_tokens[i]))
        if key not in found:
            found[key] = Reply(str(cols.digest[i]), str(cols.blocks.iat[i] or ""),
                               int(cols.chars[i]), int(tokens[i]))
    return found
