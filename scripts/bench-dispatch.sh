#!/usr/bin/env bash
# The runtime-dispatched default build against a QWENRT_NATIVE=ON (-march=native) build, side by side
# on the synthetic 0.8B file, alternating the two builds so that both see the same machine load.
# usage: scripts/bench-dispatch.sh [DISPATCH_BUILD_DIR [NATIVE_BUILD_DIR]]   (defaults build, build-native)
# Needs qwenrt-bench in both and qwenrt-cli in the first; THREADS (2), ROUNDS (3) and MODEL
# (/tmp/q08b.gguf, written by qwenrt-cli synth --shape 0.8b when missing) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-build} N=${2:-build-native}
THREADS=${THREADS:-2} ROUNDS=${ROUNDS:-3} MODEL=${MODEL:-/tmp/q08b.gguf}
[ -f "$MODEL" ] || "$D/examples/cli/qwenrt-cli" synth --shape 0.8b --out "$MODEL" --threads "$THREADS"
row() {  # the tok/s column of qwenrt-bench's table for the one test
  "$@" | awk -F'|' '/ (pp|tg)[0-9]+ /{gsub(/ /, "", $0); print}' | head -1
}
for r in $(seq "$ROUNDS"); do
  for mode in pp tg; do
    echo "round $r $mode dispatched: $(row "$D/bench/qwenrt-bench" "$mode" -m "$MODEL" -t "$THREADS" -r 3)"
    echo "round $r $mode native:     $(row "$N/bench/qwenrt-bench" "$mode" -m "$MODEL" -t "$THREADS" -r 3)"
  done
done
for level in avx2 baseline; do
  echo "QWENRT_CPU_ISA=$level pp: $(QWENRT_CPU_ISA=$level row "$D/bench/qwenrt-bench" pp -m "$MODEL" -t "$THREADS" -r 1 -p 32)"
done
