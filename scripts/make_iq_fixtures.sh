#!/bin/bash
# Makes the i-quant fixture models tests/data/iq/tiny4-<TYPE>.gguf and their golden logits
# tests/data/iq/tiny4-<TYPE>.seqB.ref.f32 (our reference backend on tests/data/tokens/seqB.txt, 40
# tokens x 512 logits; iq_model_test checks the reference and the CPU path against them).
#
#   scripts/make_iq_fixtures.sh BUILD_DIR PEER_BIN_DIR
#
# Source: `qwenrt-cli synth --shape tiny --layers 4` (D=256, GDN layers 0-2 + attention at 3, tied
# 512-token head; Q4_K_M), requantized by the peer's llama-quantize with --pure so that every
# matrix is in the type. The types that need an importance matrix (IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S) get
# one from llama-imatrix on the tokenizer test texts; the imatrix has no entry for the tied embedding, so
# there token_embd (= the head) is IQ3_S.
set -euo pipefail
B=${1:?build dir}
P=${2:?peer bin dir}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/tests/data/iq
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$B/examples/cli/qwenrt-cli" synth --shape tiny --layers 4 --seed 7 --out "$TMP/src.gguf" \
  --vocab-from "$ROOT/tests/data/tiny-s1-q4km.gguf"
cat "$ROOT/tests/data/tokenizer/texts.inp" "$ROOT/tests/data/tokenizer/chat.inp" > "$TMP/text.txt"  # fixed text: reproducible
"$P/llama-imatrix" -m "$TMP/src.gguf" -f "$TMP/text.txt" -o "$TMP/imatrix.gguf" -c 128 --chunks 8 -t 2 \
  > "$TMP/imatrix.log" 2>&1
for T in IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S; do
  case $T in IQ1_S|IQ1_M|IQ2_XXS|IQ2_XS|IQ2_S) E=(--token-embedding-type iq3_s) ;; *) E=() ;; esac
  FTYPE=$T
  [ "$T" = IQ2_S ] && FTYPE=IQ2_M  # the peer's file type IQ2_S means IQ2_XS tensors; IQ2_M's are IQ2_S
  "$P/llama-quantize" --allow-requantize --pure "${E[@]}" --imatrix "$TMP/imatrix.gguf" \
    "$TMP/src.gguf" "$OUT/tiny4-$T.gguf" "$FTYPE" 2 > "$TMP/q-$T.log" 2>&1
  "$B/examples/cli/qwenrt-cli" eval --model "$OUT/tiny4-$T.gguf" --tokens "$ROOT/tests/data/tokens/seqB.txt" \
    --out "$OUT/tiny4-$T.seqB.ref.f32" --backend ref --threads 2
  echo "$T: $(stat -c %s "$OUT/tiny4-$T.gguf") bytes"
done
