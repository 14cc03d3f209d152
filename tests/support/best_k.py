"""The simulator's own best draft length per concurrency, in virtual time.

Each k's steady-state tok/s (`sim.curve.predict`, spec-off as k = 0) goes through the
report's own rung pick (`report.multik.pick_k`: ties within 2% to the smaller k), so a
test can hold a sweep's multi-k study to what the simulator says is best.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from specload.report.multik import pick_k
from specload.sim.curve import predict
from specload.sim.profile import load_profile


def simulated_best_k(profile: str, ladder: Sequence[int], ks: Sequence[int],
                     prompt_tokens: int,
                     output_tokens: int | Callable[[random.Random], int]) -> list[int]:
    """Best k at each rung of `ladder` among spec-off and `ks`; `output_tokens` may be
    a draw (`LengthSpec.sample`)."""
    loaded = load_profile(profile)
    curves = {k: predict(loaded, "on" if k else "off", k or None, list(ladder),
                         prompt_tokens=prompt_tokens, output_tokens=output_tokens)
              for k in [0, *ks]}
    return [pick_k({k: [curve[i].output_tok_s] for k, curve in curves.items()})
            for i in range(len(ladder))]
