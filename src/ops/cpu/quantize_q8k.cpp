// SIMD activation quantizer for the K-quant dot products: bit-identical to QuantizeRowQ8K
// (quant.cpp, llama.cpp's quantize_row_q8_K_ref) but 8 floats at a time. It runs before every
// K-quant matmul, so at decode (T = 1) its scalar cost would be a visible share of a token's time.
#include "ops/cpu_namespace.h"
#include "ops/quant.h"
#include "ops/vec_dot.h"

#if QWENRT_X86_DOT
#include <immintrin.h>
#endif

namespace QWENRT_CPU_NAMESPACE {

void QuantizeRowQ8K(const float* x, void* dst_blocks, int64_t n) {
#if QWENRT_X86_DOT
  auto* y = static_cast<BlockQ8K*>(dst_blocks);
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    __m256 vmax = _mm256_setzero_ps();
    for (int j = 0; j < kQK_K; j += 8)
      vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + j)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    BlockQ8K& out = y[b];
    if (!(amax > 0)) {  // all zero (or a NaN reduced the max away): the reference handles it
      ::qwenrt::QuantizeRowQ8K(x, &out, kQK_K);
      continue;
    }
    float max = 0;  // signed value of the first element of largest magnitude (reference tie rule)
    for (int j = 0; j < kQK_K; ++j) {
      if (x[j] == amax || x[j] == -amax) {
        max = x[j];
        break;
      }
    }
    if (max == 0) {  // only with NaNs in the block: let the reference decide
      ::qwenrt::QuantizeRowQ8K(x, &out, kQK_K);
      continue;
    }
    const float iscale = -127.f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i v127 = _mm256_set1_epi32(127);
    for (int j = 0; j < kQK_K; j += 32) {
      // cvtps rounds to nearest even (default MXCSR), as NearestInt does; then min(127, q).
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        q[k] = _mm256_min_epi32(
            _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * k))), v127);
      }
      // packs work per 128-bit lane: restore element order with one dword permute.
      const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
      const __m256i ordered =
          _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs + j), ordered);
    }
    for (int g = 0; g < kQK_K / 16; g += 2) {
      // Sums of 16 int8 (two groups per 32 bytes): widen to i16 and add pairs up to one sum per
      // group.
      const __m256i v =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(out.qs + 16 * g)));
      const __m256i w = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(out.qs + 16 * g + 16)));
      const __m256i s32v = _mm256_madd_epi16(v, _mm256_set1_epi16(1)),
                    s32w = _mm256_madd_epi16(w, _mm256_set1_epi16(1));
      const __m256i h = _mm256_hadd_epi32(
          s32v, s32w);  // [v0+v1, v2+v3, w0+w1, w2+w3 | v4+v5, v6+v7, w4+w5, w6+w7]
      const __m256i h2 = _mm256_hadd_epi32(h, h);  // [v0..3, w0..3, .. | v4..7, w4..7, ..]
      const __m128i lo = _mm256_castsi256_si128(h2), hi = _mm256_extracti128_si256(h2, 1);
      const __m128i tot = _mm_add_epi32(lo, hi);  // [sum v, sum w, sum v, sum w]
      out.bsums[g] = static_cast<int16_t>(_mm_cvtsi128_si32(tot));
      out.bsums[g + 1] = static_cast<int16_t>(_mm_extract_epi32(tot, 1));
    }
    out.d = 1 / iscale;
  }
#else
  ::qwenrt::QuantizeRowQ8K(x, dst_blocks, n);
#endif
}

}  // namespace QWENRT_CPU_NAMESPACE
