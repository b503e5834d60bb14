#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, -fsanitize=fuzzer,address,undefined, UBSan
# halting on error; the library itself instrumented) in $BUILD_DIR (default build-fuzz) and runs
# each for FUZZ_SECONDS (default 45) from its seed corpus tests/fuzz/corpus/<name>/. Fails on any
# crash, sanitizer report, timeout (> 10 s per input) or out-of-memory (> 2 GiB); the input that
# did it is left in $BUILD_DIR/artifacts/<name>/ (replay: $BUILD_DIR/tests/fuzz/<name>_fuzz FILE).
# New corpus entries go to $BUILD_DIR/corpus/<name>/ (kept between runs), never into the tree.
#   FUZZ_TARGETS="gguf tokenizer" FUZZ_SECONDS=300 scripts/fuzz-smoke.sh
# Installs Debian's clang when no clang++ is found (libFuzzer ships with it). QWENRT_NATIVE: one CPU
# kernel level (the host's), not three; the fuzzed code is parsing and the C API, not the kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-45}
TARGETS=(${FUZZ_TARGETS:-gguf model_load tokenizer session_load chat_template constraint capi_chat})
JOBS=${JOBS:-$(nproc)}

if ! command -v clang++ > /dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq clang
fi
LAUNCHER=()
if command -v ccache > /dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DQWENRT_FUZZ=ON -DQWENRT_CUDA=OFF -DQWENRT_BUILD_TESTS=OFF \
  -DQWENRT_NATIVE=ON \
  -DQWENRT_BUILD_BENCH=OFF -DQWENRT_BUILD_EXAMPLES=OFF "${LAUNCHER[@]}" > /dev/null
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${TARGETS[@]/%/_fuzz}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=()
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD_DIR/corpus/$t" "$BUILD_DIR/artifacts/$t"
  log="$BUILD_DIR/artifacts/$t/fuzz.log"
  echo "== $t: ${FUZZ_SECONDS}s"
  # -max_len: the largest seed (a model or a saved session) must fit whole.
  if "$BUILD_DIR/tests/fuzz/${t}_fuzz" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -max_len=262144 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t/" \
      "$BUILD_DIR/corpus/$t" "tests/fuzz/corpus/$t" > "$log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|cov: ' "$log" | tail -3 | tr '\n' ' '
    echo
  else
    echo "FAILED: $t (log: $log)"
    grep -E 'ERROR|SUMMARY|fuzz property|Test unit written' "$log" | head -5 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz smoke failed: ${failed[*]}"
  exit 1
fi
echo "fuzz smoke passed: ${TARGETS[*]}"
