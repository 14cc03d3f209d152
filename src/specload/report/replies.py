"""Each rung's replies by prompt: what `report/parity.py` compares between arms.

A request is known by what it asked: the digest of its prompt's text and the
max_tokens it sent. Two requests with the same key sent the same body to their servers
(the seed is drawn from the prompt), so at temperature 0 their replies should be the
same: the same prompt of a set, a synthetic prompt built alike, a conversation's turn
after the same history. A rung keeps, for each key among the requests that started in
its window and succeeded, the first such reply's fingerprint (`runfiles/reply_digest.py`)
and its length in bytes and tokens (the tokens place a first difference along the
reply).
Records written before replies were fingerprinted have no key and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

Key = tuple[str, int]  # (prompt digest, max_tokens)


class Reply(NamedTuple):
    """One reply's fingerprint as the rung keeps it."""

    digest: str
    blocks: str
    size: int  # bytes
    tokens: int


@dataclass(frozen=True, slots=True)
class ReplyColumns:
    """The record columns that identify a request and its reply, one entry per row."""

    prompt: np.ndarray  # object: the prompt's digest, "" where not recorded
    max_tokens: np.ndarray
    digest: np.ndarray  # object: "" where the reply was not fingerprinted
    size: np.ndarray
    blocks: pd.Series  # Arrow strings, read only for the rows kept

    @classmethod
    def of(cls, req: pd.DataFrame) -> ReplyColumns:
        n = len(req)

        def numbers(name: str) -> np.ndarray:
            return (req[name].to_numpy(dtype=float) if name in req
                    else np.full(n, np.nan))

        def texts(name: str) -> np.ndarray:
            return (req[name].to_numpy(dtype=object) if name in req
                    else np.full(n, "", dtype=object))

        blocks = req["reply_blocks"] if "reply_blocks" in req else pd.Series([""] * n)
        return cls(texts("prompt_hash"), numbers("max_tokens"), texts("reply_hash"),
                   numbers("reply_bytes"), blocks.reset_index(drop=True))


def by_prompt(cols: ReplyColumns, tokens: np.ndarray, rows: np.ndarray) -> dict[Key, Reply]:
    """The replies of the `rows` (a mask) by key: the first reply of each key."""
    keep = np.flatnonzero(rows & (cols.prompt != "") & np.isfinite(cols.max_tokens)
                          & (cols.digest != ""))
    keys = pd.DataFrame({"prompt": cols.prompt[keep], "max_tokens": cols.max_tokens[keep]})
    first = keep[~keys.duplicated().to_numpy()]
    return {(str(cols.prompt[i]), int(cols.max_tokens[i])): Reply(
        str(cols.digest[i]), str(cols.blocks.iat[i] or ""), int(cols.size[i]), int(tokens[i]))
        for i in first}
