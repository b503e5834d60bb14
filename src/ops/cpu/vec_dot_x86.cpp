// AVX2 (+ AVX512-VNNI / AVX-VNNI when the build targets them) multi-token dot kernels of vec_dot.h.
//
// K-quants against Q8_K, per 32-element chunk of a super-block:
//   p   = maddubs(q_weight (u8, 0..63), q_act (s8))   -> 16 x i16 pair sums (no saturation: <=
//   16002) acc += madd(p, scale_i16)                          -> 8 x i32 (vpdpwssd with VNNI: one
//   instruction)
// then per super-block and token: accf += float(acc) * fp16(d) * d_act, minus the min / offset term
// computed from the activation's bsums, and one horizontal sum per row at the end. The weight bytes
// are unpacked once and used for up to kMaxDotTokens tokens (prefill); integer sums are exact, so
// results differ from ref:: only by float summation order.
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

#if QWENRT_X86_DOT
#include <immintrin.h>

#include "ops/cpu/x86_int_dot.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace x86;

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
constexpr const char* kIsa = "avx512vnni";
#elif defined(__AVXVNNI__)
constexpr const char* kIsa = "avxvnni";
#else
constexpr const char* kIsa = "avx2";
#endif

// The 8 scales and 8 mins of a Q4_K / Q5_K block: sc[j] as bytes, mins16 = [m0 m0 m1 m1 ... m7 m7]
// as i16 (matches bsums: two 16-groups per sub-block). Word-wise version of
// docs/spec/gguf-and-quants.md §3.5.1: with u0..u2 the three little-endian words of the 12 bytes,
// scales 0-3 = u0 & 0x3f.., scales 4-7 = low nibbles of u2 with the top two bits of bytes 0-3 above
// them; mins likewise from u1 and the high nibbles of u2.
struct ScalesK {
  alignas(8) uint8_t sc[8];
  __m256i mins16;
};
inline ScalesK UnpackScales(const uint8_t* b) {
  constexpr uint32_t k6 = 0x3F3F3F3F, k4 = 0x0F0F0F0F, k2 = 0x03030303;
  uint32_t u[3];
  __builtin_memcpy(u, b, 12);
  const uint32_t sc_lo = u[0] & k6, sc_hi = (u[2] & k4) | (((u[0] >> 6) & k2) << 4);
  const uint32_t m_lo = u[1] & k6, m_hi = ((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4);
  ScalesK s;
  const uint64_t sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  __builtin_memcpy(s.sc, &sc, 8);
  const __m128i m = _mm_cvtepu8_epi16(
      _mm_cvtsi64_si128(static_cast<int64_t>(m_lo | (static_cast<uint64_t>(m_hi) << 32))));
  s.mins16 = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
  return s;
}

// Q4_K (kHigh = false) and Q5_K (kHigh = true) share everything but the fifth bit.
template <typename Block, bool kHigh, int NT>
void DotK45(const Block* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nb; ++b) {
    const ScalesK s = UnpackScales(x[b].scales);
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
    __m256i qh;
    if constexpr (kHigh) qh = Load256(x[b].qh);
    for (int g = 0; g < 4; ++g) {
      const __m256i q = Load256(x[b].qs + 32 * g);
      __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (kHigh) {
        // Bit s of qh[l] is the fifth bit of element 32s + l (s = 2g for lo, 2g + 1 for hi).
        lo = _mm256_or_si256(
            lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
        hi = _mm256_or_si256(
            hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
      }
      const __m256i sc_lo = _mm256_set1_epi16(s.sc[2 * g]),
                    sc_hi = _mm256_set1_epi16(s.sc[2 * g + 1]);
      for (int t = 0; t < NT; ++t) {
        const int8_t* qa = y[t][b].qs + 64 * g;
        acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(lo, Load256(qa)), sc_lo);
        acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(hi, Load256(qa + 32)), sc_hi);
      }
    }
    const float d = Half(x[b].d), dmin = Half(x[b].dmin);
    for (int t = 0; t < NT; ++t) {
      const __m256i mins = _mm256_madd_epi16(Load256(y[t][b].bsums), s.mins16);  // sum_s m_s * bsum
      const float dy = y[t][b].d;
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * dy), accf[t]);
      accf[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(dmin * dy), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

template <int NT>
void DotQ6K(const BlockQ6K* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales)));
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) {
      // q6 = u - 32 with u in [0, 63]: subtract 32 * sum_g scales[g] * bsums[g] up front.
      acc[t] =
          _mm256_sub_epi32(_mm256_setzero_si256(),
                           _mm256_slli_epi32(_mm256_madd_epi16(Load256(y[t][b].bsums), sc16), 5));
    }
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = Load256(x[b].ql + 64 * half), l1 = Load256(x[b].ql + 64 * half + 32);
      const __m256i h = Load256(x[b].qh + 32 * half);
      const __m256i u[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4)),
          _mm256_or_si256(_mm256_and_si256(l1, m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4)),
      };
      for (int k = 0; k < 4; ++k) {
        // Elements 128*half + 32k .. +31: scale groups j and j + 1 (low / high 128-bit lane).
        const int j = 8 * half + 2 * k;
        const __m256i sc =
            _mm256_set_m128i(_mm_set1_epi16(x[b].scales[j + 1]), _mm_set1_epi16(x[b].scales[j]));
        for (int t = 0; t < NT; ++t) {
          const __m256i p = _mm256_maddubs_epi16(u[k], Load256(y[t][b].qs + 128 * half + 32 * k));
          acc[t] = MaddAcc(acc[t], p, sc);
        }
      }
    }
    const float d = Half(x[b].d);
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * y[t][b].d), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

