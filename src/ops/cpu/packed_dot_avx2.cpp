// AVX2 packed kernels (packed.h) for the levels with AVX2 but not AVX-512 VNNI: the 16-row tile as
// two 8-row halves, each 8 int32 / f32 lanes = 8 rows, with the AVX-512 kernels' arithmetic
// (packed_dot_x86.cpp) written for 256-bit registers:
//   w_j (32 bytes) = 4 consecutive elements of 8 rows (u8); for token t, maddubs(w_j, broadcast(4
//   activation bytes)) gives each row's two i16 pair sums, and madd(., (scale, scale)) their int32
//   sum times the row's sub-block scale.
// The i16 pair sums never saturate: Q4_K's u8 values are <= 15 and Q6_K's <= 63, |q_act| <= 128, so
// a pair is <= 2 * 63 * 128 = 16128, and the kernels add at most 8 (Q4_K: <= 30720) or 2 (Q6_K:
// <= 32256) of them in i16 before widening. The integer sums are exact, and the float combination
// per super-block is the AVX-512 kernels' (the same fmsub / fmadd in the same order), so a token's
// outputs do not depend on how many tokens a call takes.
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#if QWENRT_X86_DOT && !QWENRT_PACKED_X86
#include <immintrin.h>

#include <cstring>

namespace QWENRT_CPU_NAMESPACE {
namespace {

constexpr int kHalf = kPackRows / 2;  // rows per 256-bit register of int32 / f32 lanes

// 4 bytes at p broadcast to the 8 dword lanes.
inline __m256i Bcast(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}
inline __m256i Load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
// 8 fp16 -> f32 (F16C).
inline __m256 Halves(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// 8 bytes -> 8 int32 lanes (zero-extended).
inline __m256i U8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// int32 lanes holding values that fit int16 -> each lane's value in both of its int16 halves, so
// that madd(pairs16, Twice(sc)) = (pair 0 + pair 1) * sc per lane, exactly: the widening and the
// scale in one vpmaddwd (instead of a vpmaddwd and a slow vpmulld).
inline __m256i Twice(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(v, 16));
}

// The 8 outputs of rows [0, n) of this half, token t.
inline void Store(float* out, __m256 v, int n) {
  if (n >= kHalf) {
    _mm256_storeu_ps(out, v);
  } else if (n > 0) {
    alignas(32) float tmp[kHalf];
    _mm256_store_ps(tmp, v);
    std::memcpy(out, tmp, sizeof(float) * static_cast<size_t>(n));
  }
}

// Rows 8h .. 8h + 7 of the Q4_K tile.
template <int NT>
void Q4KHalf(const PackedQ4K* x, const BlockQ8K* const* y, int64_t nb, int h, float* out,
             int64_t out_stride, int nrows) {
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ4K& X = x[b];
    __m256i s1[NT];
    for (int t = 0; t < NT; ++t) s1[t] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      __m256i q[8];
      for (int j = 0; j < 4; ++j) {
        const __m256i v = Load(X.qs[s][j] + 32 * h);
        q[j] = _mm256_and_si256(v, m4);                            // elements 32s + 4j + i
        q[4 + j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);  // elements 32s + 16 + 4j + i
      }
      const __m256i sc = Twice(U8x8(X.scales[s] + kHalf * h));
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = y[t][b].qs + 32 * s;
        __m256i p = _mm256_maddubs_epi16(q[0], Bcast(a));
        for (int j = 1; j < 4; ++j)
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[j], Bcast(a + 4 * j)));
        for (int j = 0; j < 4; ++j)
          p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[4 + j], Bcast(a + 16 + 4 * j)));
        s1[t] = _mm256_add_epi32(s1[t], _mm256_madd_epi16(p, sc));
      }
    }
    // sum_s m_s * (bsums[2s] + bsums[2s+1]): lanes hold (m_s, m_s) as an int16 pair.
    __m256i mp[8];
    for (int s = 0; s < 8; ++s) mp[s] = Twice(U8x8(X.mins[s] + kHalf * h));
    const __m256 d = Halves(X.d + kHalf * h), dmin = Halves(X.dmin + kHalf * h);
    for (int t = 0; t < NT; ++t) {
      const int16_t* bs = y[t][b].bsums;
      __m256i s2 = _mm256_madd_epi16(mp[0], Bcast(bs));
      for (int s = 1; s < 8; ++s)
        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(mp[s], Bcast(bs + 2 * s)));
      const __m256 dy = _mm256_set1_ps(y[t][b].d);
      // As the AVX-512 kernel: the super-block's d*S1 - dmin*S2 with one rounding, then the sum.
      const __m256 m = _mm256_mul_ps(_mm256_cvtepi32_ps(s2), _mm256_mul_ps(dmin, dy));
      accf[t] = _mm256_add_ps(accf[t],
                              _mm256_fmsub_ps(_mm256_cvtepi32_ps(s1[t]), _mm256_mul_ps(d, dy), m));
    }
  }
  for (int t = 0; t < NT; ++t) Store(out + t * out_stride + kHalf * h, accf[t], nrows - kHalf * h);
}

