// Token-serial gated delta rule for the CPU (used for decode and short batches): the recurrence of
// docs/spec/qwen35-architecture.md §7 step 8, organised for cache and SIMD. The chunked prefill
// form is gated_delta_chunk.cpp.
//
// Why it is organised by value column: with the transposed state layout (S_h[i][j] at
// h*Dv*Dk + j*Dk + i) each value column j of S evolves independently of the others:
//   s_j <- alpha s_j ;  r_j = v_j - s_j . k ;  s_j += (beta r_j) k ;  o_j = s_j . q
// so one work item takes a few columns of one head, keeps them in registers (Dk = 128) across a
// tile of tokens, and only reads q/k/v. Each state entry is loaded and stored once per 16-token
// tile. Work items are (value head, block of 16 columns), spread over the ThreadPool.
// No heap memory is used (the per-tile alpha/beta buffers are on the stack).
#include <algorithm>
#include <cmath>

#include "ops/cpu/simd_f32.h"
#include "ops/cpu_namespace.h"
#include "ops/gated_delta.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace simd;

constexpr int64_t kColBlock = 16;  // value columns per work item
constexpr int64_t kTokTile = 16;   // tokens per tile (q and k of a tile: 16 KB at Dk = 128)

struct Args {
  GatedDeltaShape shape;
  const float *q, *k, *v, *g, *beta;
  float *state, *out;
};

// Columns [j0, j1) of head h over tokens [t0, t1), any Dk: the state rows stay in memory (L1).
void ColumnsGeneric(const Args& a, int64_t h, int64_t j0, int64_t j1, int64_t t0, int64_t t1,
                    const float* alpha, const float* bt) {
  const int64_t Hk = a.shape.Hk, Hv = a.shape.Hv, Dk = a.shape.Dk, Dv = a.shape.Dv;
  const int64_t hk = h % Hk;
  for (int64_t j = j0; j < j1; ++j) {
    float* s = a.state + (h * Dv + j) * Dk;  // [Dk], column j of S_h
    for (int64_t t = t0; t < t1; ++t) {
      const float* qt = a.q + (t * Hk + hk) * Dk;
      const float* kt = a.k + (t * Hk + hk) * Dk;
      Scale(s, alpha[t - t0], Dk);
      const float r = bt[t - t0] * (a.v[(t * Hv + h) * Dv + j] - Dot(s, kt, Dk));
      Axpy(s, r, kt, Dk);
      a.out[(t * Hv + h) * Dv + j] = Dot(s, qt, Dk);
    }
  }
}

// Sum of the lane-wise products x[n] * y[n] over kN vectors, as a balanced tree of two chains.
template <int kN>
inline float DotRegs(const VecF* x, const VecF* y) {
  VecF acc0 = Mul(x[0], y[0]);
  VecF acc1 = kN > 1 ? Mul(x[1], y[1]) : Zero();
#pragma GCC unroll 16
  for (int n = 2; n + 1 < kN; n += 2) {
    acc0 = Fma(x[n], y[n], acc0);
    acc1 = Fma(x[n + 1], y[n + 1], acc1);
  }
  if constexpr (kN > 2 && kN % 2 == 1) acc0 = Fma(x[kN - 1], y[kN - 1], acc0);
  return ReduceAdd(Add(acc0, acc1));
}

