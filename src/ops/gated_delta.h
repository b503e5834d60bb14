// The gated delta rule (the recurrence inside a Gated DeltaNet layer,
// docs/spec/qwen35-architecture.md §7 step 8) in three forms that compute the same thing: a scalar
// reference, a token-serial CPU kernel (decode) and a chunked CPU kernel (prefill,
// qwen35-architecture.md §10). The conv, L2 norms, gates and projections around it live elsewhere;
// these functions take q, k, v, g, beta ready to use.
//
// Math, for each value head h (key head h % Hk, the "tiled" mapping of qwen35-architecture.md §5.1)
// and token t, with S the Dk x Dv state (row i = key dim, column j = value dim):
//
//   S   <- exp(g_t) * S                 decay
//   r   =  v_t - S^T k_t                prediction error        (length Dv)
//   S   <- S + k_t (beta_t r)^T         rank-1 delta update
//   o_t =  S^T q_t                      output, read after the update
//
// Layouts (all f32, row-major, contiguous):
//   q, k  [T, Hk, Dk]  L2-normalised per head; q already scaled by 1/sqrt(Dk)
//   v     [T, Hv, Dv]
//   g     [T, Hv]      log-decay, <= 0 (alpha = exp(g))
//   beta  [T, Hv]      write strength, already sigmoid'ed, in (0, 1)
//   state [Hv, Dv, Dk] S_h[i][j] at h*Dv*Dk + j*Dk + i (transposed, llama.cpp layout,
//   qwen35-architecture.md §7.1);
//                      read as the state before token 0, overwritten with the state after token T-1
//   out   [T, Hv, Dv]  o_t per value head
//
// Preconditions (checked by the caller, who owns the shapes; these are hot-path kernels): T >= 0,
// Hk >= 1, Hv >= 1, Dk >= 1, Dv >= 1, all pointers valid for the sizes above, `out` does not alias
// an input. T == 0 leaves the state unchanged. Hv need not be a multiple of Hk.
//
// Memory: the cpu:: functions allocate nothing per call beyond a grow-only thread_local scratch
// buffer per worker thread (sized by the largest Dk, Dv seen), so steady-state calls do not
// allocate. Thread safety: any thread, as long as calls sharing a ThreadPool do not overlap (the
// pool's rule).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

struct GatedDeltaShape {
  int64_t T;   // tokens
  int64_t Hk;  // key/query heads
  int64_t Hv;  // value heads (each with its own state)
  int64_t Dk;  // key head dim
  int64_t Dv;  // value head dim
};

namespace ref {
// Plain scalar recurrence, one value head and one token at a time, f32. The oracle for the others.
void GatedDelta(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                const float* g, const float* beta, float* state, float* out);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// Token-serial, multithreaded over (value head, column block), SIMD along Dk. Best for decode
// (small T); exact same operation order per column as ref up to the summation order of dot
// products.
void GatedDeltaRecurrent(const GatedDeltaShape& shape, const float* q, const float* k,
                         const float* v, const float* g, const float* beta, float* state,
                         float* out, ThreadPool& pool);

// Chunked form (qwen35-architecture.md §10): tokens in chunks of 64, each chunk done with small
// dense matrix products; multithreaded over value heads. Best for prefill (large T). Same results
// as the recurrence up to rounding (sums are reassociated).
void GatedDeltaChunk(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                     const float* g, const float* beta, float* state, float* out, ThreadPool& pool);

// Tokens per chunk of GatedDeltaChunk.
inline constexpr int64_t kGatedDeltaChunkSize = 64;

// Below this many tokens GatedDeltaRecurrent is faster (the chunked form has a fixed per-call cost
// of moving the state in and out); measured at Hk = Hv = 16, Dk = Dv = 128, see
// docs/gated-delta.md.
inline constexpr int64_t kGatedDeltaChunkMinTokens = 16;

// The one the forward pass should call: GatedDeltaRecurrent for T < kGatedDeltaChunkMinTokens,
// else GatedDeltaChunk. Same arguments and results (up to rounding) as both.
void GatedDelta(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                const float* g, const float* beta, float* state, float* out, ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
