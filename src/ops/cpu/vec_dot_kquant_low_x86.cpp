// AVX2 multi-token dot kernels of Q2_K, Q3_K and IQ4_XS against Q8_K activations (vec_dot.h).
//
// Per 32-element chunk of a super-block the weights are decoded once to bytes u, then for each
// token
//   p   = maddubs(u, q_act)           -> 16 x i16 pair sums (|u| <= 127 here: no saturation)
//   acc += madd(p, scale_i16)         -> 8 x i32, the scales of the chunk's groups in its two
//   halves
// Q2_K's mins and Q3_K's offset of -4 come from the activation's bsums (one madd per super-block);
// IQ4_XS's table values are signed, so u = |w| and the activations take w's sign. Integer sums
// equal ref::VecDot*_Q8K's; results differ only by float summation order.
#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

#if QWENRT_X86_DOT
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu/x86_int_dot.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace x86;

// i16 scale vector for a 32-element chunk made of groups g (low 128-bit half) and g + 1 (high
// half).
inline __m256i PairScale(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)),
                          _mm_set1_epi16(static_cast<int16_t>(lo)));
}

template <int NT>
void DotQ2K(const BlockQ2K* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m2 = _mm256_set1_epi8(3);
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i sc8 = Load128(x[b].scales);
    const __m256i mins16 =
        _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F)));
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = Load256(x[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const int c = 4 * h + k;  // chunk: elements 32c .. 32c + 31, groups 2c and 2c + 1
        const __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2);
        const __m256i sc = PairScale(x[b].scales[2 * c] & 0x0F, x[b].scales[2 * c + 1] & 0x0F);
        for (int t = 0; t < NT; ++t) {
          acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(u, Load256(y[t][b].qs + 32 * c)), sc);
        }
      }
    }
    const float d = Half(x[b].d), dmin = Half(x[b].dmin);
    for (int t = 0; t < NT; ++t) {
      const __m256i mins = _mm256_madd_epi16(Load256(y[t][b].bsums), mins16);
      const float dy = y[t][b].d;
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * dy), accf[t]);
      accf[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(dmin * dy), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

template <int NT>
void DotQ3K(const BlockQ3K* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nb; ++b) {
    alignas(16) uint8_t sc_code[16];
    UnpackScalesQ3K(x[b].scales, sc_code);
    int16_t sc[16];
    for (int g = 0; g < 16; ++g) sc[g] = static_cast<int16_t>(sc_code[g] - 32);
    const __m256i sc16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc));
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) {
      // q = u - 4 with u = low bits | high bit << 2 in [0, 7]: subtract 4 * sum_g sc_g * bsums[g]
      // first.
      acc[t] =
          _mm256_sub_epi32(_mm256_setzero_si256(),
                           _mm256_slli_epi32(_mm256_madd_epi16(Load256(y[t][b].bsums), sc16), 2));
    }
    const __m256i hm = Load256(x[b].hmask);
    for (int h = 0; h < 2; ++h) {
      const __m256i q = Load256(x[b].qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const int c = 4 * h + k;  // bit c of hmask[l] is the high bit of element 32c + l
        const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), one), 2);
        const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m2), hb);
        const __m256i scv = PairScale(sc[2 * c], sc[2 * c + 1]);
        for (int t = 0; t < NT; ++t) {
          acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(u, Load256(y[t][b].qs + 32 * c)), scv);
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
void DotIQ4XS(const BlockIQ4XS* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
              int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ++ib) {
      const __m256i w = _mm256_shuffle_epi8(table, Nibbles32(x[b].qs + 16 * ib));
      const __m256i u = _mm256_sign_epi8(w, w);  // |w| <= 127
      const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(ScaleIQ4XS(x[b], ib) - 32));
      for (int t = 0; t < NT; ++t) {
        const __m256i sa = _mm256_sign_epi8(Load256(y[t][b].qs + 32 * ib), w);
        acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(u, sa), sc);
      }
    }
    const float d = Half(x[b].d);
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * y[t][b].d), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

}  // namespace

void DotQ2K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ2K<NT>(static_cast<const BlockQ2K*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
               os);
  });
}
void DotQ3K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ3K<NT>(static_cast<const BlockQ3K*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
               os);
  });
}
void DotIQ4XS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotIQ4XS<NT>(static_cast<const BlockIQ4XS*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
                 os);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT
