// The grid-based i-quants: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (all 256-element
// super-blocks). Each stores, per group of 8 (or 4) elements, an index into a fixed lattice of
// points (the grids of iq_grids.cpp), a sign pattern, and small per-group scales under one fp16
// scale. Block structs are byte-exact with the GGUF layout (docs/quant.md, "I-quants"); the
// dequantizers are in ref/dequantize_iq.cpp, the dots against Q8_K in ref/vec_dot_iq.cpp and
// cpu/vec_dot_iq_*.cpp.
#pragma once

#include <cstdint>

#include "ops/quant.h"

namespace qwenrt {

// IQ2_XXS (2.06 bpw): per 32 elements two u32 words: word 0 = four 8-bit indices into kIq2xxsGrid
// (8 elements each), word 1 = four 7-bit sign indices (bits 7l..7l+6, into kKSigns) and a 4-bit
// scale ls in bits 28-31; y = d * (0.5 + ls) * 0.25 * grid * sign.
struct BlockIQ2XXS {
  uint16_t d;  // fp16
  uint16_t qs[kQK_K / 8];
};
static_assert(sizeof(BlockIQ2XXS) == 66, "IQ2_XXS block must be 66 bytes");

// IQ2_XS (2.31 bpw): one u16 per 8 elements: 9-bit index into kIq2xsGrid | 7-bit sign index << 9;
// a 4-bit scale per 16 elements (scales[g/2] low nibble for 16-group g even, high for odd).
struct BlockIQ2XS {
  uint16_t d;
  uint16_t qs[kQK_K / 8];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2XS) == 74, "IQ2_XS block must be 74 bytes");

// IQ2_S (2.5 bpw): 10-bit indices into kIq2sGrid (low 8 bits in qs[k], bits 8-9 = (qh[k/4] >>
// 2(k%4)) & 3) for the 32 chunks of 8; qs[32 + k] = the chunk's 8 sign bits (bit j: element j
// negative); a 4-bit scale per 16 elements as IQ2_XS.
struct BlockIQ2S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];  // [0, 32): index low bits, [32, 64): signs
  uint8_t qh[kQK_K / 32];
  uint8_t scales[kQK_K / 32];
};
static_assert(sizeof(BlockIQ2S) == 82, "IQ2_S block must be 82 bytes");

// IQ3_XXS (3.06 bpw): qs[0, 64) = 8-bit indices into kIq3xxsGrid (4 elements each); qs[64, 96) =
// one u32 per 32 elements, laid out as IQ2_XXS's word 1; y = d * (0.5 + ls) * 0.5 * grid * sign.
struct BlockIQ3XXS {
  uint16_t d;
  uint8_t qs[3 * kQK_K / 8];
};
static_assert(sizeof(BlockIQ3XXS) == 98, "IQ3_XXS block must be 98 bytes");

// IQ3_S (3.44 bpw): 9-bit indices into kIq3sGrid (low 8 in qs[k], bit 8 = (qh[k/8] >> (k%8)) & 1),
// one per 4 elements; signs[c] = 8 sign bits of chunk c of 8; a 4-bit scale s per 32 elements
// (scales[g/2] >> 4(g%2)); y = d * (1 + 2s) * grid * sign.
struct BlockIQ3S {
  uint16_t d;
  uint8_t qs[kQK_K / 4];
  uint8_t qh[kQK_K / 32];
  uint8_t signs[kQK_K / 8];
  uint8_t scales[kQK_K / 64];
};
static_assert(sizeof(BlockIQ3S) == 110, "IQ3_S block must be 110 bytes");

// IQ1_S (1.56 bpw): 11-bit indices into kIq1sGrid (low 8 in qs[k], bits 8-10 = (qh[k/4] >> 3(k%4))
// & 7); per 32 elements qh[g] also holds a 3-bit scale s (bits 12-14) and the sign of the shift
// (bit 15); y = d * (2s + 1) * (grid + delta), delta = +-kIq1Delta. Grid values are -1, 0, 1.
struct BlockIQ1S {
  uint16_t d;
  uint8_t qs[kQK_K / 8];
  uint16_t qh[kQK_K / 32];
};
static_assert(sizeof(BlockIQ1S) == 50, "IQ1_S block must be 50 bytes");

