"""One-sample Kolmogorov-Smirnov tests without scipy, and the CDFs the tests need.

`ks_pvalue(samples, cdf)` is the two-sided test's p-value from the asymptotic
Kolmogorov distribution with Stephens' small-sample correction (Numerical Recipes'
`ksone`/`probks`): good to a few percent for n >= 20, which is all a pass/fail at
p = 0.01 needs. The CDFs: exponential, Erlang (gamma with a whole shape, which the
gamma-arrival tests use) and lognormal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def ks_statistic(samples: Sequence[float], cdf: Callable[[float], float]) -> float:
    """sup |F_n(x) - F(x)| over the sample."""
    xs = sorted(samples)
    n = len(xs)
    return max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))


def kolmogorov_q(lam: float) -> float:
    """P(K > lam) for the Kolmogorov distribution."""
    if lam < 0.2:
        return 1.0
    total, sign = 0.0, 1.0
    for j in range(1, 101):
        term = sign * math.exp(-2.0 * j * j * lam * lam)
        total += term
        if abs(term) < 1e-12:
            break
        sign = -sign
    return max(0.0, min(1.0, 2.0 * total))


def ks_pvalue(samples: Sequence[float], cdf: Callable[[float], float]) -> float:
    n = len(samples)
    root = math.sqrt(n)
    return kolmogorov_q((root + 0.12 + 0.11 / root) * ks_statistic(samples, cdf))


def exponential_cdf(mean: float) -> Callable[[float], float]:
    return lambda x: 1.0 - math.exp(-x / mean) if x > 0 else 0.0


def erlang_cdf(shape: int, mean: float) -> Callable[[float], float]:
    scale = mean / shape

    def cdf(x: float) -> float:
        if x <= 0:
            return 0.0
        y = x / scale
        return 1.0 - math.exp(-y) * sum(y**k / math.factorial(k) for k in range(shape))

    return cdf


def lognormal_cdf(mean: float, sigma: float) -> Callable[[float], float]:
    mu = math.log(mean) - sigma**2 / 2
    return lambda x: (0.5 * (1 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2))))
                      if x > 0 else 0.0)
