#!/usr/bin/env bash
# Builds qwenrt and runs the main job on the embedded tiny fixture model: a scripted three-turn chat
# through chat_repl (falls back to a logits evaluation with qwenrt-cli if chat_repl is not built).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_TESTS=OFF -DQWENRT_BUILD_BENCH=OFF \
  ${QWENRT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"
if [ -x "$BUILD_DIR/examples/chat_repl/chat_repl" ]; then
  printf 'Hello! Who are you?\nTell me more.\n/stats\n' | "$BUILD_DIR/examples/chat_repl/chat_repl" --max-tokens 24
else
  "$BUILD_DIR/examples/cli/qwenrt-cli" eval --model tests/data/tiny-s1-q4km.gguf \
    --tokens tests/data/tokens/seqB.txt --out "$BUILD_DIR/seqB.logits.f32" --backend cpu
  echo "wrote $BUILD_DIR/seqB.logits.f32"
fi
