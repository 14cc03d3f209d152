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
of the batch is computed, so the ratio grows with the tokens verified.

    python scripts/llamacpp_step_cost.py [--requests 8] [--max-tokens 128]
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


def _start(port: int, spec: str, log: Path) -> subprocess.Popen[bytes]:
    cmd = [_binary(), "-m", _model(), "--host", "127.0.0.1", "--port", str(port), "-np", "1",
           "-c", "2048", "-t", "2", "--no-ui", *spec.split()]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    prompts = [f"Tell me a short story about a lighthouse keeper, part {i}."
               for i in range(args.requests)]
    found: dict[str, tuple[float, float, float]] = {}
    for name, port, spec in (("plain", 18391, ""), ("speculative", 18392, SPEC)):
        proc = _start(port, spec, Path(f"/tmp/llamacpp-step-cost-{name}.log"))
        try:
            _timings(port, prompts[0], 8)  # warm up
            runs = [_timings(port, p, args.max_tokens) for p in prompts]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        ms, verified = _step_cost(runs)
        emitted = sum(t["predicted_n"] for t in runs) / (
            sum(t["predicted_n"] for t in runs) - sum(t.get("draft_n_accepted", 0) for t in runs))
        found[name] = (ms, verified, emitted)
        print(f"{name:>12}: {ms:6.2f} ms per step, {verified:4.2f} tokens verified and "
              f"{emitted:4.2f} emitted per step ({args.requests} requests x "
              f"{args.max_tokens} tokens)")
    ratio = found["speculative"][0] / found["plain"][0]
    gain = found["speculative"][2] / ratio
    print(f"a {found['speculative'][1]:.2f}-token verify step costs {ratio:.2f} plain steps; "
          f"at batch 1 speculation runs {gain:.2f}x the plain decode speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
