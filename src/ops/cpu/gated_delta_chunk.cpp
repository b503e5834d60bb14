// Chunked gated delta rule for the CPU (prefill), docs/spec/qwen35-architecture.md §10: tokens are
// taken 64 at a time and each chunk is done with small dense matrix products instead of 64
// dependent rank-1 steps.
//
// Per value head, chunk of n <= 64 tokens (i, j = 0..n-1), S0 = state entering the chunk (Dk x Dv):
//   gamma_i = g_0 + ... + g_i,  Gam_i = exp(gamma_i)          (cumulative log-decay)
//   A_ij = beta_i exp(gamma_i - gamma_j) (k_i . k_j)   j < i   (strictly lower)
//   (I + A) U = B (V - G K S0)                                 (qwen35-architecture.md §10.3: U = W
//   - Kcd S0) O   = G Q S0 + (M .* Q K^T) U,  M_ij = exp(gamma_i - gamma_j), j <= i S_n = Gam_{n-1}
//   S0 + (D K)^T U,  D = diag(exp(gamma_{n-1} - gamma_i))
// The solve is forward substitution on R = B (V - G K S0) directly. That equals forming
// T = (I + A)^-1 and computing W = T B V, Kcd = T B G K, U = W - Kcd S0, but needs one triangular
// solve of width Dv instead of two (Dv + Dk). It is blocked by 4 rows: a GEMM subtracts the rows
// already solved, then the 4 x 4 diagonal block is solved directly.
//
// All products are one GEMM micro-kernel (C = s * C0 + A B, 4 rows x up to 4 vectors, broadcast A,
// vector B), so the state is kept per head in the natural layout S[Dk][Dv] (transposed in and out
// once per call). The last partial chunk is zero-padded to a multiple of 4 rows with g = 0 and
// beta = 0 tokens, which is exact (they do not touch the state; their outputs are dropped).
// gamma is summed in double and exp(gamma_i - gamma_j) is formed as exp(gamma_i) * exp(-gamma_j)
// in double (2n exps instead of n^2/2), falling back to exp of the difference if |gamma| could
// overflow a double.
//
// Work items are value heads over the ThreadPool. Scratch: one grow-only thread_local buffer per
// worker thread (~260 KB at Dk = Dv = 128); allocated on first use and when a larger shape
// arrives, never per call in steady state.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu/simd_f32.h"
#include "ops/cpu_namespace.h"
#include "ops/gated_delta.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace simd;

constexpr int64_t kC = kGatedDeltaChunkSize;
constexpr int kR = 4;                         // rows per micro-kernel tile
constexpr int kMaxNV = kLanes >= 16 ? 4 : 2;  // vectors per tile row (16 or 8 accumulators)
static_assert(kC % kR == 0 && kC % kLanes == 0);

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// C[r][0:kNV*kLanes] = s[r * s_stride] * C0[r][...] + sum_{m < depth} A[r][m] * B[m][...], r < kR.
// C0 == nullptr starts from zero; C0 may be C (each tile is read before it is written).
// Kept out of line: inlined into the big RunHead, GCC spills the B vectors to the stack.
#if defined(__GNUC__)
#define QWENRT_GD_NOINLINE __attribute__((noinline))
#else
#define QWENRT_GD_NOINLINE
#endif
template <int kNV>
QWENRT_GD_NOINLINE void Tile(const float* A, int64_t lda, const float* B, int64_t ldb,
                             int64_t depth, const float* C0, int64_t ldc0, const float* s,
                             int64_t s_stride, float* C, int64_t ldc) {
  VecF acc[kR][kNV];
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
    const VecF sr = Set1(C0 ? s[r * s_stride] : 0.0f);
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v)
      acc[r][v] = C0 ? Mul(sr, Load(C0 + r * ldc0 + v * kLanes)) : Zero();
  }
  for (int64_t m = 0; m < depth; ++m) {
    VecF b[kNV];
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) {
      b[v] = Load(B + m * ldb + v * kLanes);
      KeepInRegister(b[v]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r) {
      const VecF ar = Set1(A[r * lda + m]);
#pragma GCC unroll 4
      for (int v = 0; v < kNV; ++v) acc[r][v] = Fma(ar, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) Store(C + r * ldc + v * kLanes, acc[r][v]);
  }
}

