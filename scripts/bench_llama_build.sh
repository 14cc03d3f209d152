#!/usr/bin/env bash
# Benchmark: the CPU time of compiling llama.cpp's common library and the server's core,
# file by file against as unity builds (scripts/llama_unity.cmake), in one run on one
# source tree. Configures two build folders with build_llama_server.sh's options
# (scripts/llama_source.sh), one with the unity include and one without, makes the
# generated headers both need, then compiles each target's own objects (nothing it
# depends on, no link) with `-j 2`, one build at a time, and prints user + system
# seconds per target and form and the unity/plain ratio.
#
#   scripts/bench_llama_build.sh                 # the pinned version from the registry
#   LLAMA_SRC=/path/to/llama.cpp scripts/bench_llama_build.sh
set -euo pipefail
# shellcheck source=scripts/llama_source.sh
source "$(dirname "$0")/llama_source.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="${LLAMA_SRC:-$(llama_fetch_source "$work")}"
targets=(llama-common server-context)
for form in plain unity; do
  options=()  # the plain form: the same options without the unity include
  for option in "${llama_cmake_options[@]}"; do
    if [[ $form == unity || $option != -DCMAKE_PROJECT_INCLUDE=* ]]; then
      options+=("$option")
    fi
  done
  cmake -S "$src" -B "$work/$form" "${options[@]}" >"$work/$form.log" 2>&1
  make -s -C "$work/$form" llama-common-base/fast >>"$work/$form.log" 2>&1
done
cpu_s() {  # user + system seconds of compiling TARGET's objects in one build folder, into $cpu
  local dir objects
  dir="$(cd "$1" && find . -type d -name "$2.dir" -path '*/CMakeFiles/*' | sed 's|^\./||')"
  # the object rules of the target's own makefile (no link: that needs what it links)
  mapfile -t objects < <(grep -oE "^$dir/[^ :]+\.o:" "$1/$dir/build.make" | tr -d : | sort -u)
  if ! /usr/bin/time -f '%U %S' -o "$1.time" \
      make -s -j 2 -C "$1" -f "$dir/build.make" "${objects[@]}" >>"$1.log" 2>&1; then
    echo "bench_llama_build: compiling $2 failed in $1:" >&2; tail -n 20 "$1.log" >&2; exit 1
  fi
  cpu=$(awk 'END { printf "%.0f", $1 + $2 }' "$1.time")
}
printf '%-16s %9s %9s %7s\n' target plain unity ratio
for t in "${targets[@]}"; do
  cpu_s "$work/plain" "$t"; plain=$cpu
  cpu_s "$work/unity" "$t"; unity=$cpu
  printf '%-16s %8ss %8ss %7s\n' "$t" "$plain" "$unity" \
    "$(awk -v u="$unity" -v p="$plain" 'BEGIN { printf "%.2f", u / p }')"
done
