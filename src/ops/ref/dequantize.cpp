// Scalar dequantization of one row of every supported GGUF type to float32
// (docs/spec/gguf-and-quants.md §3). This is the definition the fast paths and the CUDA kernels are
// checked against; it favours plainness over speed. Float operations are ordered as llama.cpp's
// dequantize_row_* and gguf-py's dequantize (scale products first, then one multiply and at most
// one add), and this file is compiled with -ffp-contract=off (see CMakeLists.txt) so that no
// multiply-add is fused: results are bit-identical to gguf-py's.
#include <cstring>

#include "ops/quant.h"
#include "ops/quant_iq.h"

namespace qwenrt::ref {
namespace {

void DequantizeQ8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK8_0) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = d * x[b].qs[j];
  }
}

void DequantizeQ4K(const BlockQ4K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      UnpackScaleMinK(x[b].scales, s, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = (s % 2) * 4;  // even sub-blocks: low nibbles, odd: high nibbles
      for (int l = 0; l < 32; ++l) y[32 * s + l] = d1 * ((q[l] >> shift) & 0x0F) - m1;
    }
  }
}

void DequantizeQ5K(const BlockQ5K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      UnpackScaleMinK(x[b].scales, s, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = (s % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        const int q5 = ((q[l] >> shift) & 0x0F) + 16 * ((x[b].qh[l] >> s) & 1);
        y[32 * s + l] = d1 * q5 - m1;
      }
    }
  }
}

void DequantizeQ6K(const BlockQ6K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      float* out = y + 128 * half;
      for (int l = 0; l < 32; ++l) {
        // The four elements l, l+32, l+64, l+96 of this half share ql/qh bytes (gguf-and-quants.md
        // §3.7 table).
        const int q[4] = {
            ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32,
            ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32,
            ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
            ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32,
        };
        for (int k = 0; k < 4; ++k) {
          const int e = 128 * half + 32 * k + l;
          out[32 * k + l] = d * x[b].scales[e / 16] * q[k];
        }
      }
    }
  }
}

// Nibble j (< 32) of a 32-element block's 16 qs bytes: elements 0..15 are the low nibbles.
inline int Nibble(const uint8_t* qs, int j) { return (qs[j % 16] >> (4 * (j / 16))) & 0x0F; }
// Fifth bit of element j from the 4 little-endian qh bytes of Q5_0 / Q5_1.
inline int HighBit5(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

void DequantizeQ4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQK4_0; ++j) y[j] = d * static_cast<float>(Nibble(x[b].qs, j) - 8);
  }
}

void DequantizeQ4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = Fp16ToFp32(x[b].d), m = Fp16ToFp32(x[b].m);
    for (int j = 0; j < kQK4_0; ++j) y[j] = d * static_cast<float>(Nibble(x[b].qs, j)) + m;
  }
}

void DequantizeQ5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQK4_0; ++j) {
      y[j] = d * static_cast<float>((Nibble(x[b].qs, j) | (HighBit5(x[b].qh, j) << 4)) - 16);
    }
  }
}

void DequantizeQ5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = Fp16ToFp32(x[b].d), m = Fp16ToFp32(x[b].m);
    for (int j = 0; j < kQK4_0; ++j) {
      y[j] = d * static_cast<float>(Nibble(x[b].qs, j) | (HighBit5(x[b].qh, j) << 4)) + m;
    }
  }
}

void DequantizeIQ4NL(const BlockIQ4NL* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = Fp16ToFp32(x[b].d);
    for (int j = 0; j < kQK4_0; ++j) y[j] = d * static_cast<float>(kIq4Values[Nibble(x[b].qs, j)]);
  }
}

void DequantizeMXFP4(const BlockMXFP4* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK4_0) {
    const float d = E8M0ToFp32Half(x[b].e);
    for (int j = 0; j < kQK4_0; ++j)
      y[j] = d * static_cast<float>(kMxfp4Values[Nibble(x[b].qs, j)]);
  }
}

