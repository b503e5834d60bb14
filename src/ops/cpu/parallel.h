// The one way the CPU element-wise and per-row ops split work over the ThreadPool: contiguous
// ranges of independent items (elements, rows, tokens), each handled by the ref loop, so the
// result is bit-identical to ref whatever the split. Internal to src/ops/cpu/.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

// Below this much work (about one float operation per unit) a call runs inline: waking the
// workers costs a few µs, which only pays off past ~16k simple float operations.
inline constexpr int64_t kMinParallelWork = 16384;

// fn(begin, end) over [0, n), split over `pool` when n * work_per_item >= kMinParallelWork.
// Allocation-free: the std::function the pool takes captures one pointer.
template <class Fn>
void ParallelRanges(ThreadPool& pool, int64_t n, int64_t work_per_item, const Fn& fn) {
  if (n < 2 || pool.size() == 1 || n * work_per_item < kMinParallelWork) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  pool.ParallelFor(n, [f = &fn](int64_t b, int64_t e, int) { (*f)(b, e); });
}

// Relative costs per element for work_per_item: a std::exp is worth ~8 simple operations.
inline constexpr int64_t kExpCost = 8;

}  // namespace QWENRT_CPU_NAMESPACE
