#!/usr/bin/env bash
# Builds, on this machine (CUDA toolkit, no GPU needed), everything the GPU check runs and packs it
# into .gpu/ (git-ignored): stripped binaries in .gpu/bin, the non-system shared libraries they need
# in .gpu/lib. The GPU machine's image lacks fmt/Catch2/benchmark/utf8proc, so the check ships
# binaries instead of building there; the CUDA runtime is linked statically, so only the driver is
# needed. Then, on the GPU machine (the `device` tool carries .gpu): scripts/gpu-check.sh.
# Usage: scripts/gpu-bundle.sh        BUILD_DIR=build-gpu, CUDA_ARCHS=90 (H100/H200) by default
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
TARGETS=(forward_cuda_test kernels_cuda_test ops_cuda_test cuda_buffers_test backend_choice_test engine_test
  cuda_ops_bench forward_bench qwenrt-bench qwenrt-cli chat_repl)
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
cmake -S . -B "$BUILD_DIR" -DQWENRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
  -DCMAKE_BUILD_TYPE=Release -DQWENRT_BUILD_BENCH=ON -DQWENRT_BUILD_EXAMPLES=ON > /dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${TARGETS[@]}"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
for t in "${TARGETS[@]}"; do
  f=$(find "$BUILD_DIR" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "gpu-bundle: $t not built" >&2; exit 1; }
  cp "$f" .gpu/bin/ && strip .gpu/bin/"$t"
  # Shared libraries outside glibc's core (fmt, utf8proc, benchmark, libstdc++, qwenrt, ...).
  ldd "$f" | awk '/=> \//{print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
    | while read -r lib; do cp -nL "$lib" .gpu/lib/; done
done
du -sh .gpu/bin .gpu/lib
