#!/usr/bin/env bash
# Builds qwenrt and runs the main job on the embedded demo model (tests/data/demo-f32.gguf, 1.6M
# parameters trained by tools/demo-model/ for trying the library: greetings, small arithmetic,
# capitals, spelling backwards, JSON, two tools): a scripted five-turn chat through chat_repl. Each
# report line shows the real work: every turn reuses the previous turns' tokens instead of
# prefilling them again.
# Only chat_repl is built (tests and benchmarks off); scripts/test.sh switches them back on.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_TESTS=OFF -DQWENRT_BUILD_BENCH=OFF \
  -DQWENRT_BUILD_EXAMPLES=ON ${QWENRT_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)" --target chat_repl
printf 'Hello!\nWhat is the capital of Kenya?\nAnd of Ghana?\nWhat is 37 plus 45?\nSpell tiger backwards.\n/stats\n' |
  "$BUILD_DIR/examples/chat_repl/chat_repl" --max-tokens 200 --reasoning show