void DequantizeQ2K(const BlockQ2K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const int g = e / 16, h = e / 128, k = (e % 128) / 32, l = e % 32;
      const float dl = d * static_cast<float>(x[b].scales[g] & 0x0F);
      const float ml = dmin * static_cast<float>(x[b].scales[g] >> 4);
      const int q = (x[b].qs[32 * h + l] >> (2 * k)) & 3;
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void DequantizeQ3K(const BlockQ3K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d);
    uint8_t sc[16];
    UnpackScalesQ3K(x[b].scales, sc);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int lo = (x[b].qs[32 * h + l] >> (2 * k)) & 3;
      const int q = lo - (((x[b].hmask[l] >> (e / 32)) & 1) ? 0 : 4);
      const float dl = d * static_cast<float>(sc[e / 16] - 32);
      y[e] = dl * static_cast<float>(q);
    }
  }
}

void DequantizeIQ4XS(const BlockIQ4XS* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = Fp16ToFp32(x[b].d);
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const float dl = d * static_cast<float>(ScaleIQ4XS(x[b], ib) - 32);
      for (int j = 0; j < 32; ++j) {
        y[32 * ib + j] = dl * static_cast<float>(kIq4Values[Nibble(x[b].qs + 16 * ib, j)]);
      }
    }
  }
}

void DequantizeQ8K(const BlockQ8K* x, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) y[j] = x[b].d * x[b].qs[j];
  }
}

}  // namespace

bool DequantizeRow(gguf::Type type, const void* src, float* dst, int64_t n) {
  const int64_t elems = BlockElems(type);
  if (elems == 0 || n < 0 || n % elems != 0) return false;
  const int64_t nb = n / elems;
  switch (type) {
    case gguf::Type::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return true;
    case gguf::Type::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
      return true;
    }
    case gguf::Type::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(h[i]);
      return true;
    }
    case gguf::Type::Q8_0:
      DequantizeQ8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
      return true;
    case gguf::Type::Q4_K:
      DequantizeQ4K(static_cast<const BlockQ4K*>(src), dst, nb);
      return true;
    case gguf::Type::Q5_K:
      DequantizeQ5K(static_cast<const BlockQ5K*>(src), dst, nb);
      return true;
    case gguf::Type::Q6_K:
      DequantizeQ6K(static_cast<const BlockQ6K*>(src), dst, nb);
      return true;
    case gguf::Type::Q4_0:
      DequantizeQ4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
      return true;
    case gguf::Type::Q4_1:
      DequantizeQ4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
      return true;
    case gguf::Type::Q5_0:
      DequantizeQ5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
      return true;
    case gguf::Type::Q5_1:
      DequantizeQ5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
      return true;
    case gguf::Type::IQ4_NL:
      DequantizeIQ4NL(static_cast<const BlockIQ4NL*>(src), dst, nb);
      return true;
    case gguf::Type::MXFP4:
      DequantizeMXFP4(static_cast<const BlockMXFP4*>(src), dst, nb);
      return true;
    case gguf::Type::Q2_K:
      DequantizeQ2K(static_cast<const BlockQ2K*>(src), dst, nb);
      return true;
    case gguf::Type::Q3_K:
      DequantizeQ3K(static_cast<const BlockQ3K*>(src), dst, nb);
      return true;
    case gguf::Type::IQ4_XS:
      DequantizeIQ4XS(static_cast<const BlockIQ4XS*>(src), dst, nb);
      return true;
    case gguf::Type::Q8_K:
      DequantizeQ8K(static_cast<const BlockQ8K*>(src), dst, nb);
      return true;
    case gguf::Type::IQ2_XXS:
      DequantizeIQ2XXS(src, dst, nb);
      return true;
    case gguf::Type::IQ2_XS:
      DequantizeIQ2XS(src, dst, nb);
      return true;
    case gguf::Type::IQ2_S:
      DequantizeIQ2S(src, dst, nb);
      return true;
    case gguf::Type::IQ3_XXS:
      DequantizeIQ3XXS(src, dst, nb);
      return true;
    case gguf::Type::IQ3_S:
      DequantizeIQ3S(src, dst, nb);
      return true;
    case gguf::Type::IQ1_S:
      DequantizeIQ1S(src, dst, nb);
      return true;
    case gguf::Type::IQ1_M:
      DequantizeIQ1M(src, dst, nb);
      return true;
    default:
      return false;
  }
}

}  // namespace qwenrt::ref
