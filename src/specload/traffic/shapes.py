"""Synthetic requests of a given shape: lengths and think times from distributions.

`Distribution` is a value that is fixed or drawn per use from a uniform range, a normal
(mean, sd), a lognormal (mean, sigma of the log) or an exponential (mean) distribution,
as vLLM's random dataset and guidellm's synthetic data do; written `1024`,
`uniform:512:1536`, `normal:1024:128`, `lognormal:1024:0.5` or `exponential:5` (on the
command line and in scenarios). `LengthSpec` is one in whole tokens (at least 1),
`ThinkTime` one in seconds (at least 0): what a chat user waits between turns.

`PromptBuilder` writes prompts of a target token length from the built-in prompt
texts (no tokenizer, nothing downloaded): it cuts the text at a length in characters
predicted by a linear model `tokens = overhead + chars / chars_per_token`, and learns
that model from what the server reports in `usage.prompt_tokens` (recursive least
squares, so both the chat template's overhead and the tokenizer's density are found;
with one fixed length the prediction at that length is what converges). Each prompt
starts at its own seeded offset in the text, so prompts differ and no prefix is shared
by accident; an optional system prompt of `shared_prefix_tokens` is the same for every
request (prefix caching). Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar, Literal, Self

Kind = Literal["fixed", "uniform", "normal", "lognormal", "exponential"]
ARITY: dict[str, int] = {"fixed": 1, "uniform": 2, "normal": 2, "lognormal": 2,
                         "exponential": 1}
KINDS: tuple[str, ...] = tuple(ARITY)
INITIAL_CHARS_PER_TOKEN = 4.0


class LengthError(ValueError):
    """A distribution spec that does not parse; the message says what is expected."""


@dataclass(frozen=True, slots=True)
class Distribution:
    """A value, fixed or drawn per use; subclasses name what it measures and its floor."""

    kind: Kind
    a: float  # fixed: the value; uniform: low; normal, lognormal, exponential: the mean
    b: float = 0.0  # uniform: high; normal: standard deviation; lognormal: sigma of log
    WHAT: ClassVar[str] = "value"
    LOW: ClassVar[float] = 0.0  # the smallest value a spec may give

    @classmethod
    def parse(cls, text: str | float) -> Self:
        """`N`, `fixed:N`, `uniform:LO:HI`, `normal:MEAN:SD`, `lognormal:MEAN:SIGMA`,
        `exponential:MEAN`."""
        parts = str(text).strip().split(":")
        usage = ("expected a number or uniform:LOW:HIGH, normal:MEAN:SD, "
                 "lognormal:MEAN:SIGMA or exponential:MEAN")
        kind = "fixed" if len(parts) == 1 else parts[0]
        values = parts if len(parts) == 1 else parts[1:]
        if kind not in ARITY or len(values) != ARITY[kind]:
            raise LengthError(f"{text!r}: {usage}")
        try:
            nums = [float(v) for v in values]
        except ValueError:
            raise LengthError(f"{text!r}: {usage}") from None
        # `kind` is one of ARITY's keys: checked above
        spec = cls(kind, nums[0], nums[1] if len(nums) > 1 else 0.0)  # type: ignore[arg-type]
        spec.check()
        return spec

    def check(self) -> None:
        if not (self.a >= self.LOW and math.isfinite(self.a)):
            raise LengthError(f"{self.text()}: the {self.WHAT} must be at least {self.LOW:g}")
        if self.kind in ("lognormal", "exponential") and not self.a > 0:
            raise LengthError(f"{self.text()}: the mean must be more than 0")
        if self.kind == "uniform" and not (self.b >= self.a and math.isfinite(self.b)):
            raise LengthError(f"{self.text()}: HIGH must be at least LOW")
        if self.kind in ("normal", "lognormal") and not (self.b >= 0 and math.isfinite(self.b)):
            raise LengthError(f"{self.text()}: the spread must be 0 or more")

    def text(self) -> str:
        if self.kind == "fixed":
            return f"{self.a:g}"
        if self.kind == "exponential":
            return f"exponential:{self.a:g}"
        return f"{self.kind}:{self.a:g}:{self.b:g}"

    @property
    def mean(self) -> float:
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a

    @property
    def largest(self) -> float | None:
        """The largest value it draws: a fixed value, a uniform's HIGH; None: unbounded."""
        return self.a if self.kind == "fixed" else self.b if self.kind == "uniform" else None

    def draw(self, rng: random.Random) -> float:
        """One raw value (not yet held to the floor)."""
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        if self.kind == "normal":
            return rng.gauss(self.a, self.b)
        if self.kind == "exponential":
            return rng.expovariate(1.0 / self.a)
        mu = math.log(self.a) - self.b**2 / 2  # so that the mean is `a`
        return rng.lognormvariate(mu, self.b)