// As ColumnsGeneric for a compile-time Dk (a multiple of kLanes), kCols columns at a time with
// their state held in registers over the token tile; q and k vectors are shared by the columns.
template <int kDk, int kCols>
void ColumnsFixed(const Args& a, int64_t h, int64_t j0, int64_t j1, int64_t t0, int64_t t1,
                  const float* alpha, const float* bt) {
  constexpr int kN = kDk / kLanes;
  const int64_t Hk = a.shape.Hk, Hv = a.shape.Hv, Dv = a.shape.Dv;
  const int64_t hk = h % Hk;
  int64_t j = j0;
  for (; j + kCols <= j1; j += kCols) {
    float* s_ptr = a.state + (h * Dv + j) * kDk;  // kCols consecutive columns, [kCols, Dk]
    VecF s[kCols][kN];
#pragma GCC unroll 16
    for (int c = 0; c < kCols; ++c) {
#pragma GCC unroll 16
      for (int n = 0; n < kN; ++n) s[c][n] = Load(s_ptr + c * kDk + n * kLanes);
    }
    for (int64_t t = t0; t < t1; ++t) {
      const float* qt = a.q + (t * Hk + hk) * kDk;
      const float* kt = a.k + (t * Hk + hk) * kDk;
      const float* vt = a.v + (t * Hv + h) * Dv + j;
      const VecF va = Set1(alpha[t - t0]);
      VecF kv[kN];
#pragma GCC unroll 16
      for (int n = 0; n < kN; ++n) {
        kv[n] = Load(kt + n * kLanes);
        if constexpr (kCols > 1) KeepInRegister(kv[n]);
      }
      float r[kCols];
#pragma GCC unroll 16
      for (int c = 0; c < kCols; ++c) {
#pragma GCC unroll 16
        for (int n = 0; n < kN; ++n) s[c][n] = Mul(s[c][n], va);
        r[c] = bt[t - t0] * (vt[c] - DotRegs<kN>(s[c], kv));
      }
#pragma GCC unroll 16
      for (int c = 0; c < kCols; ++c) {
        const VecF vr = Set1(r[c]);
#pragma GCC unroll 16
        for (int n = 0; n < kN; ++n) s[c][n] = Fma(vr, kv[n], s[c][n]);
      }
      VecF qv[kN];
#pragma GCC unroll 16
      for (int n = 0; n < kN; ++n) {
        qv[n] = Load(qt + n * kLanes);
        if constexpr (kCols > 1) KeepInRegister(qv[n]);
      }
      float* ot = a.out + (t * Hv + h) * Dv + j;
#pragma GCC unroll 16
      for (int c = 0; c < kCols; ++c) ot[c] = DotRegs<kN>(s[c], qv);
    }
#pragma GCC unroll 16
    for (int c = 0; c < kCols; ++c) {
#pragma GCC unroll 16
      for (int n = 0; n < kN; ++n) Store(s_ptr + c * kDk + n * kLanes, s[c][n]);
    }
  }
  if (j < j1) ColumnsGeneric(a, h, j, j1, t0, t1, alpha, bt);
}

// Two columns at once fill the 32 AVX-512 registers well; AVX2 has only 16, so one.
constexpr int kFixedCols = kLanes >= 16 ? 2 : 1;

void RunItem(const Args& a, int64_t h, int64_t j0, int64_t j1) {
  const int64_t T = a.shape.T, Hv = a.shape.Hv;
  float alpha[kTokTile], bt[kTokTile];
  for (int64_t t0 = 0; t0 < T; t0 += kTokTile) {
    const int64_t t1 = std::min(T, t0 + kTokTile);
    for (int64_t t = t0; t < t1; ++t) {
      alpha[t - t0] = std::exp(a.g[t * Hv + h]);
      bt[t - t0] = a.beta[t * Hv + h];
    }
    if (kLanes > 1 && a.shape.Dk == 128) {
      ColumnsFixed<128, kFixedCols>(a, h, j0, j1, t0, t1, alpha, bt);
    } else if (kLanes > 1 && a.shape.Dk == 64) {
      ColumnsFixed<64, kFixedCols>(a, h, j0, j1, t0, t1, alpha, bt);
    } else {
      ColumnsGeneric(a, h, j0, j1, t0, t1, alpha, bt);
    }
  }
}

}  // namespace

void GatedDeltaRecurrent(const GatedDeltaShape& shape, const float* q, const float* k,
                         const float* v, const float* g, const float* beta, float* state,
                         float* out, ThreadPool& pool) {
  if (shape.T <= 0) return;
  const Args a{shape, q, k, v, g, beta, state, out};
  const int64_t n_blocks = (shape.Dv + kColBlock - 1) / kColBlock;
  // The lambda captures one reference, so std::function stores it without allocating.
  pool.ParallelFor(shape.Hv * n_blocks, [&a](int64_t begin, int64_t end, int) {
    const int64_t blocks = (a.shape.Dv + kColBlock - 1) / kColBlock;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t h = item / blocks, j0 = (item % blocks) * kColBlock;
      RunItem(a, h, j0, std::min(a.shape.Dv, j0 + kColBlock));
    }
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
