"""A reply's fingerprint: what the record keeps of its text to tell two replies apart.

Every kind of generated text counts (content, reasoning, a tool call's name and
arguments), in the order the stream gave it. The record keeps a digest of the whole
text and one short digest per `BLOCK_CHARS`-character block, never the text itself:
two replies are the same when their whole digests are, and where they first differ is
the first block whose digests differ (to the block; a block digest that happens to
collide only moves it one block later). The load generator makes the fingerprint, the
report compares them; both take the block size and the encoding from here. Pure.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

BLOCK_CHARS = 16  # characters per block: a few tokens of English text
_BLOCK_BYTES = 2  # 4 hex digits per block


class Fingerprint(NamedTuple):
    """The record's cells for one reply."""

    chars: int  # characters of generated text
    digest: str  # of the whole text, 16 hex digits ("" for an empty reply)
    blocks: str  # space-separated digests of each block, 4 hex digits each


def fingerprint(text: str) -> Fingerprint:
    """The fingerprint of a reply's whole generated text."""
    if not text:
        return Fingerprint(0, "", "")
    whole = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    blocks = " ".join(
        hashlib.blake2b(text[i:i + BLOCK_CHARS].encode("utf-8", "surrogatepass"),
                        digest_size=_BLOCK_BYTES).hexdigest()
        for i in range(0, len(text), BLOCK_CHARS))
    return Fingerprint(len(text), whole, blocks)


def first_difference(blocks_a: str, blocks_b: str) -> int | None:
    """The character position (to the block) where two replies' texts first differ, by
    their `blocks` cells; None when neither differs from the other. A reply that is the
    start of the other differs where the shorter one ends."""
    a, b = blocks_a.split(), blocks_b.split()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i * BLOCK_CHARS
    return None if len(a) == len(b) else min(len(a), len(b)) * BLOCK_CHARS