@dataclass(frozen=True, slots=True)
class LengthSpec(Distribution):
    """A token count, fixed or drawn per request (at least 1)."""

    WHAT: ClassVar[str] = "length"
    LOW: ClassVar[float] = 1.0

    def sample(self, rng: random.Random) -> int:
        """One length (whole tokens, at least 1)."""
        return max(1, round(self.draw(rng)))


@dataclass(frozen=True, slots=True)
class ThinkTime(Distribution):
    """Seconds a chat user reads and types before its next turn (at least 0)."""

    WHAT: ClassVar[str] = "think time"

    def sample(self, rng: random.Random) -> float:
        return max(0.0, self.draw(rng))


class TokenModel:
    """`tokens = overhead + chars * density`, learnt by recursive least squares."""

    __slots__ = ("_p", "density", "overhead")
    FORGET = 0.98  # older observations weigh less: the server is what it is, but noisy

    def __init__(self) -> None:
        self.overhead = 0.0
        self.density = 1.0 / INITIAL_CHARS_PER_TOKEN
        self._p = [[1e4, 0.0], [0.0, 1e-2]]  # covariance of (overhead, density)

    def tokens(self, chars: float) -> float:
        return self.overhead + self.density * chars

    def chars_for(self, tokens: float) -> int:
        return max(1, round((tokens - self.overhead) / max(self.density, 1e-6)))

    def observe(self, chars: float, tokens: float) -> None:
        x = (1.0, chars)
        p = self._p
        px = (p[0][0] * x[0] + p[0][1] * x[1], p[1][0] * x[0] + p[1][1] * x[1])
        denom = self.FORGET + x[0] * px[0] + x[1] * px[1]
        gain = (px[0] / denom, px[1] / denom)
        error = tokens - self.tokens(chars)
        self.overhead += gain[0] * error
        self.density += gain[1] * error
        self._p = [[(p[i][j] - gain[i] * px[j]) / self.FORGET for j in range(2)]
                   for i in range(2)]


@dataclass(frozen=True, slots=True)
class Built:
    """A synthetic prompt: its chat messages and its characters (for calibration)."""

    messages: tuple[dict[str, str], ...]
    chars: int


def wrapped_cut(text: str, start: int, chars: int) -> str:
    """`chars` characters of `text` from `start`, going on from its beginning at its end."""
    out = []
    while chars > 0:
        piece = text[start:start + chars]
        out.append(piece)
        chars -= len(piece)
        start = 0
    return "".join(out)


class PromptBuilder:
    """Prompts of a target length cut from `corpus`, calibrated by `observe`."""

    def __init__(self, corpus: str, seed: int, shared_prefix_tokens: int = 0) -> None:
        text = " ".join(corpus.split())
        if not text:
            raise ValueError("the text to build prompts from is empty")
        self._text = text
        self._rng = random.Random(seed)
        self.model = TokenModel()
        self._prefix = (self._cut(0, self.model.chars_for(shared_prefix_tokens))
                        if shared_prefix_tokens else "")

    def _cut(self, start: int, chars: int) -> str:
        return wrapped_cut(self._text, start, chars)

    def build(self, target_tokens: int) -> Built:
        """A prompt meant to count `target_tokens` at the server (prefix included)."""
        prefix_chars = len(self._prefix)
        chars = max(1, self.model.chars_for(target_tokens) - prefix_chars)
        start = self._rng.randrange(len(self._text))
        body = self._cut(start, chars)
        messages: tuple[dict[str, str], ...] = ({"role": "user", "content": body},)
        if self._prefix:
            messages = ({"role": "system", "content": self._prefix}, *messages)
        return Built(messages, prefix_chars + len(body))

    def observe(self, chars: int, prompt_tokens: int) -> None:
        """What the server counted for a prompt of `chars` characters."""
        self.model.observe(float(chars), float(prompt_tokens))
