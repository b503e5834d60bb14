// Small AVX2 (+ VNNI where the build targets it) helpers shared by the integer dot kernels of
// vec_dot_x86.cpp, vec_dot_iq_x86.cpp, vec_dot_legacy_x86.cpp and vec_dot_kquant_low_x86.cpp.
// Include only under QWENRT_X86_DOT.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

namespace QWENRT_CPU_NAMESPACE::x86 {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// acc + sum of adjacent i16 pair products (vpdpwssd).
inline __m256i MaddAcc(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_epi32(acc, a, b); }
// acc + sums of 4 adjacent u8 * s8 products (vpdpbusd); no saturation.
inline __m256i DotU8S8Acc(__m256i acc, __m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(acc, u, s);
}
#elif defined(__AVXVNNI__)
inline __m256i MaddAcc(__m256i acc, __m256i a, __m256i b) {
  return _mm256_dpwssd_avx_epi32(acc, a, b);
}
inline __m256i DotU8S8Acc(__m256i acc, __m256i u, __m256i s) {
  return _mm256_dpbusd_avx_epi32(acc, u, s);
}
#else
inline __m256i MaddAcc(__m256i acc, __m256i a, __m256i b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}
// maddubs saturates i16 pair sums at +-32767: callers keep |u| * |s| * 2 below that.
inline __m256i DotU8S8Acc(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
#endif

inline __m256i DotU8S8(__m256i u, __m256i s) { return DotU8S8Acc(_mm256_setzero_si256(), u, s); }

// fp16 -> f32 with F16C.
inline float Half(uint16_t h) { return _cvtsh_ss(h); }

inline float HsumPs(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i Load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// The 16 bytes of a 32-element nibble block as 32 bytes 0..15: low nibbles first (elements 0..15),
// then high nibbles (elements 16..31).
inline __m256i Nibbles32(const uint8_t* qs) {
  const __m128i q = Load128(qs), m4 = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

// Byte j = 0xFF where bit j of the 32-bit `bits` is set, else 0.
inline __m256i BitsToBytes(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                          0x0202020202020202, 0x0303030303030303);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), shuf);
  const __m256i mask = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, mask), mask);
}

}  // namespace QWENRT_CPU_NAMESPACE::x86
