// A minimal f32 SIMD vocabulary for the CPU kernels (gated delta rule, causal conv): one vector
// type `VecF` of `kLanes` floats with load/store/fma/reduce/exp, backed by AVX-512, AVX2+FMA or
// aarch64 NEON when the compiler targets them, and by a portable one-lane scalar fallback
// otherwise. Internal to src/cpu/.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE::simd {

#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
struct VecF {
  __m512 v;
};
inline VecF Zero() { return {_mm512_setzero_ps()}; }
inline VecF Set1(float x) { return {_mm512_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void Store(float* p, VecF a) { _mm512_storeu_ps(p, a.v); }
inline VecF Add(VecF a, VecF b) { return {_mm512_add_ps(a.v, b.v)}; }
inline VecF Mul(VecF a, VecF b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }  // a*b + c
inline VecF Sub(VecF a, VecF b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline VecF Div(VecF a, VecF b) { return {_mm512_div_ps(a.v, b.v)}; }
// The maskz forms here avoid GCC 12's _mm512_undefined_ps, which trips -Wmaybe-uninitialized.
inline VecF Min(VecF a, VecF b) { return {_mm512_maskz_min_ps(0xFFFF, a.v, b.v)}; }
inline VecF Max(VecF a, VecF b) { return {_mm512_maskz_max_ps(0xFFFF, a.v, b.v)}; }
inline VecF RoundNearest(VecF a) {
  return {_mm512_maskz_roundscale_ps(0xFFFF, a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
// a * 2^n for integral n in [-126, 127]
inline VecF Ldexp(VecF a, VecF n) { return {_mm512_maskz_scalef_ps(0xFFFF, a.v, n.v)}; }
inline float ReduceAdd(VecF a) {
  // Butterfly within the 512-bit register (maskz forms: see Min; _mm512_reduce_add_ps and the
  // 512->256 casts use _mm512_undefined_ps too).
  __m512 s = _mm512_add_ps(a.v, _mm512_maskz_shuffle_f32x4(0xFFFF, a.v, a.v, 0x4E));
  s = _mm512_add_ps(s, _mm512_maskz_shuffle_f32x4(0xFFFF, s, s, 0xB1));
  s = _mm512_add_ps(s, _mm512_maskz_permute_ps(0xFFFF, s, 0x4E));
  s = _mm512_add_ps(s, _mm512_maskz_permute_ps(0xFFFF, s, 0xB1));
  return _mm512_cvtss_f32(s);
}
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr int kLanes = 8;
struct VecF {
  __m256 v;
};
inline VecF Zero() { return {_mm256_setzero_ps()}; }
inline VecF Set1(float x) { return {_mm256_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void Store(float* p, VecF a) { _mm256_storeu_ps(p, a.v); }
inline VecF Add(VecF a, VecF b) { return {_mm256_add_ps(a.v, b.v)}; }
inline VecF Mul(VecF a, VecF b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline VecF Sub(VecF a, VecF b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline VecF Div(VecF a, VecF b) { return {_mm256_div_ps(a.v, b.v)}; }
inline VecF Min(VecF a, VecF b) { return {_mm256_min_ps(a.v, b.v)}; }
inline VecF Max(VecF a, VecF b) { return {_mm256_max_ps(a.v, b.v)}; }
inline VecF RoundNearest(VecF a) {
  return {_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline VecF Ldexp(VecF a, VecF n) {  // a * 2^n for integral n in [-126, 127]: build 2^n's bits
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
  const __m256i bits = _mm256_slli_epi32(biased, 23);
  return {_mm256_mul_ps(a.v, _mm256_castsi256_ps(bits))};
}
inline float ReduceAdd(VecF a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
inline constexpr int kLanes = 4;
struct VecF {
  float32x4_t v;
};
inline VecF Zero() { return {vdupq_n_f32(0)}; }
inline VecF Set1(float x) { return {vdupq_n_f32(x)}; }
inline VecF Load(const float* p) { return {vld1q_f32(p)}; }
inline void Store(float* p, VecF a) { vst1q_f32(p, a.v); }
inline VecF Add(VecF a, VecF b) { return {vaddq_f32(a.v, b.v)}; }
inline VecF Mul(VecF a, VecF b) { return {vmulq_f32(a.v, b.v)}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {vfmaq_f32(c.v, a.v, b.v)}; }  // a*b + c
inline VecF Sub(VecF a, VecF b) { return {vsubq_f32(a.v, b.v)}; }
inline VecF Div(VecF a, VecF b) { return {vdivq_f32(a.v, b.v)}; }
inline VecF Min(VecF a, VecF b) { return {vminq_f32(a.v, b.v)}; }
inline VecF Max(VecF a, VecF b) { return {vmaxq_f32(a.v, b.v)}; }
inline VecF RoundNearest(VecF a) { return {vrndnq_f32(a.v)}; }
inline VecF Ldexp(VecF a, VecF n) {  // a * 2^n for integral n in [-126, 127]: build 2^n's bits
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n.v), vdupq_n_s32(127)), 23);
  return {vmulq_f32(a.v, vreinterpretq_f32_s32(bits))};
}
inline float ReduceAdd(VecF a) { return vaddvq_f32(a.v); }
#else
inline constexpr int kLanes = 1;
struct VecF {
  float v;
};
inline VecF Zero() { return {0.0f}; }
inline VecF Set1(float x) { return {x}; }
inline VecF Load(const float* p) { return {*p}; }
inline void Store(float* p, VecF a) { *p = a.v; }
inline VecF Add(VecF a, VecF b) { return {a.v + b.v}; }
inline VecF Mul(VecF a, VecF b) { return {a.v * b.v}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {a.v * b.v + c.v}; }
inline VecF Sub(VecF a, VecF b) { return {a.v - b.v}; }
inline VecF Div(VecF a, VecF b) { return {a.v / b.v}; }
inline VecF Min(VecF a, VecF b) { return {a.v < b.v ? a.v : b.v}; }
inline VecF Max(VecF a, VecF b) { return {a.v > b.v ? a.v : b.v}; }
inline VecF RoundNearest(VecF a) { return {std::nearbyint(a.v)}; }
inline VecF Ldexp(VecF a, VecF n) { return {std::ldexp(a.v, int(n.v))}; }
inline float ReduceAdd(VecF a) { return a.v; }
#endif

// exp(x) for each lane, relative error < 2e-7 (about 1-2 ulp), for any finite x (results are
// clamped to [exp(-87.3), exp(88.3)], i.e. no denormals and no infinity). exp(x) = 2^n exp(r) with
// n = round(x / ln 2), r = x - n ln 2 in [-0.347, 0.347] (ln 2 split in two for exactness), and
// exp(r) by its degree-7 Taylor polynomial (truncation error 0.347^8 / 8! < 6e-9).
inline VecF Exp(VecF x) {
  x = Min(Max(x, Set1(-87.3f)), Set1(88.3f));
  const VecF n = RoundNearest(Mul(x, Set1(1.44269504088896341f)));
  VecF r = Fma(n, Set1(-0.693359375f), x);  // ln 2 = 0.693359375 - 2.12194440e-4
  r = Fma(n, Set1(2.12194440e-4f), r);
  VecF p = Set1(1.0f / 5040);
  p = Fma(p, r, Set1(1.0f / 720));
  p = Fma(p, r, Set1(1.0f / 120));
  p = Fma(p, r, Set1(1.0f / 24));
  p = Fma(p, r, Set1(1.0f / 6));
  p = Fma(p, r, Set1(0.5f));
  p = Fma(p, Mul(r, r), Add(r, Set1(1.0f)));
  return Ldexp(p, n);
}

// SiLU(x) = x * sigmoid(x) = x / (1 + exp(-x)).
inline VecF Silu(VecF x) { return Div(x, Add(Set1(1.0f), Exp(Sub(Zero(), x)))); }

// Makes `a` opaque to the optimiser so it stays in a register: GCC otherwise re-reads a loaded
// vector from memory at each use (folding the load into every FMA), which makes small GEMM tiles
// load-bound instead of FMA-bound.
inline void KeepInRegister(VecF& a) {
#if defined(__GNUC__) && (defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
  asm("" : "+v"(a.v));
#elif defined(__GNUC__) && defined(__aarch64__) && defined(__ARM_NEON)
  asm("" : "+w"(a.v));
#else
  (void)a;
#endif
}

// sum_i a[i] * b[i], with two vector accumulators to hide FMA latency, and a scalar tail.
inline float Dot(const float* a, const float* b, int64_t n) {
  VecF acc0 = Zero(), acc1 = Zero();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 = Fma(Load(a + i), Load(b + i), acc0);
    acc1 = Fma(Load(a + i + kLanes), Load(b + i + kLanes), acc1);
  }
  for (; i + kLanes <= n; i += kLanes) acc0 = Fma(Load(a + i), Load(b + i), acc0);
  float s = ReduceAdd(Add(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y[i] += a * x[i]
inline void Axpy(float* y, float a, const float* x, int64_t n) {
  const VecF va = Set1(a);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(y + i, Fma(va, Load(x + i), Load(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

// y[i] *= a
inline void Scale(float* y, float a, int64_t n) {
  const VecF va = Set1(a);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(y + i, Mul(va, Load(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

}  // namespace QWENRT_CPU_NAMESPACE::simd
