#!/usr/bin/env bash
# Writes the per-type fixture models of tests/data/quant/ with the peer's own quantizer (see
# tests/data/quant/README.md), then their gguf-py reference values (scripts/quant_fixture_refs.py).
# The golden logits are written by `quant_types_test --write-golden` (our ref backend) afterwards.
#   PEER=../shared/peer CLI=build/examples/cli/qwenrt-cli scripts/make_quant_fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER:-../shared/peer}
CLI=${CLI:-build/examples/cli/qwenrt-cli}
Q="$PEER/bin/llama-quantize"
OUT=tests/data/quant
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"

# 32-element block types, every weight matrix (head and embedding included), from the f32 micro model.
for t in Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL; do
  lc=$(echo "$t" | tr 'A-Z' 'a-z')
  "$Q" --pure --output-tensor-type "$lc" --token-embedding-type "$lc" \
    tests/data/micro-s1-f32.gguf "$OUT/micro-$lc.gguf" "$t" 1 > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
done
# MXFP4 has no whole-model file type (the peer's MXFP4_MOE targets experts): force it per tensor.
"$Q" --pure --tensor-type 'weight=mxfp4' --output-tensor-type mxfp4 --token-embedding-type mxfp4 \
  tests/data/micro-s1-f32.gguf "$OUT/micro-mxfp4.gguf" Q8_0 1 > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }

# 256-element super-block types need rows of 256: a 4-layer synthetic model of the tiny shape
# (3 gated delta net layers + 1 attention layer), requantized from its Q4_K_M weights.
"$CLI" synth --shape tiny --layers 4 --seed 12 --out "$TMP/tiny4.gguf" > /dev/null
for t in Q2_K Q3_K; do
  lc=$(echo "$t" | tr 'A-Z' 'a-z')
  "$Q" --allow-requantize --pure --output-tensor-type "$lc" --token-embedding-type "$lc" \
    "$TMP/tiny4.gguf" "$OUT/tiny4-$lc.gguf" "$t" 1 > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
done
# Shaped like the unsloth "UD" releases: IQ4_XS for most matrices, higher-precision K-quants / Q8_0 for
# the sensitive ones (tied embedding/head Q6_K, ssm_out and attn_output Q5_K, attn_qkv / attn_v Q8_0).
"$Q" --allow-requantize --token-embedding-type q6_k \
  --tensor-type 'ssm_out=q5_k' --tensor-type 'attn_output=q5_k' \
  --tensor-type 'attn_qkv=q8_0' --tensor-type 'attn_v=q8_0' \
  "$TMP/tiny4.gguf" "$OUT/tiny4-ud-iq4xs.gguf" IQ4_XS 1 > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }

# A MoE file as the peer's MXFP4_MOE type writes it (gpt-oss style: routed experts MXFP4, the rest
# Q8_0), from the shared fixtures' MoE model.
"$Q" --allow-requantize tests/data/tinymoe-s1-q4km.gguf "$OUT/tinymoe-mxfp4moe.gguf" MXFP4_MOE 1 \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }

# A split copy of micro-q4_0 (one tensor per part is too many files: 20 tensors per part).
rm -f "$OUT"/micro-q4_0-split-*.gguf
"$PEER/bin/llama-gguf-split" --split --split-max-tensors 20 "$OUT/micro-q4_0.gguf" "$OUT/micro-q4_0-split" \
  > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }

python3 scripts/quant_fixture_refs.py "$OUT"

# Golden logits (seqB) of every file from our exact reference backend; and the reference the tiny4
# files are cross-checked against: the exact logits of their Q4_K_M parent (the micro files use the
# f32 model's tests/data/logits/micro-s1-f32.seqB.exact.f32).
eval_ref() { "$CLI" eval --model "$1" --tokens tests/data/tokens/seqB.txt --out "$2" --backend ref > /dev/null; }
for f in "$OUT"/micro-q4_0.gguf "$OUT"/micro-q4_1.gguf "$OUT"/micro-q5_0.gguf "$OUT"/micro-q5_1.gguf \
         "$OUT"/micro-iq4_nl.gguf "$OUT"/micro-mxfp4.gguf "$OUT"/tiny4-*.gguf "$OUT"/tinymoe-mxfp4moe.gguf; do
  eval_ref "$f" "${f%.gguf}.seqB.ref.f32"
done
eval_ref "$TMP/tiny4.gguf" "$OUT/tiny4-q4km-parent.seqB.ref.f32"
ls -la "$OUT"