// Rows 8h .. 8h + 7 of the Q6_K tile.
template <int NT>
void Q6KHalf(const PackedQ6K* x, const BlockQ8K* const* y, int64_t nb, int h, float* out,
             int64_t out_stride, int nrows) {
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30),
                minus32 = _mm256_set1_epi16(-32);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ6K& X = x[b];
    __m256i sum[NT];
    for (int t = 0; t < NT; ++t) sum[t] = _mm256_setzero_si256();
    for (int p = 0; p < 8; ++p) {
      // Lanes r: (scale 2p, scale 2p+1) of row 8h + r as int16; as int32 for the groups.
      const __m256i pv = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(X.scales[p][kHalf * h])));
      const __m256i sc[2] = {Twice(_mm256_srai_epi32(_mm256_slli_epi32(pv, 16), 16)),
                             Twice(_mm256_srai_epi32(pv, 16))};
      for (int gi = 0; gi < 2; ++gi) {
        const int g = 2 * p + gi;
        const PackedQ6K::Group& G = X.groups[g];
        const __m256i l0 = Load(G.ql[0] + 32 * h), l1 = Load(G.ql[1] + 32 * h),
                      hb = Load(G.qh + 32 * h);
        const __m256i u0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        const __m256i u1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        const __m256i u2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                           _mm256_and_si256(hb, m30));
        const __m256i u3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
        for (int t = 0; t < NT; ++t) {
          const int8_t* a = y[t][b].qs + 16 * g;
          const __m256i lo = _mm256_add_epi16(_mm256_maddubs_epi16(u0, Bcast(a)),
                                              _mm256_maddubs_epi16(u1, Bcast(a + 4)));
          const __m256i hi = _mm256_add_epi16(_mm256_maddubs_epi16(u2, Bcast(a + 8)),
                                              _mm256_maddubs_epi16(u3, Bcast(a + 12)));
          sum[t] = _mm256_add_epi32(sum[t], _mm256_add_epi32(_mm256_madd_epi16(lo, sc[gi]),
                                                             _mm256_madd_epi16(hi, sc[gi])));
        }
      }
      const __m256i pm = _mm256_mullo_epi16(pv, minus32);  // u - 32 = q6: -32 * scale * bsum
      for (int t = 0; t < NT; ++t) {
        sum[t] = _mm256_add_epi32(sum[t], _mm256_madd_epi16(pm, Bcast(y[t][b].bsums + 2 * p)));
      }
    }
    const __m256 d = Halves(X.d + kHalf * h);
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[t]),
                                _mm256_mul_ps(d, _mm256_set1_ps(y[t][b].d)), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) Store(out + t * out_stride + kHalf * h, accf[t], nrows - kHalf * h);
}

}  // namespace

void DotPackedQ4K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ4K*>(w);
  for (int h = 0; h < 2 && kHalf * h < nrows; ++h) {
    ForNtok(ntok, [&]<int NT>() { Q4KHalf<NT>(x, tok.y, n / kQK_K, h, out, out_stride, nrows); });
  }
}
void DotPackedQ6K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ6K*>(w);
  for (int h = 0; h < 2 && kHalf * h < nrows; ++h) {
    ForNtok(ntok, [&]<int NT>() { Q6KHalf<NT>(x, tok.y, n / kQK_K, h, out, out_stride, nrows); });
  }
}

bool PackedKernelsFast() { return true; }
const char* PackedKernelIsa() { return "avx2"; }

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT && !QWENRT_PACKED_X86
