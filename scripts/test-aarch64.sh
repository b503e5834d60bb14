#!/usr/bin/env bash
# The aarch64 port: cross-compiles the library and its tests with Debian's toolchain
# (cmake/toolchain-aarch64-linux-gnu.cmake) and runs the test suite under qemu-user, which ctest
# prepends to every test program (CMAKE_CROSSCOMPILING_EMULATOR). Called by scripts/test.sh after the
# main ctest; QWENRT_SKIP_AARCH64=1 skips it. BUILD_DIR defaults to build-aarch64/.
#
# What runs: every C++ and C test of tests/ (the Catch2 suites, qemu's default CPU has the dot-product
# extension, so the dotprod level runs; tests/cpu_levels.cmake adds the op tests again on the NEON
# baseline level), and the host-side checks (layers, capi_symbols). Not built: the benchmarks (no
# arm64 Google Benchmark package), the examples and their FFI / CLI tests (they run host-language
# toolchains against the library), the install test (it builds a consumer with the host compiler),
# CUDA.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-aarch64}
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "test-aarch64.sh: needs g++-aarch64-linux-gnu and qemu-user (scripts/install-deps.sh)" >&2
  exit 1
fi
tb=$(date +%s)
cmake -S . -B "$BUILD_DIR" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DQWENRT_CUDA=OFF -DQWENRT_BUILD_TESTS=ON -DQWENRT_BUILD_BENCH=OFF \
  -DQWENRT_BUILD_EXAMPLES=OFF ${QWENRT_AARCH64_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"
tt=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j"$(nproc)"
echo "== test-aarch64.sh: build $(( tt - tb )) s, ctest under qemu $(( $(date +%s) - tt )) s"
