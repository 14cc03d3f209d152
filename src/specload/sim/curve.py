"""`specload sim-curve`: a profile's predicted steady-state throughput per concurrency.

Runs `virtual.run_closed_loop` at every rung of `--ladder` and prints a table (or JSON
with `--json`): system output tok/s, per-user tok/s (1/TPOT), mean TTFT, mean batch,
tokens per chunk and preemptions per second. No sleeping; a full ladder takes seconds.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable

import orjson

from specload.sim import SimConfigError
from specload.sim.core import SpecMode
from specload.sim.flavors import DEFAULT_FLAVOR, adaptive_controller, flavor_named
from specload.sim.profile import Profile, engine_profile
from specload.sim.virtual import CurvePoint, run_closed_loop


def check_lengths(profile: Profile, prompt_tokens: int | None, max_tokens: int | None) -> None:
    """SimConfigError unless one request of the workload fits the model."""
    prompt = profile.workload.prompt_tokens if prompt_tokens is None else prompt_tokens
    if not 1 <= prompt < profile.model.max_model_len:
        raise SimConfigError(f"--prompt-tokens must be 1..{profile.model.max_model_len - 1} "
                             "for this profile")
    if max_tokens is None:
        return
    limit = profile.model.max_model_len - prompt
    if not 1 <= max_tokens <= limit:
        raise SimConfigError(f"--max-tokens must be 1..{limit} for this profile "
                             f"(max_model_len {profile.model.max_model_len} minus the "
                             f"{prompt}-token prompt)")


def predict(profile: Profile, mode: SpecMode, k: int | None, ladder: list[int], *,
            seed: int = 0, prompt_tokens: int | None = None,
            output_tokens: int | Callable[[random.Random], int] | None = None,
            flavor: str = DEFAULT_FLAVOR,
            shared_prefix_tokens: int | None = None) -> list[CurvePoint]:
    """One steady-state point per concurrency, on a server of `flavor`'s engine (whose
    own controller `--spec adaptive` runs)."""
    adaptive = adaptive_controller(flavor_named(flavor), mode)
    return [run_closed_loop(profile, mode, k, c, seed=seed, prompt_tokens=prompt_tokens,
                            output_tokens=output_tokens, adaptive=adaptive,
                            shared_prefix_tokens=shared_prefix_tokens)
            for c in ladder]


def format_table(points: list[CurvePoint]) -> str:
    head = (f"{'C':>5} {'out tok/s':>10} {'user tok/s':>10} {'TTFT ms':>9} {'batch':>7} "
            f"{'tok/chunk':>9} {'preempt/s':>9}")
    rows = [f"{p.users:>5} {p.output_tok_s:>10.1f} {p.per_user_tok_s:>10.1f} "
            f"{p.ttft_ms:>9.1f} {p.mean_batch:>7.1f} {p.tokens_per_chunk:>9.2f} "
            f"{p.preemptions_per_s:>9.2f}" for p in points]
    return "\n".join([head, *rows])


def main(args: argparse.Namespace) -> int:
    """Entry point of `specload sim-curve`."""
    try:
        profile = engine_profile(args)
        ladder = list(args.ladder)  # parsed and checked by the CLI
        prompt_tokens = getattr(args, "prompt_tokens", None)
        check_lengths(profile, prompt_tokens, args.max_tokens)
        if (getattr(args, "shared_prefix_tokens", None) or 0) < 0:
            raise SimConfigError("--shared-prefix-tokens must be 0 or more")
        points = predict(profile, args.spec, args.k, ladder, seed=args.seed,
                         prompt_tokens=prompt_tokens, output_tokens=args.max_tokens,
                         flavor=getattr(args, "flavor", None) or DEFAULT_FLAVOR,
                         shared_prefix_tokens=getattr(args, "shared_prefix_tokens", None))
    except SimConfigError as exc:
        print(f"specload: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(orjson.dumps([p.as_dict() for p in points],
                                      option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        w = profile.workload
        print(f"# {args.profile} spec={args.spec}: steady state of C closed-loop users, "
              f"prompt {prompt_tokens or w.prompt_tokens} tok, "
              f"output {args.max_tokens or w.output_tokens} tok "
              "(measured after 2C completions, over max(3C, 30) more)")
        print(format_table(points))
    return 0
