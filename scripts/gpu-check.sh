#!/usr/bin/env bash
# The prepared GPU check, run on a machine with an NVIDIA GPU from the repository root, after
# scripts/gpu-bundle.sh packed .gpu/ (carry it along): the CUDA kernel and forward/session tests,
# the backend choice with a real device (AUTO, batching refused on CUDA in one place, the engine),
# the kernel benchmarks, the forward benchmark (pp512/pp128/tg64 at the 0.8B shape on a synthetic
# model written there), a CUDA multi-turn run, and the 4B shape (a synthetic Q4_K_M file written there:
# prefill 512 / 8192, decode 128, turn 2 after a 32k history), ending with one summary table of
# qwenrt-bench's rows. Logs go to $OUT (else .gpu/logs). Budget: under 8 minutes (QWENRT_GPU_SKIP_4B=1
# skips the 4B part).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${OUT:-.gpu/logs}
mkdir -p "$LOG"
export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QWENRT_TEST_DATA="$PWD/tests/data"
B=.gpu/bin
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
rc=0
run_test() {  # name, then Catch2 args
  local name=$1; shift
  stamp "$name"
  timeout 240 "$B/$name" --use-colour no --durations yes "$@" > "$LOG/$name.log" 2>&1
  local r=$?
  grep -E "FAILED|failed|passed|skipped|warning:|with expansion|^  [A-Z]+\(|max\|d\||cuda:|CUDA device" "$LOG/$name.log" | head -60
  tail -4 "$LOG/$name.log"
  [ $r -eq 0 ] || { echo "!! $name exit code $r"; rc=1; }
}

stamp "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || true
run_test kernels_cuda_test
run_test ops_cuda_test
run_test forward_cuda_test  # the device activations come from model/activations.h's one list
# Issue 25 (CUDA as a backend), never run on a GPU before: the buffer owners (no device needed, but
# linked against the real runtime here), the AUTO decision and CheckBatching with CudaAvailable() true
# (AUTO must still pick a backend the engine batches), and the engine tests on a machine whose AUTO
# would have picked CUDA before.
run_test cuda_buffers_test
run_test backend_choice_test
run_test engine_test

stamp "cuda_ops_bench"
timeout 120 "$B/cuda_ops_bench" --benchmark_counters_tabular=true > "$LOG/cuda_ops_bench.log" 2>&1 || true
tail -30 "$LOG/cuda_ops_bench.log"

stamp "forward_bench (cuda; writes the synthetic 0.8B model first)"
QWENRT_BENCH_THREADS=$(nproc) timeout 300 "$B/forward_bench" --benchmark_filter='cuda' \
  --benchmark_counters_tabular=true > "$LOG/forward_bench.log" 2>&1 || echo "!! forward_bench failed"
tail -12 "$LOG/forward_bench.log"
# CUDA graphs are a parameter now (CudaForward::Options::graphs; the library reads no environment
# variable): forward_cuda_test checks replay == eager; a timing A/B needs forward_bench to pass it.

stamp "multiturn on the GPU (0.8B shape)"
timeout 120 "$B/qwenrt-bench" multiturn --model /tmp/qwenrt-bench-0.8b.gguf --backend cuda --history 784 \
  --new 25 --turns 3 --reply 16 > "$LOG/multiturn.log" 2>&1 || echo "!! multiturn failed"
tail -12 "$LOG/multiturn.log"

speed() {  # label, model, then qwenrt-bench speed args
  local label=$1 model=$2; shift 2
  stamp "$label"
  timeout 240 "$B/qwenrt-bench" speed -m "$model" --backend cuda "$@" > "$LOG/speed-$label.log" 2>&1 \
    || echo "!! speed $label failed"
  grep '^|' "$LOG/speed-$label.log" | tee -a "$LOG/summary.md"
}
speed 0.8b /tmp/qwenrt-bench-0.8b.gguf -p 512,8192 -n 128 -r 2
speed 0.8b-graphs /tmp/qwenrt-bench-0.8b.gguf -p 0 -n 128 -r 2 --cuda-graphs  # graphs A/B

if [ "${QWENRT_GPU_SKIP_4B:-0}" != 1 ]; then
  stamp "4B shape: writing the synthetic Q4_K_M file"
  [ -f /tmp/qwenrt-4b.gguf ] || timeout 300 "$B/qwenrt-cli" synth --shape 4b --out /tmp/qwenrt-4b.gguf \
    --vocab-from tests/data/tiny-s1-q4km.gguf --threads "$(nproc)" > "$LOG/synth-4b.log" 2>&1 \
    || echo "!! synth 4b failed"
  speed 4b /tmp/qwenrt-4b.gguf -p 512,8192 -n 128 -r 2
  stamp "4B shape: turn 2 after a 32k history (1,000 new tokens)"
  timeout 240 "$B/qwenrt-bench" multiturn --model /tmp/qwenrt-4b.gguf --backend cuda --history 32768 \
    --new 1000 --turns 2 --reply 8 > "$LOG/multiturn-4b.log" 2>&1 || echo "!! multiturn 4b failed"
  tail -6 "$LOG/multiturn-4b.log"
fi

stamp "summary (qwenrt-bench speed rows)"
awk '!seen[$0]++' "$LOG/summary.md" 2>/dev/null  # header rows once

stamp "chat_repl over the C API (--backend cuda; AUTO picks the CPU while CUDA batching is unverified)"
printf 'hello\n/stats\nand again\n' | timeout 60 "$B/chat_repl" --backend cuda > "$LOG/chat_repl.log" 2>&1 \
  || echo "!! chat_repl failed"
tail -8 "$LOG/chat_repl.log"
stamp "done (tests exit code $rc)"
exit $rc
