// CPU MoE row moves and weighted sums (moe.h): pairs or tokens in parallel, each the ref loop.
#include "ops/moe.h"

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E, float* dst,
               ThreadPool& pool) {
  ParallelRanges(pool, n, E, [&](int64_t b, int64_t e) {
    ref::MoeGather(src, slots + b, e - b, K, E, dst + b * E);
  });
}

void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E, float* dst,
                ThreadPool& pool) {
  ParallelRanges(pool, n, E, [&](int64_t b, int64_t e) {
    ref::MoeScatter(src + b * E, slots + b, e - b, E, dst);
  });
}

void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                float* mix, ThreadPool& pool) {
  ParallelRanges(pool, T, K * E, [&](int64_t b, int64_t e) {
    ref::MoeCombine(yslot + b * K * E, weights + b * K, e - b, K, E, mix + b * E);
  });
}

void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E,
                     ThreadPool& pool) {
  ParallelRanges(pool, T, E, [&](int64_t b, int64_t e) {
    ref::AddSigmoidGated(mix + b * E, y + b * E, gate + b, e - b, E);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
