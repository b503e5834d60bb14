// Scalar dot products of Q2_K, Q3_K and IQ4_XS super-blocks against Q8_K activations (vec_dot.h):
// exact integer sums per super-block, then one float combination per super-block in block order.
#include "ops/vec_dot.h"

namespace qwenrt::ref {

float VecDotQ2K_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ2K*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t isum = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * g + i, h = e / 128, k = (e % 128) / 32, l = e % 32;
        isum += ((x[b].qs[32 * h + l] >> (2 * k)) & 3) * y[b].qs[e];
      }
      sumi += (x[b].scales[g] & 0x0F) * isum;
      summ += (x[b].scales[g] >> 4) * y[b].bsums[g];
    }
    const float dd = Fp16ToFp32(x[b].d) * y[b].d, dm = Fp16ToFp32(x[b].dmin) * y[b].d;
    sum += dd * static_cast<float>(sumi) - dm * static_cast<float>(summ);
  }
  return sum;
}

float VecDotQ3K_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ3K*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    uint8_t sc[16];
    UnpackScalesQ3K(x[b].scales, sc);
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t isum = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * g + i, h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int q =
            ((x[b].qs[32 * h + l] >> (2 * k)) & 3) - (((x[b].hmask[l] >> (e / 32)) & 1) ? 0 : 4);
        isum += q * y[b].qs[e];
      }
      sumi += (sc[g] - 32) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ4XS_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ4XS*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = x[b].qs + 16 * ib;
      int32_t isum = 0;
      for (int j = 0; j < 16; ++j) {
        isum += kIq4Values[qs[j] & 0x0F] * y[b].qs[32 * ib + j];
        isum += kIq4Values[qs[j] >> 4] * y[b].qs[32 * ib + j + 16];
      }
      sumi += (ScaleIQ4XS(x[b], ib) - 32) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace qwenrt::ref
