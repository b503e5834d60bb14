// CPU rotary embedding (rope.h): tokens in parallel, each token's heads by the ref loop (the angles
// depend only on the token's position, so any split gives the same bits).
#include "ops/rope.h"

#include "ops/cpu/parallel.h"

namespace qwenrt::cpu {

void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p, ThreadPool& pool) {
  // Each rotated pair costs a sin and a cos: weigh it like an exp.
  ParallelRanges(pool, T, heads * (p.n_dims / 2) * kExpCost, [&](int64_t b, int64_t e) {
    ref::Rope(x + b * heads * Dh, e - b, heads, Dh, pos0 + b, p);
  });
}

}  // namespace qwenrt::cpu
