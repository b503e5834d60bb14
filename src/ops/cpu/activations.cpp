// CPU element-wise activations (activations.h): contiguous pieces over the pool, each the ref loop.
// Tried: SwiGlu / MulSigmoid / the gated norm's silu with the vector exp of simd_f32.h (< 2e-7
// relative to std::exp; 4-20x faster than std::exp per element, about 2% of a 0.8B prefill). It
// moved tinymoe-s1-q4km seqA's top-1 agreement to 0.917, below llama.cpp's 0.92 bar in
// model_golden_test, so these keep std::exp and stay bit-identical to ref.
#include "ops/activations.h"

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

void Add(float* x, const float* y, int64_t n, ThreadPool& pool) {
  ParallelRanges(pool, n, 1, [&](int64_t b, int64_t e) { ref::Add(x + b, y + b, e - b); });
}

void SwiGlu(const float* gate, float* up, int64_t n, ThreadPool& pool) {
  ParallelRanges(pool, n, kExpCost,
                 [&](int64_t b, int64_t e) { ref::SwiGlu(gate + b, up + b, e - b); });
}

void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride,
                ThreadPool& pool) {
  ParallelRanges(pool, rows, n * kExpCost, [&](int64_t b, int64_t e) {
    ref::MulSigmoid(x + b * n, gate + b * gate_stride, e - b, n, gate_stride);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
