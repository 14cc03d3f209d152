"""Deterministic prompt accounting and generated text.

The simulator has no tokenizer: a prompt counts one token per 4 characters (the usual
rule of thumb for English BPE vocabularies) plus a few template tokens per chat
message. Generated tokens are words drawn from a fixed vocabulary by an RNG seeded
with the request seed and a digest of the prompt, consumed one word per token, so the
text depends only on (seed, prompt) and not on how steps chunk it: spec-on and spec-off
servers stream the same text. A greedy request (temperature 0) draws with seed 0
whatever seed it sent, as a greedy engine's output does not depend on its seed. Words
need no JSON escaping, which lets the API splice them into pre-encoded SSE templates.
The EOS length is lognormal around the profile's mean, drawn from the same digest.
"""

from __future__ import annotations

import hashlib
import math
import random

CHARS_PER_TOKEN = 4
CHAT_TOKENS_PER_MESSAGE = 4
CHAT_TOKENS_PER_PROMPT = 3
EOS_SIGMA = 0.6

_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from "
    "at which but have an they you were her she there one all we their been has will when "
    "who more if no out so said what up its about than into them can only other new some "
    "could time these two may then do first any my now such like our over even most made "
    "after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still "
    "own see men work long get here between both life being under never day same another "
    "know while last might us great old year off come since against go came right used "
    "take three model token server batch cache draft verify step queue"
)
VOCAB: tuple[str, ...] = tuple(" " + w for w in _WORDS.split())


def text_tokens(text: str) -> int:
    """Estimated token count of a piece of text (at least 1 for non-empty text)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def chat_prompt_tokens(contents: list[str]) -> int:
    """Estimated prompt tokens of a chat: message texts plus template tokens."""
    return CHAT_TOKENS_PER_PROMPT + sum(
        CHAT_TOKENS_PER_MESSAGE + text_tokens(c) for c in contents
    )


def _padded(text: str) -> str:
    return text + "\x00" * (-len(text) % CHARS_PER_TOKEN)


def chat_token_text(messages: list[tuple[str, str]]) -> str:
    """A chat prompt as fixed-width token text: one token per CHARS_PER_TOKEN characters.

    The prompt's template tokens come first (a BOS and a system header, the same for
    every chat), then each message's template tokens (its role) and its text, so two
    chats that share their first messages share a token prefix, as under a real chat
    template. Its length is `chat_prompt_tokens` tokens.
    """
    head = "\x02" * (CHAT_TOKENS_PER_PROMPT * CHARS_PER_TOKEN)
    width = CHAT_TOKENS_PER_MESSAGE * CHARS_PER_TOKEN
    return head + "".join(("\x01" + role).ljust(width, "\x01")[:width] + _padded(text)
                          for role, text in messages)


def reply_token_text(reply: str) -> str:
    """An assistant reply as the next turn's chat prompt holds it (after `chat_token_text`
    of the turn's messages)."""
    return chat_token_text([("assistant", reply)])[CHAT_TOKENS_PER_PROMPT * CHARS_PER_TOKEN:]


def completion_token_text(prompt: str | list[int]) -> str:
    """A completion prompt (text or token ids) as fixed-width token text."""
    if isinstance(prompt, str):
        return _padded(prompt)
    return "".join("\x03\x03" + chr(t >> 16) + chr(t & 0xFFFF) for t in prompt)


def digest(seed: int, prompt: str) -> int:
    """A stable 64-bit digest of (seed, prompt) for seeding a request's RNGs."""
    h = hashlib.blake2b(prompt.encode("utf-8", "surrogatepass"), digest_size=8,
                        key=str(seed).encode()[:64])
    return int.from_bytes(h.digest(), "big")


def output_length(
    key: int, max_tokens: int, min_tokens: int, ignore_eos: bool, eos_mean: int
) -> tuple[int, str]:
    """(tokens to generate, finish_reason) for a request with digest `key`."""
    if ignore_eos:
        return max_tokens, "length"
    rng = random.Random(key ^ 0x5EED)
    mu = math.log(eos_mean) - EOS_SIGMA**2 / 2
    eos = max(1, round(rng.lognormvariate(mu, EOS_SIGMA)))
    n = max(eos, min_tokens)
    if n >= max_tokens:
        return max_tokens, "length"
    return n, "stop"


class TokenStream:
    """The words a request generates, handed out in order; `alter_at` replaces the word of
    that token (from 0) by another, as a server whose speculation changed the output."""

    __slots__ = ("_alter_at", "_random", "_taken")

    def __init__(self, key: int, alter_at: int | None = None) -> None:
        self._random = random.Random(key).random
        self._alter_at = alter_at
        self._taken = 0

    def take(self, n: int) -> str:
        """The next n tokens' text (the words `Random.choices(VOCAB, k=n)` would draw)."""
        return "".join(self.words(n))

    def words(self, n: int) -> list[str]:
        """The next n tokens, one word each."""
        r, size = self._random, len(VOCAB)
        out = [VOCAB[int(r() * size)] for _ in range(n)]
        at = self._alter_at
        if at is not None and self._taken <= at < self._taken + n:
            out[at - self._taken] = VOCAB[(VOCAB.index(out[at - self._taken]) + 1) % size]
        self._taken += n
        return out