// As Tile over a `rows` x `width` block (rows % kR == 0, width % kLanes == 0).
void Gemm(int64_t rows, int64_t width, int64_t depth, const float* A, int64_t lda, const float* B,
          int64_t ldb, const float* C0, int64_t ldc0, const float* s, int64_t s_stride, float* C,
          int64_t ldc) {
  // Column slabs outer: the slab of B (depth x 64 floats) is reused by every row block from L1.
  for (int64_t x = 0; x < width; x += kMaxNV * kLanes) {
    const int64_t nv = std::min<int64_t>(kMaxNV, (width - x) / kLanes);
    for (int64_t r0 = 0; r0 < rows; r0 += kR) {
      const float* a = A + r0 * lda;
      const float* c0x = C0 ? C0 + r0 * ldc0 + x : nullptr;
      const float* sr = s ? s + r0 * s_stride : nullptr;
      float* c = C + r0 * ldc;
      switch (nv) {
        case 1:
          Tile<1>(a, lda, B + x, ldb, depth, c0x, ldc0, sr, s_stride, c + x, ldc);
          break;
        case 2:
          Tile<2>(a, lda, B + x, ldb, depth, c0x, ldc0, sr, s_stride, c + x, ldc);
          break;
#if defined(__AVX512F__)
        case 3:
          Tile<3>(a, lda, B + x, ldb, depth, c0x, ldc0, sr, s_stride, c + x, ldc);
          break;
        case 4:
          Tile<4>(a, lda, B + x, ldb, depth, c0x, ldc0, sr, s_stride, c + x, ldc);
          break;
#endif
        default:
          break;
      }
    }
  }
}

// Prefetches n floats from p into L2 (a chunk's rows are ~100 KB, more than L1). A hint only;
// a no-op on compilers without the builtin.
template <int kWrite>
inline void Prefetch(const float* p, int64_t n) {
#if defined(__GNUC__)
  for (int64_t i = 0; i < n; i += 64 / int64_t(sizeof(float))) __builtin_prefetch(p + i, kWrite, 2);
#endif
}

#if defined(__AVX2__)
// dst[c][r] = src[r][c] for one 8 x 8 tile (unpack/shuffle/permute, 24 shuffles per 64 floats).
inline void Transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols: 8 x 8 tiles (SIMD when available),
// scalar at the edges.
void Transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  constexpr int64_t kB = 8;
  for (int64_t r0 = 0; r0 < rows; r0 += kB) {
    for (int64_t c0 = 0; c0 < cols; c0 += kB) {
      const int64_t r1 = std::min(rows, r0 + kB), c1 = std::min(cols, c0 + kB);
#if defined(__AVX2__)
      if (r1 - r0 == kB && c1 - c0 == kB) {
        Transpose8x8(src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd);
        continue;
      }
#endif
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * ldd + r] = src[r * lds + c];
      }
    }
  }
}

struct Args {
  GatedDeltaShape shape;
  const float *q, *k, *v, *g, *beta;
  float *state, *out;
};

// Per-thread scratch (Dkp = Dk rounded up to kR, Dvp = Dv rounded up to kLanes).
struct Scratch {
  float* S;   // [Dkp, Dvp]  state of the current head, natural layout S[i][j]
  float* KQ;  // [2*kC, Dk]  partial chunk: rows 0..kC-1: k_i; kC..2kC-1: q_i (zero-padded)
  float* KT;  // [Dkp, kC]   K^T
  float* PQ;  // [2*kC, Dvp] rows 0..: K S0 -> R -> U (in place); rows kC..: Q S0 -> O (in place)
  float* KK;  // [2*kC, kC]  rows 0..: K K^T -> -A; rows kC..: Q K^T -> M .* Q K^T
};

Scratch GetScratch(int64_t Dkp, int64_t Dk, int64_t Dvp) {
  thread_local std::vector<float> buf;
  const int64_t sizes[] = {Dkp * Dvp, 2 * kC * Dk, Dkp * kC, 2 * kC * Dvp, 2 * kC * kC};
  int64_t total = 0;
  for (int64_t sz : sizes) total += RoundUp(sz, 16);  // keep every matrix 64-byte aligned
  if (buf.size() < size_t(total) + 16) buf.resize(size_t(total) + 16);
  float* p = buf.data();
  p += (16 - (reinterpret_cast<uintptr_t>(p) / sizeof(float)) % 16) % 16;
  float* ptrs[5];
  for (int x = 0; x < 5; ++x) {
    ptrs[x] = p;
    p += RoundUp(sizes[x], 16);
  }
  return {ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4]};
}

