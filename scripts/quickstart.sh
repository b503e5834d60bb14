#!/usr/bin/env bash
# Builds qwenrt and runs the main job on the embedded tiny fixture model: a scripted three-turn chat
# through chat_repl. The fixture has random weights, so its replies are noise (its greedy ones only
# whitespace: chat_repl prints a note per reply saying so); the report lines show the real work: turns 2
# and 3 reuse the previous turns' tokens instead of prefilling them again.
# Only chat_repl is built (tests and benchmarks off); scripts/test.sh switches them back on.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_TESTS=OFF -DQWENRT_BUILD_BENCH=OFF \
  -DQWENRT_BUILD_EXAMPLES=ON ${QWENRT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)" --target chat_repl
printf 'Hello! Who are you?\nTell me more.\nAnd then what happened?\n/stats\n' |
  "$BUILD_DIR/examples/chat_repl/chat_repl" --max-tokens 24
