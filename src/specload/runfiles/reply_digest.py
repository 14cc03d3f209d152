"""A reply's fingerprint, and its prompt's: what the record keeps to tell replies apart.

Every kind of generated text counts (content, reasoning, a tool call's name and
arguments), in the order the stream gave it, as UTF-8. The record keeps a digest of the
whole text and a 16-bit CRC of each `BLOCK_BYTES`-byte block, never the text itself: two
replies are the same when their whole digests are, and where they first differ is the
first block whose CRCs differ (to the block; two blocks that happen to share a CRC only
move it one block later). Two requests asked the same when the digests of their
prompts' text (`prompt_digest`) and their max_tokens are the same. The load generator
makes the digests at the end of every request (a CRC per block costs a fraction of a
hash's), the report compares them; both take the block size and the encoding from
here. Pure.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from typing import NamedTuple

BLOCK_BYTES = 16  # a few tokens of English text
_CELL = 5  # a block's characters in the `blocks` cell: 4 hex digits and a space


class Fingerprint(NamedTuple):
    """The record's cells for one reply."""

    size: int  # bytes of generated text
    digest: str  # of the whole text, 16 hex digits ("" for an empty reply)
    blocks: str  # space-separated CRCs of each block, 4 hex digits each


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def prompt_digest(text: str) -> str:
    """The digest of a prompt's text, 16 hex digits."""
    return hashlib.blake2b(_utf8(text), digest_size=8).hexdigest()


def fingerprint(text: str) -> Fingerprint:
    """The fingerprint of a reply's whole generated text."""
    if not text:
        return Fingerprint(0, "", "")
    data, crc = _utf8(text), zlib.crc32
    crcs = [crc(data[i:i + BLOCK_BYTES]) & 0xFFFF for i in range(0, len(data), BLOCK_BYTES)]
    return Fingerprint(len(data), hashlib.blake2b(data, digest_size=8).hexdigest(),
                       struct.pack(f">{len(crcs)}H", *crcs).hex(" ", 2))


def first_difference(blocks_a: str, blocks_b: str) -> int | None:
    """The byte position (to the block) where two replies' texts first differ, by their
    `blocks` cells; None when neither differs from the other. A reply that is the start
    of the other differs where the shorter one ends."""
    if blocks_a == blocks_b:
        return None
    lo, hi = 0, min(len(blocks_a), len(blocks_b))  # the common prefix: by halves, in C
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if blocks_a[:mid] == blocks_b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    if lo == min(len(blocks_a), len(blocks_b)):  # the shorter one is where they part
        lo += 1
    return lo // _CELL * BLOCK_BYTES
