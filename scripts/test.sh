#!/usr/bin/env bash
# Configure (CUDA on when nvcc is found), build everything, run ctest. BUILD_DIR defaults to build/.
# Then the sanitizer builds (the suite under ASan+UBSan, fuzz corpora replayed, the concurrency
# tests under TSan), so "never a crash" is checked on every run; QWENRT_SKIP_ASAN=1 skips those.
# Between the two, the aarch64 cross build and its test run under qemu (scripts/test-aarch64.sh;
# QWENRT_SKIP_AARCH64=1 skips it).
#
# Tests, benchmarks and examples are switched on explicitly: the build directory may hold a CMake
# cache from scripts/quickstart.sh (tests off), and a cached OFF would otherwise leave ctest with
# nothing to run. ctest --no-tests=error makes "No tests were found" a failure, not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Every C, C++ and CUDA source of the tree must be clang-formatted (scripts/format-check.sh; a
# difference fails the run). QWENRT_SKIP_FORMAT=1 skips the check.
if [ "${QWENRT_SKIP_FORMAT:-0}" != 1 ]; then
  bash scripts/format-check.sh
fi

tb=$(date +%s)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_TESTS=ON -DQWENRT_BUILD_BENCH=ON \
  -DQWENRT_BUILD_EXAMPLES=ON ${QWENRT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"
tt=$(date +%s)
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j"$(nproc)"
echo "== test.sh: build $(( tt - tb )) s, ctest $(( $(date +%s) - tt )) s"

# The aarch64 port: cross build + the test suite under qemu-user (scripts/test-aarch64.sh).
# QWENRT_SKIP_AARCH64=1 skips it.
if [ "${QWENRT_SKIP_AARCH64:-0}" != 1 ]; then
  ta=$(date +%s)
  BUILD_DIR="$BUILD_DIR-aarch64" bash scripts/test-aarch64.sh
  echo "== test.sh: aarch64 (cross build + qemu ctest) $(( $(date +%s) - ta )) s"
fi

# The sanitizer passes (scripts/sanitize.sh: the suite under ASan+UBSan halting on error, every
# fuzz target's kept corpus replayed in it (fuzz_replay_*), the concurrency tests under TSan).
# QWENRT_SKIP_ASAN=1 skips them. QWENRT_FUZZ_SMOKE=1 adds a libFuzzer run of every target
# (scripts/fuzz-smoke.sh, FUZZ_SECONDS each, default 10): a fifth build of the library (clang), which
# CI's 45 minutes on 2 cores have no room for; mutation fuzzing is scripts/fuzz-campaign.sh's job.
if [ "${QWENRT_SKIP_ASAN:-0}" != 1 ]; then
  t0=$(date +%s)
  BUILD_DIR="$BUILD_DIR" bash scripts/sanitize.sh
  echo "== test.sh: sanitizers $(( $(date +%s) - t0 )) s"
fi
if [ "${QWENRT_FUZZ_SMOKE:-0}" = 1 ]; then
  t0=$(date +%s)
  BUILD_DIR="$BUILD_DIR-fuzz" FUZZ_SECONDS=${FUZZ_SECONDS:-10} bash scripts/fuzz-smoke.sh
  echo "== test.sh: fuzz smoke $(( $(date +%s) - t0 )) s"
fi
