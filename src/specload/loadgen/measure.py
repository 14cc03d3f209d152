"""Pure per-request metric arithmetic, as defined in docs/design.md "Metric definitions".

`StreamTally` collects what a stream delivered and `StreamTally.result` turns it into
TTFT, E2E, TPOT, output tokens and their source. A *token chunk* is a chunk that carries
generated text or, by the server's per-chunk usage, generated tokens (vLLM's last chunk
often has empty text and the EOS token); TTFT is the first chunk with text, E2E the last
token chunk. Token-source rules: the final `usage` chunk wins; otherwise the cumulative
per-chunk usage (`continuous_usage_stats`); otherwise the number of content chunks (an
undercount under speculative decoding). Per-chunk token counts come from differences of
the cumulative usage; they are kept only when they add up to the total (a server whose
per-chunk usage stays at zero, as Ollama's completions do, gets none), and tokens the
final usage counts beyond them (an EOS the finish chunk never showed) are credited at
the finish chunk's arrival. `chunk_itls` and `token_itls` give the inter-token latencies
from the same data. The request's drafted and accepted tokens (and verification steps)
are the last counts its chunks gave (cumulative, as the engine keeps them). Every tally
keeps all the text the stream generated, of every kind and in its order (`generated`,
which the record fingerprints); one made with `keep_text` also keeps the reply's own
text (`reply`), which a chat session sends back in its next turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from specload.loadgen.chunk_json import Chunk, DraftCounts


@dataclass(slots=True, frozen=True)
class Measured:
    """Per-request figures; times in milliseconds from send start."""

    ttft_ms: float | None
    e2e_ms: float | None
    tpot_ms: float | None
    output_tokens: int
    tokens_source: str  # one of records.TOKENS_SOURCES
    prompt_tokens: int | None
    arrivals: list[float]  # arrival time of each token chunk (epoch s)
    chunk_tokens: list[int] | None  # tokens per token chunk, None when not known
    finish_reason: str
    speculation: DraftCounts | None = None  # as the engine counted it for the request
    generated: str = ""  # every kind of text the stream generated, in order


class StreamTally:
    """Accumulates one stream's chunks; `t0` is the send start, on the arrivals' clock."""

    __slots__ = (
        "_cum_seen",
        "_final_tokens",
        "_per_chunk",
        "arrivals",
        "finish_arrival",
        "finish_reason",
        "first_text",
        "generated",
        "prompt_tokens",
        "speculation",
        "t0",
        "texts",
    )

    def __init__(self, t0: float, keep_text: bool = False) -> None:
        self.t0 = t0
        self.texts: list[str] | None = [] if keep_text else None
        self.generated: list[str] = []
        self.arrivals: list[float] = []  # arrival time of each token chunk
        self.first_text: float | None = None  # arrival of the first chunk with text
        self._per_chunk: list[int] | None = []
        self._cum_seen: int | None = None  # latest cumulative completion tokens seen
        self._final_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.finish_reason = ""
        self.finish_arrival: float | None = None
        self.speculation: DraftCounts | None = None

    def add(self, now: float, chunk: Chunk) -> None:
        """Account for one parsed chunk that arrived at time `now`."""
        if chunk.prompt_tokens is not None:
            self.prompt_tokens = chunk.prompt_tokens
        self._keep_text(chunk)
        if chunk.finish_reason:
            self.finish_reason = chunk.finish_reason
            self.finish_arrival = now
        if chunk.speculation is not None:
            self.speculation = chunk.speculation
        cum = chunk.completion_tokens
        if chunk.usage_only:
            self._final_tokens = cum
            return
        grew = cum is not None and cum > (self._cum_seen or 0)
        if chunk.has_content or grew:
            if chunk.has_content and self.first_text is None:
                self.first_text = now
            self.arrivals.append(now)
            if self._per_chunk is not None:
                if cum is None:
                    self._per_chunk = None
                else:
                    self._per_chunk.append(cum - (self._cum_seen or 0))
        if cum is not None:
            self._cum_seen = cum

    def _keep_text(self, chunk: Chunk) -> None:
        if chunk.other:
            self.generated.append(chunk.other)
        if chunk.text:
            self.generated.append(chunk.text)
            if self.texts is not None:
                self.texts.append(chunk.text)

    @property
    def has_text(self) -> bool:
        return self.first_text is not None

    @property
    def output_tokens(self) -> int:
        """The tokens tallied so far (as `result().output_tokens`, without the rest)."""
        return self._tokens()[0]

    def reply(self) -> str:
        """The reply's text so far ("" unless made with `keep_text`)."""
        return "".join(self.texts or ())

    def _tokens(self) -> tuple[int, str]:
        if self._final_tokens is not None:
            return self._final_tokens, "usage"
        if self._cum_seen:
            return self._cum_seen, "continuous_usage"
        return len(self.arrivals), "chunks"

    def _chunk_tokens(self, tokens: int) -> tuple[list[float], list[int] | None]:
        """Token chunks and their counts, the counts only when they add up to `tokens`."""
        arrivals, per = self.arrivals, self._per_chunk
        if not per or not arrivals or self._cum_seen is None:
            return arrivals, None
        counted = sum(per)
        if counted == tokens:
            return arrivals, per
        late = self.finish_arrival
        if 0 < counted < tokens and late is not None and late >= arrivals[-1]:
            return [*arrivals, late], [*per, tokens - counted]
        return arrivals, None

    def result(self) -> Measured:
        """The request's figures from everything tallied so far."""
        tokens, source = self._tokens()
        arrivals, per_chunk = self._chunk_tokens(tokens)
        ttft = (self.first_text - self.t0) * 1e3 if self.first_text is not None else None
        e2e = (arrivals[-1] - self.t0) * 1e3 if arrivals and ttft is not None else None
        return Measured(
            ttft_ms=ttft,
            e2e_ms=e2e,
            tpot_ms=tpot_ms(ttft, e2e, tokens),
            output_tokens=tokens,
            tokens_source=source,
            prompt_tokens=self.prompt_tokens,
            arrivals=arrivals,
            chunk_tokens=per_chunk,
            finish_reason=self.finish_reason,
            speculation=self.speculation,
            generated="".join(self.generated),
        )


def tpot_ms(ttft_ms: float | None, e2e_ms: float | None, output_tokens: int) -> float | None:
    """(E2E - TTFT) / (tokens - 1); None when fewer than two tokens or no content."""
    if ttft_ms is None or e2e_ms is None or output_tokens < 2:
        return None
    return (e2e_ms - ttft_ms) / (output_tokens - 1)


def chunk_itls(arrivals: Sequence[float]) -> list[float]:
    """Gaps between consecutive content chunks, in the unit of `arrivals`."""
    return [b - a for a, b in pairwise(arrivals)]


def token_itls(arrivals: Sequence[float], tokens: Sequence[int]) -> list[float]:
    """Each chunk gap divided by the tokens the later chunk carried (chunks with 0 skipped)."""
    if len(tokens) != len(arrivals):
        raise ValueError("arrivals and tokens differ in length")
    return [
        (arrivals[i] - arrivals[i - 1]) / tokens[i]
        for i in range(1, len(arrivals))
        if tokens[i] > 0
    ]


def tokens_per_chunk(output_tokens: int, num_chunks: int) -> float | None:
    """Mean tokens per content chunk: under speculation, an estimate of accepted length."""
    return output_tokens / num_chunks if num_chunks else None
