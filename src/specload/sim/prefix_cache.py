"""Pure prefix cache of prompt KV blocks, keyed on token content as vLLM V1 keys it.

A prompt is cut into full blocks of `block_tokens` tokens; each block's key hashes its
tokens together with the key of the block before it, so a key names a whole prefix
(vLLM `v1/core/kv_cache_utils.py`, `hash_block_tokens`; only full blocks are cached).
The cache counts references: a block used by a running request is never evicted; a
block nobody uses stays cached, takes KV room, and is evicted least recently freed
first, the tail of a prompt before its head (vLLM's free-block queue, which frees a
request's blocks in reverse order). A chat reply is cached as the next turn will send
it back, under its role's template tokens, when its request finishes (engines cache
generated blocks too, and a chat template re-renders a reply the same way). The
simulator has no tokenizer: a prompt arrives as text with one token per
`CHARS_PER_TOKEN` characters (`textgen.chat_token_text`). No clock and no randomness.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from specload.sim.textgen import CHARS_PER_TOKEN


def block_keys(token_text: str, block_tokens: int) -> tuple[int, ...]:
    """Chained keys of the full blocks of a prompt given as fixed-width token text."""
    width = block_tokens * CHARS_PER_TOKEN
    keys: list[int] = []
    parent = 0
    for start in range(0, len(token_text) - width + 1, width):
        parent = hash((parent, token_text[start:start + width]))
        keys.append(parent)
    return tuple(keys)


class PrefixCache:
    """Cached blocks with reference counts and an LRU queue of the unused ones."""

    def __init__(self, block_tokens: int) -> None:
        self.block_tokens = block_tokens
        self._refs: dict[int, int] = {}
        self._free: OrderedDict[int, None] = OrderedDict()  # unused blocks, evicted first

    @property
    def tokens(self) -> int:
        """KV tokens the cached blocks take, used or not."""
        return len(self._refs) * self.block_tokens

    @property
    def used_tokens(self) -> int:
        """KV tokens of cached blocks some running request uses."""
        return (len(self._refs) - len(self._free)) * self.block_tokens

    def __contains__(self, key: int) -> bool:
        return key in self._refs

    def match(self, keys: Sequence[int], max_blocks: int) -> int:
        """How many leading blocks of `keys` (at most `max_blocks`) are cached."""
        n = 0
        refs = self._refs
        for key in keys[:max_blocks]:
            if key not in refs:
                break
            n += 1
        return n

    def acquire(self, keys: Sequence[int]) -> None:
        """Use cached blocks (all of `keys` must be cached): they cannot be evicted now."""
        refs, free = self._refs, self._free
        for key in keys:
            if refs[key] == 0:
                del free[key]
            refs[key] += 1

    def insert(self, key: int) -> None:
        """A block a request has just computed: cached and used by that request."""
        if key in self._refs:
            self.acquire((key,))
        else:
            self._refs[key] = 1

    def keep(self, key: int) -> None:
        """Cache a block nobody uses now (a finished reply), most recently freed."""
        if key in self._refs:
            if self._refs[key] == 0:
                self._free.move_to_end(key)
        else:
            self._refs[key] = 0
            self._free[key] = None

    def release(self, keys: Sequence[int]) -> None:
        """A request stops using its blocks; unused ones queue for eviction, tail first."""
        refs, free = self._refs, self._free
        for key in reversed(keys):
            refs[key] -= 1
            if refs[key] == 0:
                free[key] = None

    def evict(self) -> bool:
        """Drop the least recently freed unused block; False if every block is in use."""
        if not self._free:
            return False
        key, _ = self._free.popitem(last=False)
        del self._refs[key]
        return True
