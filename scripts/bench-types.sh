#!/usr/bin/env bash
# Issue 12's per-type speed table: the synthetic 0.8B file requantized by the peer's llama-quantize to
# each weight type (--allow-requantize from Q4_K_M: the values are random, only speed is measured), then
# qwenrt-bench pp/tg beside llama-bench on each file in the same run.
# usage: scripts/bench-types.sh [TYPE...]   (default: the types below; the IQ1/IQ2 types need an
# importance matrix: IMATRIX=I.gguf adds them). BUILD_DIR (build), MODEL (/tmp/q08b.gguf), OUT_DIR
# (/tmp/qtypes), THREADS (2), PP (128), TG (32), REPS (2) can be set. Files are kept in OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build} PEER=${PEER:-../shared/peer} MODEL=${MODEL:-/tmp/q08b.gguf} OUT=${OUT_DIR:-/tmp/qtypes}
T=${THREADS:-2} PP=${PP:-128} TG=${TG:-32} REPS=${REPS:-2}
TYPES=("$@")
[ ${#TYPES[@]} -gt 0 ] || TYPES=(Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K IQ4_NL IQ4_XS IQ3_XXS IQ3_S)
[ -f "$MODEL" ] || "$B/examples/cli/qwenrt-cli" synth --shape 0.8b --out "$MODEL" --threads "$T"
mkdir -p "$OUT"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ty in "${TYPES[@]}"; do
  f="$OUT/q08b-$ty.gguf"
  if [ ! -f "$f" ]; then
    "$PEER/bin/llama-quantize" --allow-requantize ${IMATRIX:+--imatrix "$IMATRIX"} "$MODEL" "$f" "$ty" "$T" \
      > "$OUT/quantize-$ty.log" 2>&1 || { echo "$ty: llama-quantize failed (see $OUT/quantize-$ty.log)"; continue; }
  fi
  echo "== $ty ($(du -m "$f" | cut -f1) MiB)"
  "$B/bench/qwenrt-bench" speed -m "$f" -p "$PP" -n "$TG" -t "$T" -r "$REPS" --peer "$PEER" 2>&1 | grep -E '^\|' || true
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
