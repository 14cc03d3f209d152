"""Synthetic requests of a given shape: lengths from distributions, prompts from local text.

`LengthSpec` is a token count that is fixed or drawn per request from a uniform range,
a normal (mean, sd) or a lognormal (mean, sigma of the log) distribution, as vLLM's
random dataset and guidellm's synthetic data do; written `1024`, `uniform:512:1536`,
`normal:1024:128` or `lognormal:1024:0.5` (on the command line and in scenarios).

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
from typing import Literal

Kind = Literal["fixed", "uniform", "normal", "lognormal"]
KINDS: tuple[str, ...] = ("fixed", "uniform", "normal", "lognormal")
INITIAL_CHARS_PER_TOKEN = 4.0


class LengthError(ValueError):
    """A length spec that does not parse; the message says what is expected."""


@dataclass(frozen=True, slots=True)
class LengthSpec:
    """A token count, fixed or drawn per request (at least 1)."""

    kind: Kind
    a: float  # fixed: the count; uniform: low; normal and lognormal: the mean
    b: float = 0.0  # uniform: high; normal: standard deviation; lognormal: sigma of log

    @classmethod
    def parse(cls, text: str | int) -> LengthSpec:
        """`1024`, `fixed:1024`, `uniform:LO:HI`, `normal:MEAN:SD`, `lognormal:MEAN:SIGMA`."""
        parts = str(text).strip().split(":")
        usage = ("expected a whole number or uniform:LOW:HIGH, normal:MEAN:SD or "
                 "lognormal:MEAN:SIGMA")
        kind = "fixed" if len(parts) == 1 else parts[0]
        values = parts if len(parts) == 1 else parts[1:]
        if kind not in KINDS or len(values) != (1 if kind == "fixed" else 2):
            raise LengthError(f"{text!r}: {usage}")
        try:
            nums = [float(v) for v in values]
        except ValueError:
            raise LengthError(f"{text!r}: {usage}") from None
        spec = cls(kind, nums[0], nums[1] if len(nums) > 1 else 0.0)  # type: ignore[arg-type]
        spec.check()
        return spec

    def check(self) -> None:
        if not (self.a >= 1 and math.isfinite(self.a)):
            raise LengthError(f"{self.text()}: the length must be at least 1")
        if self.kind == "uniform" and not self.b >= self.a:
            raise LengthError(f"{self.text()}: HIGH must be at least LOW")
        if self.kind in ("normal", "lognormal") and not (self.b >= 0 and math.isfinite(self.b)):
            raise LengthError(f"{self.text()}: the spread must be 0 or more")

    def text(self) -> str:
        if self.kind == "fixed":
            return f"{self.a:g}"
        return f"{self.kind}:{self.a:g}:{self.b:g}"

    @property
    def mean(self) -> float:
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a

    def sample(self, rng: random.Random) -> int:
        """One length (whole tokens, at least 1)."""
        if self.kind == "fixed":
            value = self.a
        elif self.kind == "uniform":
            value = rng.uniform(self.a, self.b)
        elif self.kind == "normal":
            value = rng.gauss(self.a, self.b)
        else:
            mu = math.log(self.a) - self.b**2 / 2  # so that the mean is `a`
            value = rng.lognormvariate(mu, self.b)
        return max(1, round(value))


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
        text = self._text
        out = []
        while chars > 0:
            piece = text[start:start + chars]
            out.append(piece)
            chars -= len(piece)
            start = 0
        return "".join(out)

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
