#!/usr/bin/env bash
# The side-by-side numbers of the open performance issues in one run, for a quiet machine: qwenrt and
# the peer (llama.cpp's tools in $PEER, default ../shared/peer) on the same synthetic 0.8B Q4_K_M file.
#   1. prefill 512 / decode 64, packed weights (the benchmark's default) and not (--no-pack), vs llama-bench
#   2. N = 1, 2, 4, 8, 16 sessions through the batching engine vs llama-batched-bench
#   3. 16 sessions sharing a 2,000-token prefix (prefilled once, forked): memory and TTFT
#   4. this machine's read bandwidth and int8 throughput (qwenrt-bench roof)
# usage: scripts/bench-quiet.sh   (BUILD_DIR default build; MODEL default /tmp/q08b.gguf, written by
# qwenrt-cli synth --shape 0.8b when missing; THREADS default 2). Prints each command before its output.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build} PEER=${PEER:-../shared/peer} MODEL=${MODEL:-/tmp/q08b.gguf} T=${THREADS:-2}
[ -f "$MODEL" ] || "$B/examples/cli/qwenrt-cli" synth --shape 0.8b --out "$MODEL" --threads "$T"
run() { echo "\$ $*"; "$@"; echo; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
run "$B/bench/qwenrt-bench" speed -m "$MODEL" -p 512 -n 64 -t "$T" -r 3 --peer "$PEER"
run "$B/bench/qwenrt-bench" speed -m "$MODEL" -p 512 -n 64 -t "$T" -r 3 --no-pack
run "$B/bench/qwenrt-bench" parallel -m "$MODEL" --sessions 1,2,4,8,16 --prompt 128 --gen 32 -t "$T" --peer "$PEER"
run "$B/bench/qwenrt-bench" parallel -m "$MODEL" --sessions 1,16 --prompt 2064 --shared-prefix 2000 --gen 16 -t "$T"
run "$B/bench/qwenrt-bench" roof -t "$T"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
