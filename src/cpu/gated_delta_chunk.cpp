// Chunked gated delta rule for the CPU (prefill), spec §10: tokens are taken 64 at a time and each
// chunk is done with small dense products instead of 64 dependent rank-1 steps.
//
// Per value head, chunk of n <= 64 tokens (i, j = 0..n-1), S0 = state entering the chunk:
//   gamma_i = g_0 + ... + g_i,  Gam_i = exp(gamma_i)          (cumulative log-decay)
//   A_ij = beta_i exp(gamma_i - gamma_j) (k_i . k_j)   j < i   (strictly lower)
//   (I + A) U = B (V - G K S0)                                 (spec §10.3: U = W - Kcd S0)
//   O   = G Q S0 + (M .* Q K^T) U,  M_ij = exp(gamma_i - gamma_j), j <= i
//   S_n = Gam_{n-1} S0 + sum_i exp(gamma_{n-1} - gamma_i) k_i u_i^T
// The solve is forward substitution on R = B (V - G K S0) directly, which is the same as forming
// T = (I + A)^-1 and computing W = T B V, Kcd = T B G K, U = W - Kcd S0, but does one triangular
// solve of width Dv instead of two (Dv + Dk). A last partial chunk simply has n < 64, which equals
// zero-padding it with g = 0, beta = 0 tokens (they would not change the state).
//
// Work items are value heads over the ThreadPool. Scratch: one grow-only thread_local buffer per
// worker thread (a few 64 x max(Dk, Dv) matrices); it is allocated on first use and when a larger
// shape arrives, never per call in steady state.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/gated_delta_simd.h"
#include "gated_delta.h"

namespace qwenrt::cpu {
namespace {

using namespace gd_simd;

constexpr int64_t kC = kGatedDeltaChunkSize;

struct Args {
  GatedDeltaShape shape;
  const float *q, *k, *v, *g, *beta;
  float *state, *out;
};

// Per-thread scratch, laid out in one grow-only buffer.
struct Scratch {
  float* p;    // [kC, Dv]  rows S0^T k_i, later R_i, then U_i in place
  float* qs;   // [kC, Dv]  rows S0^T q_i
  float* dec;  // [kC, kC]  exp(gamma_i - gamma_j) for j <= i
  float* kk;   // [kC, kC]  A_ij (strict lower)
  float* qk;   // [kC, kC]  M_ij (q_i . k_j) for j <= i
};

Scratch GetScratch(int64_t Dv) {
  thread_local std::vector<float> buf;
  const size_t need = size_t(2 * kC * Dv + 3 * kC * kC);
  if (buf.size() < need) buf.resize(need);
  float* p = buf.data();
  return {p, p + kC * Dv, p + 2 * kC * Dv, p + 2 * kC * Dv + kC * kC,
          p + 2 * kC * Dv + 2 * kC * kC};
}

void RunHead(const Args& a, int64_t h) {
  const int64_t T = a.shape.T, Hk = a.shape.Hk, Hv = a.shape.Hv, Dk = a.shape.Dk,
                Dv = a.shape.Dv;
  const int64_t hk = h % Hk;
  float* St = a.state + h * Dv * Dk;  // [Dv, Dk]: row j = column j of S
  const Scratch s = GetScratch(Dv);
  float gamma[kC], bt[kC];
  for (int64_t t0 = 0; t0 < T; t0 += kC) {
    const int64_t n = std::min(kC, T - t0);
    auto q_row = [&](int64_t i) { return a.q + ((t0 + i) * Hk + hk) * Dk; };
    auto k_row = [&](int64_t i) { return a.k + ((t0 + i) * Hk + hk) * Dk; };
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      acc += a.g[(t0 + i) * Hv + h];
      gamma[i] = acc;
      bt[i] = a.beta[(t0 + i) * Hv + h];
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) s.dec[i * kC + j] = std::exp(gamma[i] - gamma[j]);
    }
    // P = K S0, QS = Q S0 (rows of length Dv).
    for (int64_t i = 0; i < n; ++i) {
      const float* ki = k_row(i);
      const float* qi = q_row(i);
      for (int64_t j = 0; j < Dv; ++j) {
        s.p[i * Dv + j] = Dot(St + j * Dk, ki, Dk);
        s.qs[i * Dv + j] = Dot(St + j * Dk, qi, Dk);
      }
    }
    // A (strict lower) and M .* QK^T (lower incl. diagonal).
    for (int64_t i = 0; i < n; ++i) {
      const float* ki = k_row(i);
      const float* qi = q_row(i);
      for (int64_t j = 0; j <= i; ++j) {
        const float* kj = k_row(j);
        if (j < i) s.kk[i * kC + j] = bt[i] * s.dec[i * kC + j] * Dot(ki, kj, Dk);
        s.qk[i * kC + j] = s.dec[i * kC + j] * Dot(qi, kj, Dk);
      }
    }
    // R_i = beta_i (v_i - Gam_i P_i), then forward substitution U_i = R_i - sum_{j<i} A_ij U_j
    // (in place over P), then O_i = Gam_i QS_i + sum_{j<=i} M_ij (q_i . k_j) U_j.
    for (int64_t i = 0; i < n; ++i) {
      float* ui = s.p + i * Dv;
      const float* vi = a.v + ((t0 + i) * Hv + h) * Dv;
      const float gi = std::exp(gamma[i]);
      for (int64_t j = 0; j < Dv; ++j) ui[j] = bt[i] * (vi[j] - gi * ui[j]);
      for (int64_t j = 0; j < i; ++j) Axpy(ui, -s.kk[i * kC + j], s.p + j * Dv, Dv);
      float* oi = a.out + ((t0 + i) * Hv + h) * Dv;
      for (int64_t j = 0; j < Dv; ++j) oi[j] = gi * s.qs[i * Dv + j];
      for (int64_t j = 0; j <= i; ++j) Axpy(oi, s.qk[i * kC + j], s.p + j * Dv, Dv);
    }
    // S_n = Gam_{n-1} S0 + sum_i exp(gamma_{n-1} - gamma_i) k_i u_i^T  (in the transposed layout:
    // row j of St gets sum_i (d_i u_i[j]) k_i).
    const float g_last = std::exp(gamma[n - 1]);
    for (int64_t j = 0; j < Dv; ++j) {
      float* row = St + j * Dk;
      Scale(row, g_last, Dk);
      for (int64_t i = 0; i < n; ++i) {
        Axpy(row, s.dec[(n - 1) * kC + i] * s.p[i * Dv + j], k_row(i), Dk);
      }
    }
  }
}

}  // namespace

void GatedDeltaChunk(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                     const float* g, const float* beta, float* state, float* out,
                     ThreadPool& pool) {
  if (shape.T <= 0) return;
  const Args a{shape, q, k, v, g, beta, state, out};
  pool.ParallelFor(shape.Hv, [&a](int64_t begin, int64_t end, int) {
    for (int64_t h = begin; h < end; ++h) RunHead(a, h);
  });
}

}  // namespace qwenrt::cpu
