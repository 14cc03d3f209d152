"""Fitting a prompt set to a server's context: which prompts to leave out or shorten.

A prompt fits when its tokens plus the output it asks for are within the server's
context (vLLM and llama.cpp both give a request its whole output then); one that does
not would fail with an HTTP 400, or see its output cut short and every figure of its
rung with it. `plan` decides, from a token counter the caller gives (the server's own
tokenizer, `runner/context_check.py`), what happens to each prompt that does not fit,
by the scenario's `request.over_context`: leave it out of every arm (`skip`), shorten
its last message until it fits (`trim`, checked with the counter again), or send it as
it is (`send`). Only prompts that could
be too long by their UTF-8 bytes (each token is at least one byte) and the chat
template's tokens are counted, so a large set costs few counts. The decision is data
(`Fit`), carried to every load process as two option texts (`skip_text`, `cut_text`)
and applied to the loaded set by `apply`, the same on every arm and worker. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from specload.traffic.prompts import Prompt

POLICIES = ("skip", "trim", "send")
# a prompt is trimmed only to keep at least this many of its tokens; else it is left out
MIN_TRIMMED_TOKENS = 16
TRIM_TRIES = 8

Counter = Callable[[Prompt], int]  # a prompt's tokens as the server counts them


@dataclass(frozen=True, slots=True)
class Fit:
    """What fitting a prompt set to one context decided; indices into the set."""

    context: int
    over: tuple[int, ...] = ()  # the prompts that did not fit as they were
    skip: tuple[int, ...] = ()  # left out of every arm
    cut: dict[int, int] = field(default_factory=dict)  # index -> characters kept
    counted: int = 0  # prompts the server counted (the rest fit by their bytes)
    longest: int = 0  # tokens of the longest prompt counted


def utf8_bytes(prompt: Prompt) -> int:
    return sum(len(m["content"].encode()) for m in prompt.messages)


def plan(prompts: Sequence[Prompt], budgets: Sequence[int], context: int, count: Counter,
         template_tokens: int, policy: str = "skip") -> Fit:
    """Fit `prompts` (each asking for `budgets[i]` output tokens) to `context`.

    `template_tokens` is what the chat template adds to one message (the server's count
    of an empty one): a prompt whose bytes plus that per message leave room is not
    counted."""
    if policy not in POLICIES:
        raise ValueError(f"over_context must be one of {', '.join(POLICIES)}, got {policy!r}")
    over, skip, cut = [], [], {}
    counted = longest = 0
    for i in candidates(prompts, budgets, context, template_tokens):
        prompt, room = prompts[i], context - budgets[i]  # the prompt tokens that fit
        tokens = count(prompt)
        counted += 1
        longest = max(longest, tokens)
        if tokens <= room:
            continue
        over.append(i)
        if policy == "send":
            continue
        kept = _trimmed(prompt, tokens, room, count) if policy == "trim" else None
        if kept is None:
            skip.append(i)
        else:
            cut[i] = kept
    return Fit(context, tuple(over), tuple(skip), cut, counted, longest)


def candidates(prompts: Sequence[Prompt], budgets: Sequence[int], context: int,
               template_tokens: int) -> list[int]:
    """The prompts that may not fit: those whose bytes, with the template's tokens and
    one more (a tokenizer's leading-space mark) per message, exceed the room left."""
    return [i for i, (prompt, budget) in enumerate(zip(prompts, budgets, strict=True))
            if utf8_bytes(prompt) + (template_tokens + 1) * len(prompt.messages)
            > context - budget]


def _trimmed(prompt: Prompt, tokens: int, room: int, count: Counter) -> int | None:
    """Characters of the last message to keep so the prompt fills `room` tokens as
    closely as the counts allow (within 1%, or what `TRIM_TRIES` counts reach), found by
    interpolating between a length that fits and one that does not; None when fewer than
    `MIN_TRIMMED_TOKENS` of that message's tokens would be left."""
    rest = count(shortened(prompt, 0))  # the other messages and the template
    if room - rest < MIN_TRIMMED_TOKENS:
        return None
    fits, fit_tokens = 0, rest
    over, over_tokens = len(prompt.messages[-1]["content"]), tokens
    for _ in range(TRIM_TRIES):
        share = (room - fit_tokens) / (over_tokens - fit_tokens)
        guess = min(max(fits + int((over - fits) * share * 0.98), fits + 1), over - 1)
        if guess <= fits:
            break
        n = count(shortened(prompt, guess))
        if n <= room:
            fits, fit_tokens = guess, n
            if room - n <= room // 100:
                break
        else:
            over, over_tokens = guess, n
    return fits if fit_tokens - rest >= MIN_TRIMMED_TOKENS else None


def shortened(prompt: Prompt, chars: int) -> Prompt:
    """The prompt with its last message's text cut to its first `chars` characters."""
    *head, last = prompt.messages
    return replace(prompt, messages=(*head, {**last, "content": last["content"][:chars]}))


def apply(prompts: Sequence[Prompt], skip: Sequence[int], cut: dict[int, int]
          ) -> list[Prompt]:
    """The prompt set as fitted: `skip` left out, `cut` shortened."""
    if len(skip) >= len(prompts):
        raise ValueError("every prompt is left out: none fits the server's context")
    left_out = set(skip)
    return [shortened(p, cut[i]) if i in cut else p
            for i, p in enumerate(prompts) if i not in left_out]


def skip_text(fit: Fit) -> str:
    """`3,17,29`: the option text of the prompts left out."""
    return ",".join(map(str, fit.skip))


def cut_text(fit: Fit) -> str:
    """`5:1200,8:900`: the option text of the prompts shortened (index: characters)."""
    return ",".join(f"{i}:{n}" for i, n in sorted(fit.cut.items()))


def parse_skip(text: str) -> list[int]:
    """The indices of a `skip_text`; ValueError naming what is wrong."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--skip-prompts wants indices like 3,17,29, got {text!r}") from None


def parse_cut(text: str) -> dict[int, int]:
    """The index: characters pairs of a `cut_text`; ValueError naming what is wrong."""
    try:
        pairs = (part.split(":") for part in text.split(",") if part.strip())
        return {int(i): int(n) for i, n in pairs}
    except ValueError:
        raise ValueError(f"--cut-prompts wants index:chars pairs like 5:1200,8:900, got "
                         f"{text!r}") from None
