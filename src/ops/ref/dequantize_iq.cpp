// Scalar dequantization of the grid-based i-quants (quant_iq.h). The float operations are those of
// gguf-py's dequantize_blocks in the same order (group scale = d * f(ls), then * grid value, then
// the sign or + delta), so the results are bit-identical with it (iq_quant_test checks stored
// vectors).
#include "ops/quant_iq.h"

namespace qwenrt::ref {

using iq::GridByte;
using iq::GridSByte;
using iq::LoadU32;

void DequantizeIQ2XXS(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ2XXS*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    for (int g = 0; g < 8; ++g, y += 32) {
      const uint32_t idx = LoadU32(x[b].qs + 4 * g), aux = LoadU32(x[b].qs + 4 * g + 2);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = iq::kIq2xxsGrid[(idx >> (8 * l)) & 0xFF];
        const uint8_t signs = iq::kKSigns[(aux >> (7 * l)) & 0x7F];
        for (int j = 0; j < 8; ++j)
          y[8 * l + j] = db * GridByte(grid, j) * ((signs >> j) & 1 ? -1.f : 1.f);
      }
    }
  }
}

void DequantizeIQ2XS(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ2XS*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    for (int g = 0; g < 16; ++g, y += 16) {  // 16-element groups, one 4-bit scale each
      const int ls = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
      for (int l = 0; l < 2; ++l) {
        const uint16_t q = x[b].qs[2 * g + l];
        const uint64_t grid = iq::kIq2xsGrid[q & 511];
        const uint8_t signs = iq::kKSigns[q >> 9];
        for (int j = 0; j < 8; ++j)
          y[8 * l + j] = db * GridByte(grid, j) * ((signs >> j) & 1 ? -1.f : 1.f);
      }
    }
  }
}

void DequantizeIQ2S(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ2S*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    const uint8_t* signs = x[b].qs + kQK_K / 8;
    for (int g = 0; g < 16; ++g, y += 16) {
      const int ls = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      const float db = d * (0.5f + static_cast<float>(ls)) * 0.25f;
      for (int l = 0; l < 2; ++l) {
        const int k = 2 * g + l;  // chunk of 8
        const int index = x[b].qs[k] | (((x[b].qh[k / 4] >> (2 * (k % 4))) & 3) << 8);
        const uint64_t grid = iq::kIq2sGrid[index];
        for (int j = 0; j < 8; ++j)
          y[8 * l + j] = db * GridByte(grid, j) * ((signs[k] >> j) & 1 ? -1.f : 1.f);
      }
    }
  }
}

void DequantizeIQ3XXS(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ3XXS*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    const uint8_t* idx = x[b].qs;
    for (int g = 0; g < 8; ++g, y += 32) {
      const uint32_t aux = LoadU32(x[b].qs + kQK_K / 4 + 4 * g);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {  // chunk of 8 = two grid points of 4
        const uint8_t signs = iq::kKSigns[(aux >> (7 * l)) & 0x7F];
        for (int h = 0; h < 2; ++h) {
          const uint32_t grid = iq::kIq3xxsGrid[idx[8 * g + 2 * l + h]];
          for (int j = 0; j < 4; ++j) {
            y[8 * l + 4 * h + j] =
                db * GridByte(grid, j) * ((signs >> (4 * h + j)) & 1 ? -1.f : 1.f);
          }
        }
      }
    }
  }
}

void DequantizeIQ3S(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ3S*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    for (int g = 0; g < 8; ++g, y += 32) {
      const int s = (x[b].scales[g / 2] >> (4 * (g % 2))) & 0x0F;
      const float db = d * static_cast<float>(1 + 2 * s);
      for (int p = 0; p < 8; ++p) {  // grid points of 4
        const int k = 8 * g + p;
        const int index = x[b].qs[k] | (((x[b].qh[k / 8] >> (k % 8)) & 1) << 8);
        const uint32_t grid = iq::kIq3sGrid[index];
        const uint8_t signs = x[b].signs[k / 2];
        for (int j = 0; j < 4; ++j) {
          y[4 * p + j] = db * GridByte(grid, j) * ((signs >> (4 * (p % 2) + j)) & 1 ? -1.f : 1.f);
        }
      }
    }
  }
}

void DequantizeIQ1S(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ1S*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(x[b].d);
    for (int g = 0; g < 8; ++g, y += 32) {
      const uint16_t qh = x[b].qh[g];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = iq::kIq1sGrid[x[b].qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j)
          y[8 * l + j] = dl * (static_cast<float>(GridSByte(grid, j)) + delta);
      }
    }
  }
}

void DequantizeIQ1M(const void* src, float* y, int64_t nb) {
  const auto* x = static_cast<const BlockIQ1M*>(src);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16ToFp32(iq::Iq1mD(x[b]));
    for (int c = 0; c < 32; ++c, y += 8) {  // chunk of 8; 16-group c / 2
      const int nib = (x[b].qh[c / 2] >> (4 * (c % 2))) & 0x0F;
      const float dl = d * static_cast<float>(2 * iq::Iq1mScale(x[b], c / 2) + 1);
      const float delta = nib & 8 ? -kIq1Delta : kIq1Delta;
      const uint64_t grid = iq::kIq1sGrid[x[b].qs[c] | ((nib & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(GridSByte(grid, j)) + delta);
    }
  }
}

}  // namespace qwenrt::ref
