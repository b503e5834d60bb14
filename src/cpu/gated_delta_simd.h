// A minimal f32 SIMD vocabulary for the gated-delta CPU kernels: one vector type `VecF` of
// `kLanes` floats with load/store/fma/reduce, backed by AVX-512 or AVX2+FMA when the compiler
// targets them, and by a portable one-lane scalar fallback otherwise. Internal to src/cpu/.
#pragma once

#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace qwenrt::cpu::gd_simd {

#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
struct VecF { __m512 v; };
inline VecF Zero() { return {_mm512_setzero_ps()}; }
inline VecF Set1(float x) { return {_mm512_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void Store(float* p, VecF a) { _mm512_storeu_ps(p, a.v); }
inline VecF Add(VecF a, VecF b) { return {_mm512_add_ps(a.v, b.v)}; }
inline VecF Mul(VecF a, VecF b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }  // a*b + c
inline float ReduceAdd(VecF a) {
  // Butterfly within the 512-bit register. The maskz forms avoid GCC 12's _mm512_undefined_ps
  // (used by _mm512_reduce_add_ps and the 512->256 casts), which trips -Wmaybe-uninitialized.
  __m512 s = _mm512_add_ps(a.v, _mm512_maskz_shuffle_f32x4(0xFFFF, a.v, a.v, 0x4E));
  s = _mm512_add_ps(s, _mm512_maskz_shuffle_f32x4(0xFFFF, s, s, 0xB1));
  s = _mm512_add_ps(s, _mm512_maskz_permute_ps(0xFFFF, s, 0x4E));
  s = _mm512_add_ps(s, _mm512_maskz_permute_ps(0xFFFF, s, 0xB1));
  return _mm512_cvtss_f32(s);
}
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr int kLanes = 8;
struct VecF { __m256 v; };
inline VecF Zero() { return {_mm256_setzero_ps()}; }
inline VecF Set1(float x) { return {_mm256_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void Store(float* p, VecF a) { _mm256_storeu_ps(p, a.v); }
inline VecF Add(VecF a, VecF b) { return {_mm256_add_ps(a.v, b.v)}; }
inline VecF Mul(VecF a, VecF b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline float ReduceAdd(VecF a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#else
inline constexpr int kLanes = 1;
struct VecF { float v; };
inline VecF Zero() { return {0.0f}; }
inline VecF Set1(float x) { return {x}; }
inline VecF Load(const float* p) { return {*p}; }
inline void Store(float* p, VecF a) { *p = a.v; }
inline VecF Add(VecF a, VecF b) { return {a.v + b.v}; }
inline VecF Mul(VecF a, VecF b) { return {a.v * b.v}; }
inline VecF Fma(VecF a, VecF b, VecF c) { return {a.v * b.v + c.v}; }
inline float ReduceAdd(VecF a) { return a.v; }
#endif

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

}  // namespace qwenrt::cpu::gd_simd
