// fp16 / bf16 conversions, type sizes and the activation quantizers (Q8_K, Q8_0) of quant.h.
// Everything here is scalar and bit-exact with llama.cpp's reference versions
// (docs/spec/gguf-and-quants.md §3.2–§3.8).
#include "ops/quant.h"

#include <cmath>
#include <cstring>

#include "ops/quant_iq.h"

namespace qwenrt {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float32.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return BitsFloat(FloatBits(v) | sign);
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (mant << 13));  // inf / NaN (payload kept)
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));         // rebias 15 -> 127
}

uint16_t Fp32ToFp16(float f) {
  uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  u &= 0x7FFFFFFFu;
  if (u >= 0x7F800000u) {  // inf or NaN; a NaN keeps its top payload bits and is made quiet
    return static_cast<uint16_t>(sign | (u > 0x7F800000u ? 0x7E00 | ((u >> 13) & 0x3FF) : 0x7C00));
  }
  if (u >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65520 rounds to inf
  if (u < 0x38800000u) {
    // Below 2^-14: the result is subnormal (or zero). Adding 0.5f puts the unit in the last place
    // at 2^-24, so the FPU's own round-to-nearest-even does the rounding; the low bits are the
    // result.
    const float v = BitsFloat(u) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(v) - 0x3F000000u));
  }
  // Normal: rebias 127 -> 15 and round the 13 dropped mantissa bits to nearest even (a carry into
  // the exponent is the correct result, including up to 0x7BFF -> 0x7C00 which the guard above
  // excludes).
  const uint32_t odd = (u >> 13) & 1;
  u += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFF + odd;
  return static_cast<uint16_t>(sign | (u >> 13));
}

uint16_t Fp32ToBf16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

int64_t BlockElems(gguf::Type type) {
  switch (type) {
    case gguf::Type::F32:
    case gguf::Type::F16:
    case gguf::Type::BF16:
      return 1;
    case gguf::Type::Q8_0:
    case gguf::Type::Q4_0:
    case gguf::Type::Q4_1:
    case gguf::Type::Q5_0:
    case gguf::Type::Q5_1:
    case gguf::Type::IQ4_NL:
    case gguf::Type::MXFP4:
      return kQK8_0;
    case gguf::Type::Q2_K:
    case gguf::Type::Q3_K:
    case gguf::Type::IQ4_XS:
    case gguf::Type::Q4_K:
    case gguf::Type::Q5_K:
    case gguf::Type::Q6_K:
    case gguf::Type::Q8_K:
      return kQK_K;
    // Grid i-quants (quant_iq.h): 256-element super-blocks.
    case gguf::Type::IQ2_XXS:
    case gguf::Type::IQ2_XS:
    case gguf::Type::IQ2_S:
    case gguf::Type::IQ3_XXS:
    case gguf::Type::IQ3_S:
    case gguf::Type::IQ1_S:
    case gguf::Type::IQ1_M:
      return kQK_K;
    default:
      return 0;
  }
}

int64_t BlockBytes(gguf::Type type) {
  switch (type) {
    case gguf::Type::F32:
      return 4;
    case gguf::Type::F16:
    case gguf::Type::BF16:
      return 2;
    case gguf::Type::Q8_0:
      return sizeof(BlockQ8_0);
    case gguf::Type::Q4_0:
      return sizeof(BlockQ4_0);
    case gguf::Type::Q4_1:
      return sizeof(BlockQ4_1);
    case gguf::Type::Q5_0:
      return sizeof(BlockQ5_0);
    case gguf::Type::Q5_1:
      return sizeof(BlockQ5_1);
    case gguf::Type::IQ4_NL:
      return sizeof(BlockIQ4NL);
    case gguf::Type::MXFP4:
      return sizeof(BlockMXFP4);
    case gguf::Type::Q2_K:
      return sizeof(BlockQ2K);
    case gguf::Type::Q3_K:
      return sizeof(BlockQ3K);
    case gguf::Type::IQ4_XS:
      return sizeof(BlockIQ4XS);
    case gguf::Type::Q4_K:
      return sizeof(BlockQ4K);
    case gguf::Type::Q5_K:
      return sizeof(BlockQ5K);
    case gguf::Type::Q6_K:
      return sizeof(BlockQ6K);
    case gguf::Type::Q8_K:
      return sizeof(BlockQ8K);
    case gguf::Type::IQ2_XXS:
      return sizeof(BlockIQ2XXS);
    case gguf::Type::IQ2_XS:
      return sizeof(BlockIQ2XS);
    case gguf::Type::IQ2_S:
      return sizeof(BlockIQ2S);
    case gguf::Type::IQ3_XXS:
      return sizeof(BlockIQ3XXS);
    case gguf::Type::IQ3_S:
      return sizeof(BlockIQ3S);
    case gguf::Type::IQ1_S:
      return sizeof(BlockIQ1S);
    case gguf::Type::IQ1_M:
      return sizeof(BlockIQ1M);
    default:
      return 0;
  }
}

int64_t RowBytes(gguf::Type type, int64_t n) {
  const int64_t elems = BlockElems(type);
  if (elems == 0 || n < 0 || n % elems != 0) return -1;
  return n / elems * BlockBytes(type);
}

bool IsSupportedWeightType(gguf::Type type) {
  return type != gguf::Type::Q8_K && BlockElems(type) != 0;
}

void QuantizeRowQ8K(const float* x, void* dst_blocks, int64_t n) {
  auto* y = static_cast<BlockQ8K*>(dst_blocks);
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    float amax = 0, max = 0;  // largest magnitude and its signed value (first occurrence wins)
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    BlockQ8K& out = y[b];
    if (amax == 0) {
      out.d = 0;
      std::memset(out.qs, 0, sizeof(out.qs));
      std::memset(out.bsums, 0, sizeof(out.bsums));
      continue;
    }
    // The extreme value maps to -127 (llama.cpp's choice, kept so our dots equal llama.cpp's).
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = NearestInt(iscale * x[j]);
      out.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += out.qs[16 * g + j];
      out.bsums[g] = static_cast<int16_t>(sum);
    }
    out.d = 1 / iscale;
  }
}

// llama.cpp's quantize_row_q8_0_ref, made total: there `(int8_t)roundf(x * id)` is undefined
// behaviour when the product is not finite, which happens for a block whose largest magnitude is
// subnormal (d = amax/127 > 0 but 1/d overflows to inf) or non-finite (inf or NaN inputs). Such a
// block gets id = 0 (its fp16 d is 0 or non-finite anyway, so no finite dot product can use its
// quants), and quants are clamped to [-127, 127] with NaN -> 0. Finite, normal blocks take the
// unchanged path, so results stay bit-exact with llama.cpp.
void QuantizeRowQ8_0(const float* x, void* dst_blocks, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst_blocks);
  for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
    float amax = 0;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f;
    float id = d != 0 ? 1.f / d : 0.f;
    if (!std::isfinite(id)) id = 0.f;
    y[b].d = Fp32ToFp16(d);
    for (int j = 0; j < kQK8_0; ++j) {
      const float v = std::roundf(x[j] * id);
      // |v| <= 127 for finite inputs; the clamp only catches inf * 0 = NaN and inf inputs.
      y[b].qs[j] = !(v == v)     ? int8_t{0}
                   : v >= 127.f  ? int8_t{127}
                   : v <= -127.f ? int8_t{-127}
                                 : static_cast<int8_t>(v);
    }
  }
}

}  // namespace qwenrt