// IQ1_M (1.75 bpw): indices as IQ1_S, the 3 high bits of chunk c in nibble c%2 of qh[c/2], whose
// bit 3 is that chunk's delta sign; a 3-bit scale per 16 elements: 16-group g uses bits
// 3(g%4)..3(g%4)+2 of u16 word g/4 of `scales`; the fp16 d is made of the top nibbles of those four
// words (bits 12-15 of word i at bits 4i..4i+3). y = d * (2s + 1) * (grid + delta).
struct BlockIQ1M {
  uint8_t qs[kQK_K / 8];
  uint8_t qh[kQK_K / 16];
  uint8_t scales[kQK_K / 32];  // read as 4 little-endian u16
};
static_assert(sizeof(BlockIQ1M) == 56, "IQ1_M block must be 56 bytes");

// The shift of the IQ1 types' grid points: 1/8, exact in binary.
inline constexpr float kIq1Delta = 0.125f;

namespace iq {
// Generated from gguf-py by scripts/gen_iq_grids.py (iq_grids.cpp).
extern const uint8_t kKSigns[128];
extern const uint64_t kIq2xxsGrid[256];
extern const uint64_t kIq2xsGrid[512];
extern const uint64_t kIq2sGrid[1024];
extern const uint32_t kIq3xxsGrid[256];
extern const uint32_t kIq3sGrid[512];
extern const uint64_t kIq1sGrid[2048];  // int8 bytes -1 / 0 / 1

// Element j (0..7) of an 8-wide grid entry, and of a 4-wide one; IQ1's as a signed byte.
inline int GridByte(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }
inline int GridByte(uint32_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }
inline int GridSByte(uint64_t entry, int j) {
  return static_cast<int8_t>((entry >> (8 * j)) & 0xFF);
}

inline uint32_t LoadU32(const void* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline uint16_t LoadU16(const void* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t LoadU64(const void* p) {
  uint64_t v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// IQ1_M's fp16 super-scale, assembled from the top nibbles of its four u16 scale words.
inline uint16_t Iq1mD(const BlockIQ1M& b) {
  uint16_t d = 0;
  for (int i = 0; i < 4; ++i)
    d |= static_cast<uint16_t>((LoadU16(b.scales + 2 * i) >> 12) << (4 * i));
  return d;
}
// IQ1_M's 3-bit scale of 16-element group h (0..15).
inline int Iq1mScale(const BlockIQ1M& b, int h) {
  return (LoadU16(b.scales + 2 * (h / 4)) >> (3 * (h % 4))) & 7;
}
}  // namespace iq

// True for the seven grid-based i-quant types above.
inline bool IsGridIQuant(gguf::Type t) {
  switch (t) {
    case gguf::Type::IQ1_S:
    case gguf::Type::IQ1_M:
    case gguf::Type::IQ2_XXS:
    case gguf::Type::IQ2_XS:
    case gguf::Type::IQ2_S:
    case gguf::Type::IQ3_XXS:
    case gguf::Type::IQ3_S:
      return true;
    default:
      return false;
  }
}

namespace ref {
// Decode nb blocks at x into y: [nb * 256], bit-identical with gguf-py's dequantize_blocks (same
// float operations in the same order: scale products first, then times the grid value and the
// sign).
void DequantizeIQ2XXS(const void* x, float* y, int64_t nb);
void DequantizeIQ2XS(const void* x, float* y, int64_t nb);
void DequantizeIQ2S(const void* x, float* y, int64_t nb);
void DequantizeIQ3XXS(const void* x, float* y, int64_t nb);
void DequantizeIQ3S(const void* x, float* y, int64_t nb);
void DequantizeIQ1S(const void* x, float* y, int64_t nb);
void DequantizeIQ1M(const void* x, float* y, int64_t nb);

// Dots of one weight row against one Q8_K activation row of n elements (n % 256 == 0): an exact
// integer sum per super-block, then one float product fp16(d) * d_act * (power of two) * sumi.
// The IQ1 shift (+-1/8 of the group scale) is folded in as 8 * grid sum + signed activation sums.
float VecDotIQ2XXS_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ2XS_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ2S_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ3XXS_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ3S_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ1S_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ1M_Q8K(const void* w, const void* a, int64_t n);
}  // namespace ref

}  // namespace qwenrt
