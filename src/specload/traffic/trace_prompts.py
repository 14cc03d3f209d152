"""Prompts for trace requests: the trace's lengths, its shared prefixes as shared text.

A trace logs lengths, never text, so the prompt of each request is written here, from
the built-in prompt texts as `shapes.PromptBuilder` writes synthetic ones (no tokenizer,
nothing downloaded). A Mooncake request names its prompt's blocks by hash id; every
block id has one text, the same in every request, every arm and every load process (it
is cut from the corpus at an offset drawn from the id and the run's seed), so two
requests that share their first blocks share that prefix at the server, and an engine's
prefix cache finds it as the traced one did. A block's text is `block_tokens` at a first
guess of the tokenizer's density; the prompt is then cut (or continued with text of its
own) to the length the token model predicts for the request's `input_tokens`. The model
is fitted once, before the first arrival, from what the server counts for two probe
prompts (`probes`, `fit`: the template's overhead and the density), and then fixed: the
same server's tokenizer gives every arm and load process the same prompts, so their
replies can be compared. A request without blocks (an Azure trace) gets text of its own.
Each pass over the window (a rung's warmup, its measure window: `trace_plan.Replay`)
writes its own text, so that only what the trace shares is shared. The reply's length
is the trace's `output_tokens`, sent as `max_tokens` (with `ignore_eos` the server
writes all of it). Pure: no I/O, no clock.
"""

from __future__ import annotations

import zlib

from specload.traffic.prompts import Prompt
from specload.traffic.shapes import INITIAL_CHARS_PER_TOKEN, TokenModel, wrapped_cut
from specload.traffic.trace_plan import Replay
from specload.traffic.traces import TraceRequest

CATEGORY = "trace"
PROBE_TOKENS = (256, 2048)  # the two probe prompts' lengths at the first guess


class TracePrompts:
    """Each trace request's prompt, its blocks' text shared; calibrated by `observe`."""

    def __init__(self, corpus: str, block_tokens: int, seed: int) -> None:
        text = " ".join(corpus.split())
        if not text:
            raise ValueError("the text to build prompts from is empty")
        self._text = text
        self._seed = seed
        self._block_chars = max(1, round(block_tokens * INITIAL_CHARS_PER_TOKEN))
        self.model = TokenModel()
        self.fitted = False

    def _cut(self, key: str, chars: int) -> str:
        """`chars` characters of the corpus from the offset `key` draws, wrapping."""
        start = zlib.crc32(f"{self._seed}:{key}".encode()) % len(self._text)
        return wrapped_cut(self._text, start, chars)

    def build(self, request: TraceRequest, replay: Replay) -> Prompt:
        """The prompt of one arrival: `request`, the window's `replay.request`-th."""
        chars = self.model.chars_for(request.input_tokens)
        shared = "".join(self._cut(f"{replay.replay}: block {b}", self._block_chars)
                         for b in request.blocks)
        own = self._cut(f"{replay.replay}: request {replay.request}",
                        max(0, chars - len(shared)))
        content = (shared + own)[:chars]
        return Prompt(({"role": "user", "content": content},), CATEGORY,
                      request.output_tokens, len(content), replay.request)

    def probes(self) -> tuple[str, str]:
        """The two probe prompts' texts, a short and a long one."""
        short, long = (self._cut("probe", round(n * INITIAL_CHARS_PER_TOKEN))
                       for n in PROBE_TOKENS)
        return short, long

    def fit(self, counts: tuple[int, int]) -> None:
        """The server counted `counts` prompt tokens for the two `probes`: the overhead is
        what a prompt costs beyond its text, the density the tokens per character."""
        short, long = (len(text) for text in self.probes())
        density = (counts[1] - counts[0]) / (long - short)
        if density > 0:
            self.model.density = density
            self.model.overhead = counts[0] - density * short
        self.fitted = True
