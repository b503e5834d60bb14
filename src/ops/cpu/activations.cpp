// CPU element-wise activations (activations.h): contiguous pieces over the pool, each the ref loop.
#include "ops/activations.h"

#include "ops/cpu/parallel.h"

namespace qwenrt::cpu {

void Add(float* x, const float* y, int64_t n, ThreadPool& pool) {
  ParallelRanges(pool, n, 1, [&](int64_t b, int64_t e) { ref::Add(x + b, y + b, e - b); });
}

void SwiGlu(const float* gate, float* up, int64_t n, ThreadPool& pool) {
  ParallelRanges(pool, n, kExpCost, [&](int64_t b, int64_t e) { ref::SwiGlu(gate + b, up + b, e - b); });
}

void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride, ThreadPool& pool) {
  ParallelRanges(pool, rows, n * kExpCost, [&](int64_t b, int64_t e) {
    ref::MulSigmoid(x + b * n, gate + b * gate_stride, e - b, n, gate_stride);
  });
}

}  // namespace qwenrt::cpu
