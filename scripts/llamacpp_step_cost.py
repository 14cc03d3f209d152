"""What a speculative verify step costs llama-server on this CPU, from its own `timings`.

Starts one llama-server without speculation and one with n-gram drafts at a synthetic
acceptance length (the flags of scenarios/llamacpp-cpu.yaml), sends each the same
sequential requests (one at a time, so every step is a batch of one), and reads the
`timings` of each final chunk (tools/server/server-common.cpp `server_slot_stats`):
- plain: one step per token, so a step costs `predicted_ms / predicted_n`;
- speculative: a step emits its accepted drafts plus one token, so there are
  `predicted_n - draft_n_accepted` steps, each verifying `1 + draft_n / steps` tokens.
The ratio of the two step costs is what speculation pays per step; it pays off while
the tokens a step emits (the acceptance length) exceed that ratio. On a GPU a verify
step of a few tokens costs about one decode step (memory-bound); on a CPU every token
of the batch is computed, so the ratio grows with the tokens verified. With
`--contexts`, each request's prompt is about that many tokens long (a sentence repeated;
the server's own `prompt_n` is printed), so the table shows how both step costs and
their ratio move with the context a step attends over.

    python scripts/llamacpp_step_cost.py [--requests 8] [--max-tokens 128] [--contexts 64,2048]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from specload.runner.processes import free_port

REPO = Path(__file__).resolve().parents[1]
SPEC = ("--spec-type ngram-simple --spec-ngram-simple-size-n 1 --spec-ngram-simple-size-m 4 "
        "--spec-draft-n-max 4 --spec-synth-len 4.6")


def _binary() -> str:
    given = os.environ.get("LLAMA_SERVER")
    if given:
        return given
    out = subprocess.run(["bash", str(REPO / "scripts" / "build_llama_server.sh")],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def _model() -> str:
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "llamacpp_model.py")],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _start(port: int, spec: str, log: Path, context: int) -> subprocess.Popen[bytes]:
    cmd = [_binary(), "-m", _model(), "--host", "127.0.0.1", "--port", str(port), "-np", "1",
           "-c", str(context), "-t", "2", "--no-ui", *spec.split()]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"llama-server on port {port} not ready; see {log}")


def _timings(port: int, prompt: str, max_tokens: int) -> dict[str, float]:
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "stream": False,
                       "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())["timings"]


def _step_cost(runs: list[dict[str, float]]) -> tuple[float, float]:
    """(ms per step, tokens verified per step) over the runs."""
    ms = sum(t["predicted_ms"] for t in runs)
    tokens = sum(t["predicted_n"] for t in runs)
    accepted = sum(t.get("draft_n_accepted", 0) for t in runs)
    drafted = sum(t.get("draft_n", 0) for t in runs)
    steps = tokens - accepted
    return ms / steps, 1 + drafted / steps


SENTENCE = "The lighthouse keeper counted the ships that passed the rocks at night. "
SENTENCE_TOKENS = 10  # about, for Gemma 3's tokenizer; the server's count is printed


def _prompts(n: int, context: int) -> list[str]:
    """n prompts of about `context` tokens, each its own (a numbered request)."""
    body = SENTENCE * max(0, context // SENTENCE_TOKENS - 2)
    return [f"Request {i}. {body}Tell me a short story about it." for i in range(n)]


def _measure(spec: str, name: str, prompts: list[str], max_tokens: int, ctx: int
             ) -> tuple[float, float, float, float]:
    """(ms per step, tokens verified per step, emitted per step, prompt tokens) of one
    server answering `prompts` one at a time."""
    port = free_port()
    proc = _start(port, spec, Path(f"/tmp/llamacpp-step-cost-{name}.log"), ctx)
    try:
        _timings(port, prompts[0], 8)  # warm up
        runs = [_timings(port, p, max_tokens) for p in prompts]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ms, verified = _step_cost(runs)
    tokens = sum(t["predicted_n"] for t in runs)
    emitted = tokens / (tokens - sum(t.get("draft_n_accepted", 0) for t in runs))
    prompt = sum(t["prompt_n"] for t in runs) / len(runs)
    return ms, verified, emitted, prompt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--contexts", default="16",
                        help="comma-separated prompt lengths in tokens (default: %(default)s)")
    args = parser.parse_args()
    contexts = [int(x) for x in args.contexts.split(",")]
    ctx = max(contexts) + args.max_tokens + 256
    print(f"{'prompt tok':>10} {'plain ms':>9} {'spec ms':>8} {'verified':>8} "
          f"{'emitted':>7} {'step ratio':>10} {'spec/plain speed':>16}")
    for context in contexts:
        prompts = _prompts(args.requests, context)
        plain = _measure("", "plain", prompts, args.max_tokens, ctx)
        spec = _measure(SPEC, "speculative", prompts, args.max_tokens, ctx)
        ratio = spec[0] / plain[0]
        print(f"{plain[3]:>10.0f} {plain[0]:>9.2f} {spec[0]:>8.2f} {spec[1]:>8.2f} "
              f"{spec[2]:>7.2f} {ratio:>10.2f} {spec[2] / ratio:>15.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