template <int NT>
void DotQ8_0(const BlockQ8_0* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
             int64_t out_stride) {
  const BlockQ8_0* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i w = Load256(x[b].qs);
    const __m256i aw = _mm256_sign_epi8(w, w);  // |w| as u8 (128 for -128 is fine unsigned)
    const float d = Half(x[b].d);
    for (int t = 0; t < NT; ++t) {
      const __m256i sa = _mm256_sign_epi8(Load256(y[t][b].qs), w);  // a * sign(w)
      const __m256i s = DotU8S8(aw, sa);
      accf[t] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * Half(y[t][b].d)), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

// Float weights: Load8 converts 8 weights to f32; activations are f32 rows.
inline __m256 Load8F32(const void* p, int64_t i) {
  return _mm256_loadu_ps(static_cast<const float*>(p) + i);
}
inline __m256 Load8F16(const void* p, int64_t i) {
  return _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
}
inline __m256 Load8BF16(const void* p, int64_t i) {
  const __m128i h =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float OneF32(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
inline float OneF16(const void* p, int64_t i) { return Half(static_cast<const uint16_t*>(p)[i]); }
inline float OneBF16(const void* p, int64_t i) {
  return Bf16ToFp32(static_cast<const uint16_t*>(p)[i]);
}

template <__m256 (*Load8)(const void*, int64_t), float (*One)(const void*, int64_t), int NT>
void DotFloat(const void* w, const uint8_t* a, size_t a_stride, int64_t n, float* out,
              int64_t out_stride) {
  const float* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const float*>(a + t * a_stride);
  __m256 acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = Load8(w, i), w1 = Load8(w, i + 8);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[t] + i), acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[t] + i + 8), acc1[t]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = Load8(w, i);
    for (int t = 0; t < NT; ++t) acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[t] + i), acc0[t]);
  }
  for (int t = 0; t < NT; ++t) {
    float s = HsumPs(_mm256_add_ps(acc0[t], acc1[t]));
    for (int64_t j = i; j < n; ++j) s += One(w, j) * x[t][j];
    out[t * out_stride] = s;
  }
}

}  // namespace

void DotQ4K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotK45<BlockQ4K, false, NT>(static_cast<const BlockQ4K*>(w), static_cast<const uint8_t*>(a), s,
                                n / kQK_K, o, os);
  });
}
void DotQ5K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotK45<BlockQ5K, true, NT>(static_cast<const BlockQ5K*>(w), static_cast<const uint8_t*>(a), s,
                               n / kQK_K, o, os);
  });
}
void DotQ6K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ6K<NT>(static_cast<const BlockQ6K*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
               os);
  });
}
void DotQ8_0_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ8_0<NT>(static_cast<const BlockQ8_0*>(w), static_cast<const uint8_t*>(a), s, n / kQK8_0, o,
                os);
  });
}
void DotF32_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load8F32, OneF32, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}
void DotF16_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load8F16, OneF16, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}
void DotBF16_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load8BF16, OneBF16, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}

const char* DotKernelIsa() { return kIsa; }

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT
