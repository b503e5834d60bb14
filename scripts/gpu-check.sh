#!/usr/bin/env bash
# One prepared GPU check (for a machine with an NVIDIA GPU and nvcc): configure with CUDA ON, build
# the CUDA test and benchmark, run the kernel-vs-reference tests, print kernel timings and the GPU
# state. Takes ~3-5 min on 16 cores (most of it compiling). Logs go to $OUT (or the build dir).
# Usage: scripts/gpu-check.sh            BUILD_DIR=build-gpu, CUDA_ARCHS=90 (H100/H200) by default
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
LOG_DIR=${OUT:-$BUILD_DIR}
mkdir -p "$LOG_DIR"
JOBS=$(nproc)
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

stamp "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || nvidia-smi || true

stamp "configure (CUDA ON)"
cmake -S . -B "$BUILD_DIR" -DQWENRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-90} -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_EXAMPLES=OFF \
  -DQWENRT_BUILD_BENCH=ON > "$LOG_DIR/configure.log" 2>&1 || { tail -40 "$LOG_DIR/configure.log"; exit 1; }

stamp "build ops_cuda_test cuda_ops_bench (-j$JOBS)"
cmake --build "$BUILD_DIR" -j"$JOBS" --target ops_cuda_test cuda_ops_bench > "$LOG_DIR/build.log" 2>&1 \
  || { grep -E "error|Error" "$LOG_DIR/build.log" | head -40; exit 1; }

stamp "ops_cuda_test"
test_rc=0
"$BUILD_DIR/tests/ops_cuda_test" --use-colour no --durations yes 2>&1 | tee "$LOG_DIR/ops_cuda_test.log" \
  || test_rc=$?

stamp "cuda_ops_bench"
"$BUILD_DIR/bench/cuda_ops_bench" --benchmark_counters_tabular=true 2>&1 | tee "$LOG_DIR/cuda_ops_bench.log" || true

stamp "GPU after the run"
nvidia-smi || true
stamp "done (ops_cuda_test exit code $test_rc)"
exit "$test_rc"
