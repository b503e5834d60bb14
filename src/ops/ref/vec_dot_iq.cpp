// Scalar dots of the grid-based i-quants against Q8_K activations (quant_iq.h). Every group's scale
// factor is an odd integer times a power of two (IQ2: (2ls+1)/8, IQ3_XXS: (2ls+1)/4, IQ3_S: 2s+1,
// IQ1: (2s+1)(grid + -1/8) = (2s+1)(8 grid -+ 1)/8), so the whole super-block is one exact integer
// sum and one float product: the SIMD kernels compute the same integers and differ only by float
// summation order across blocks.
#include "ops/quant_iq.h"

namespace qwenrt::ref {
namespace {

using iq::GridByte;
using iq::GridSByte;
using iq::LoadU32;

// sum_j grid_j * (sign_j ? -1 : 1) * q_j over one chunk of 8.
template <typename Entry>
int32_t SignedGridDot8(Entry grid, uint8_t signs, const int8_t* q) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) {
    const int v = GridByte(grid, j) * q[j];
    s += (signs >> j) & 1 ? -v : v;
  }
  return s;
}

// The same for two 4-element grid points making one chunk of 8 (the IQ3 types).
int32_t SignedGridDot4x2(uint32_t g0, uint32_t g1, uint8_t signs, const int8_t* q) {
  const uint64_t both = g0 | (static_cast<uint64_t>(g1) << 32);
  return SignedGridDot8(both, signs, q);
}

}  // namespace

float VecDotIQ2XXS_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ2XXS*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int g = 0; g < 8; ++g) {
      const uint32_t idx = LoadU32(x[b].qs + 4 * g), aux = LoadU32(x[b].qs + 4 * g + 2);
      int32_t isum = 0;
      for (int l = 0; l < 4; ++l) {
        isum += SignedGridDot8(iq::kIq2xxsGrid[(idx >> (8 * l)) & 0xFF],
                               iq::kKSigns[(aux >> (7 * l)) & 0x7F], y[b].qs + 32 * g + 8 * l);
      }
      sumi += static_cast<int32_t>(2 * (aux >> 28) + 1) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * 0.125f * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ2XS_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ2XS*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      const int ls = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      int32_t isum = 0;
      for (int l = 0; l < 2; ++l) {
        const uint16_t q = x[b].qs[2 * g + l];
        isum +=
            SignedGridDot8(iq::kIq2xsGrid[q & 511], iq::kKSigns[q >> 9], y[b].qs + 16 * g + 8 * l);
      }
      sumi += (2 * ls + 1) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * 0.125f * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ2S_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ2S*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8_t* signs = x[b].qs + kQK_K / 8;
    int32_t sumi = 0;
    for (int g = 0; g < 16; ++g) {
      const int ls = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      int32_t isum = 0;
      for (int l = 0; l < 2; ++l) {
        const int k = 2 * g + l;
        const int index = x[b].qs[k] | (((x[b].qh[k / 4] >> (2 * (k % 4))) & 3) << 8);
        isum += SignedGridDot8(iq::kIq2sGrid[index], signs[k], y[b].qs + 8 * k);
      }
      sumi += (2 * ls + 1) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * 0.125f * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ3XXS_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ3XXS*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8_t* idx = x[b].qs;
    int32_t sumi = 0;
    for (int g = 0; g < 8; ++g) {
      const uint32_t aux = LoadU32(x[b].qs + kQK_K / 4 + 4 * g);
      int32_t isum = 0;
      for (int l = 0; l < 4; ++l) {
        isum += SignedGridDot4x2(iq::kIq3xxsGrid[idx[8 * g + 2 * l]],
                                 iq::kIq3xxsGrid[idx[8 * g + 2 * l + 1]],
                                 iq::kKSigns[(aux >> (7 * l)) & 0x7F], y[b].qs + 32 * g + 8 * l);
      }
      sumi += static_cast<int32_t>(2 * (aux >> 28) + 1) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * 0.25f * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ3S_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ3S*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int g = 0; g < 8; ++g) {
      const int s = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      int32_t isum = 0;
      for (int c = 4 * g; c < 4 * g + 4; ++c) {  // chunk of 8 = grid points 2c, 2c + 1
        uint32_t grid[2];
        for (int h = 0; h < 2; ++h) {
          const int k = 2 * c + h;
          grid[h] = iq::kIq3sGrid[x[b].qs[k] | (((x[b].qh[k / 8] >> (k % 8)) & 1) << 8)];
        }
        isum += SignedGridDot4x2(grid[0], grid[1], x[b].signs[c], y[b].qs + 8 * c);
      }
      sumi += (2 * s + 1) * isum;
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ1S_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ1S*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;  // 8 * the block's dot in units of d * dy / 8
    for (int g = 0; g < 8; ++g) {
      const uint16_t qh = x[b].qh[g];
      int32_t isum = 0;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = iq::kIq1sGrid[x[b].qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
        const int8_t* q = y[b].qs + 32 * g + 8 * l;
        for (int j = 0; j < 8; ++j) isum += GridSByte(grid, j) * q[j];
      }
      const int32_t qsum = y[b].bsums[2 * g] + y[b].bsums[2 * g + 1];
      sumi += (2 * ((qh >> 12) & 7) + 1) * (8 * isum + (qh & 0x8000 ? -qsum : qsum));
    }
    sum += Fp16ToFp32(x[b].d) * y[b].d * 0.125f * static_cast<float>(sumi);
  }
  return sum;
}

float VecDotIQ1M_Q8K(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ1M*>(w);
  const auto* y = static_cast<const BlockQ8K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int c = 0; c < 32; ++c) {
      const int nib = (x[b].qh[c / 2] >> (4 * (c % 2))) & 0x0F;
      const uint64_t grid = iq::kIq1sGrid[x[b].qs[c] | ((nib & 7) << 8)];
      const int8_t* q = y[b].qs + 8 * c;
      int32_t isum = 0, qsum = 0;
      for (int j = 0; j < 8; ++j) {
        isum += GridSByte(grid, j) * q[j];
        qsum += q[j];
      }
      sumi += (2 * iq::Iq1mScale(x[b], c / 2) + 1) * (8 * isum + (nib & 8 ? -qsum : qsum));
    }
    sum += Fp16ToFp32(iq::Iq1mD(x[b])) * y[b].d * 0.125f * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace qwenrt::ref
