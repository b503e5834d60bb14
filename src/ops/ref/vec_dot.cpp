// Scalar dot products of vec_dot.h: integer inner sums (exact), then one float combination per
// block in block order. The SIMD kernels in cpu/ compute the same integers, so they differ from
// these only by float rounding in the combination step.
#include "ops/vec_dot.h"

namespace qwenrt::ref {

float VecDotQ4K_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ4K*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      UnpackScaleMinK(x[b].scales, s, &sc, &m);
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = (s % 2) * 4;
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) isum += ((q[l] >> shift) & 0x0F) * y[b].qs[32 * s + l];
      sumi += sc * isum;
      summ += m * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    }
    const float dd = Fp16ToFp32(x[b].d) * y[b].d, dm = Fp16ToFp32(x[b].dmin) * y[b].d;
    sum += dd * static_cast<float>(sumi) - dm * static_cast<float>(summ);
  }
  return sum;
}

float VecDotQ5K_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ5K*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      UnpackScaleMinK(x[b].scales, s, &sc, &m);
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = (s % 2) * 4;
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) {
        const int q5 = ((q[l] >> shift) & 0x0F) + 16 * ((x[b].qh[l] >> s) & 1);
        isum += q5 * y[b].qs[32 * s + l];
      }
      sumi += sc * isum;
      summ += m * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    }
    const float dd = Fp16ToFp32(x[b].d) * y[b].d, dm = Fp16ToFp32(x[b].dmin) * y[b].d;
    sum += dd * static_cast<float>(sumi) - dm * static_cast<float>(summ);
  }
  return sum;
}

float VecDotQ6K_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ6K*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t isum = 0;
      for (int j = 0; j < 16; ++j) {
        const int e = 16 * g + j;  // element in the block
        const int half = e / 128, k = (e % 128) / 32, l = e % 32;
        const uint8_t* ql = x[b].ql + 64 * half;
        const uint8_t* qh = x[b].qh + 32 * half;
        const int lo = (k % 2 == 0 ? ql[l] : ql[l + 32]) >> (4 * (k / 2)) & 0x0F;
        const int hi = (qh[l] >> (2 * k)) & 3;
        isum += ((lo | (hi << 4)) - 32) * y[b].qs[e];
      }
      sumi += x[b].scales[g] * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotQ8_0_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += x[b].qs[j] * y[b].qs[j];
    sum += Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d) * static_cast<float>(isum);
  }
  return sum;
}

float VecDotF32(const float* w, const float* a, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * a[i];
  return sum;
}

float VecDotF16_F32(const uint16_t* w, const float* a, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += Fp16ToFp32(w[i]) * a[i];
  return sum;
}

float VecDotBF16_F32(const uint16_t* w, const float* a, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += Bf16ToFp32(w[i]) * a[i];
  return sum;
}

}  // namespace qwenrt::ref