void RunHead(const Args& a, int64_t h) {
  const int64_t T = a.shape.T, Hk = a.shape.Hk, Hv = a.shape.Hv, Dk = a.shape.Dk, Dv = a.shape.Dv;
  const int64_t Dkp = RoundUp(Dk, kR), Dvp = RoundUp(Dv, kLanes);
  const int64_t hk = h % Hk;
  const Scratch s = GetScratch(Dkp, Dk, Dvp);
  float* St = a.state + h * Dv * Dk;  // [Dv, Dk]

  // State in: S[i][j] = St[j][i], zero padding rows/columns.
  std::fill(s.S, s.S + Dkp * Dvp, 0.0f);
  Transpose(St, Dk, Dv, Dk, s.S, Dvp);
  std::fill(s.KT, s.KT + Dkp * kC, 0.0f);

  float* U = s.PQ;              // [kC, Dvp]
  float* O = s.PQ + kC * Dvp;   // [kC, Dvp]
  float* An = s.KK;             // [kC, kC]  -A
  float* Mqk = s.KK + kC * kC;  // [kC, kC]
  float bt[kC], gam[kC], one[1] = {1.0f};
  double gamma[kC], e_pos[kC], e_neg[kC];

  for (int64_t t0 = 0; t0 < T; t0 += kC) {
    const int64_t n = std::min(kC, T - t0), np = RoundUp(n, kR);

    // Rows of k and q for this key head: read in place (stride Hk*Dk) for a full chunk; gathered
    // into zero-padded scratch for a partial one. K^T is built either way.
    const float* kA = a.k + (t0 * Hk + hk) * Dk;
    const float* qA = a.q + (t0 * Hk + hk) * Dk;
    int64_t lda = Hk * Dk;
    if (np != n || n != kC) {
      for (int64_t i = 0; i < np; ++i) {
        float* kr = s.KQ + i * Dk;
        float* qr = s.KQ + (kC + i) * Dk;
        if (i < n) {
          std::memcpy(kr, kA + i * lda, sizeof(float) * Dk);
          std::memcpy(qr, qA + i * lda, sizeof(float) * Dk);
        } else {
          std::fill(kr, kr + Dk, 0.0f);
          std::fill(qr, qr + Dk, 0.0f);
        }
      }
      kA = s.KQ;
      qA = s.KQ + kC * Dk;
      lda = Dk;
    }
    Transpose(kA, lda, np, Dk, s.KT, kC);
    if (np < kC) {  // columns read by the rounded-up triangle widths below
      for (int64_t m = 0; m < Dk; ++m) std::fill(s.KT + m * kC + np, s.KT + (m + 1) * kC, 0.0f);
    }
    // gamma in double: a chunk's cumulative log-decay can reach hundreds, where an f32 sum has an
    // absolute error of ~1e-4 and so would put a relative error of ~1e-4 into exp(gamma_i -
    // gamma_j).
    double acc = 0.0, max_abs = 0.0;
    for (int64_t i = 0; i < np; ++i) {
      const bool real = i < n;
      acc += real ? a.g[(t0 + i) * Hv + h] : 0.0f;
      gamma[i] = acc;
      bt[i] = real ? a.beta[(t0 + i) * Hv + h] : 0.0f;
      max_abs = std::max(max_abs, std::fabs(acc));
    }
    const bool use_ratio = max_abs < 600.0;  // exp(+-gamma) stays finite in double
    for (int64_t i = 0; i < np; ++i) {
      e_pos[i] = std::exp(gamma[i]);
      e_neg[i] = std::exp(-gamma[i]);
      gam[i] = float(e_pos[i]);
    }
    auto decay = [&](int64_t i, int64_t j) {  // exp(gamma_i - gamma_j), j <= i
      return float(use_ratio ? e_pos[i] * e_neg[j] : std::exp(gamma[i] - gamma[j]));
    };

    // P = K S0 and Q S0.
    Gemm(np, Dvp, Dk, kA, lda, s.S, Dvp, nullptr, 0, nullptr, 0, U, Dvp);
    Gemm(np, Dvp, Dk, qA, lda, s.S, Dvp, nullptr, 0, nullptr, 0, O, Dvp);

    // Lower triangles of K K^T and Q K^T (row block i0 needs columns < i0 + kR), then
    // -A_ij = -beta_i decay_ij (k_i . k_j) for j < i, and M_ij (q_i . k_j) for j <= i.
    // The next chunk's rows of this head are strided in memory (one row per token): ask for them
    // a few rows at a time while this chunk computes (a burst would overflow the miss queue).
    auto prefetch_next = [&](int64_t i0) {
      for (int64_t i = t0 + kC + i0; i < std::min(T, t0 + kC + i0 + kR); ++i) {
        Prefetch<0>(a.k + (i * Hk + hk) * Dk, Dk);
        Prefetch<0>(a.q + (i * Hk + hk) * Dk, Dk);
        Prefetch<0>(a.v + (i * Hv + h) * Dv, Dv);
        Prefetch<1>(a.out + (i * Hv + h) * Dv, Dv);
      }
    };
    for (int64_t i0 = 0; i0 < np; i0 += kR) {
      prefetch_next(i0);
      const int64_t w = RoundUp(i0 + kR, kLanes);
      Gemm(kR, w, Dk, kA + i0 * lda, lda, s.KT, kC, nullptr, 0, nullptr, 0, An + i0 * kC, kC);
      Gemm(kR, w, Dk, qA + i0 * lda, lda, s.KT, kC, nullptr, 0, nullptr, 0, Mqk + i0 * kC, kC);
      for (int64_t i = i0; i < i0 + kR; ++i) {
        float* an = An + i * kC;
        float* mq = Mqk + i * kC;
        for (int64_t j = 0; j < i; ++j) {
          const float dij = decay(i, j);
          an[j] *= -bt[i] * dij;
          mq[j] *= dij;
        }
        mq[i] *= decay(i, i);
        std::fill(an + i, an + w, 0.0f);
        std::fill(mq + i + 1, mq + w, 0.0f);
      }
    }

    // R_i = beta_i (v_i - Gam_i (K S0)_i), in place in U (zero for padding rows and columns).
    for (int64_t i = 0; i < np; ++i) {
      float* ui = U + i * Dvp;
      if (i < n) {
        const float* vi = a.v + ((t0 + i) * Hv + h) * Dv;
        for (int64_t j = 0; j < Dv; ++j) ui[j] = bt[i] * (vi[j] - gam[i] * ui[j]);
        std::fill(ui + Dv, ui + Dvp, 0.0f);
      } else {
        std::fill(ui, ui + Dvp, 0.0f);
      }
    }
    // Forward substitution (I + A) U = R, by blocks of kR rows.
    for (int64_t i0 = 0; i0 < np; i0 += kR) {
      float* ub = U + i0 * Dvp;
      if (i0 > 0) Gemm(kR, Dvp, i0, An + i0 * kC, kC, U, Dvp, ub, Dvp, one, 0, ub, Dvp);
      for (int64_t i = i0 + 1; i < i0 + kR; ++i) {
        for (int64_t j = i0; j < i; ++j) Axpy(U + i * Dvp, An[i * kC + j], U + j * Dvp, Dvp);
      }
    }
    // O = G (Q S0) + (M .* Q K^T) U, straight into `out` where the rows are real and unpadded,
    // else in place over Q S0 and copied.
    for (int64_t i0 = 0; i0 < np; i0 += kR) {
      float* ob = O + i0 * Dvp;
      if (Dv == Dvp && i0 + kR <= n) {
        Gemm(kR, Dvp, i0 + kR, Mqk + i0 * kC, kC, U, Dvp, ob, Dvp, gam + i0, 1,
             a.out + ((t0 + i0) * Hv + h) * Dv, Hv * Dv);
      } else {
        Gemm(kR, Dvp, i0 + kR, Mqk + i0 * kC, kC, U, Dvp, ob, Dvp, gam + i0, 1, ob, Dvp);
        for (int64_t i = i0; i < std::min(n, i0 + kR); ++i) {
          std::memcpy(a.out + ((t0 + i) * Hv + h) * Dv, O + i * Dvp, sizeof(float) * Dv);
        }
      }
    }
    // S_n = Gam_{n-1} S0 + (D K)^T U = Gam_{n-1} S0 + K^T (D U)  (U is not needed any more).
    for (int64_t i = 0; i < n; ++i) Scale(U + i * Dvp, decay(n - 1, i), Dvp);
    const float g_last = gam[n - 1];
    Gemm(Dkp, Dvp, np, s.KT, kC, U, Dvp, s.S, Dvp, &g_last, 0, s.S, Dvp);
  }

  // State out.
  Transpose(s.S, Dvp, Dk, Dv, St, Dk);
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

void GatedDelta(const GatedDeltaShape& shape, const float* q, const float* k, const float* v,
                const float* g, const float* beta, float* state, float* out, ThreadPool& pool) {
  if (shape.T < kGatedDeltaChunkMinTokens) {
    GatedDeltaRecurrent(shape, q, k, v, g, beta, state, out, pool);
  } else {
    GatedDeltaChunk(shape, q, k, v, g, beta, state, out, pool);
  }
}

}  // namespace QWENRT_CPU_NAMESPACE
