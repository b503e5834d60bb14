// GGUF block formats shared by ref/, cpu/ and cuda/: the block structs (byte-exact with ggml), fp16
// and bf16 conversions, row sizes and the activation quantizers (Q8_K, Q8_0) the CPU dot products
// use. Dequantization lives in ref/dequantize.cpp; the dot products in vec_dot.h. See
// docs/spec/gguf-and-quants.md §2–§3 for the layouts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "qwenrt/gguf.hpp"

namespace qwenrt {

inline constexpr int kQK_K = 256;  // elements per K-quant super-block (Q4_K, Q5_K, Q6_K, Q8_K)
inline constexpr int kQK8_0 = 32;  // elements per Q8_0 block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales + mins of Q4_K / Q5_K

// Q8_0: y[j] = fp16(d) * qs[j].
struct BlockQ8_0 {
  uint16_t d;  // fp16
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes");

// Q4_K: 8 sub-blocks of 32; y = fp16(d) * sc_s * q - fp16(dmin) * m_s with 4-bit q.
struct BlockQ4K {
  uint16_t d;                    // fp16 super-scale of the sub-block scales
  uint16_t dmin;                 // fp16 super-scale of the sub-block mins
  uint8_t scales[kKScaleBytes];  // 8 six-bit scales + 8 six-bit mins (UnpackScaleMinK)
  uint8_t qs[kQK_K / 2];         // bytes 32g..32g+31: sub-block 2g low nibbles, 2g+1 high nibbles
};
static_assert(sizeof(BlockQ4K) == 144, "Q4_K block must be 144 bytes");

// Q5_K: as Q4_K plus a fifth bit per element: bit s of qh[l] is the high bit of element 32s + l.
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5K) == 176, "Q5_K block must be 176 bytes");

// Q6_K: 16 groups of 16 with int8 scales; q = (4 low bits | 2 high bits << 4) - 32.
struct BlockQ6K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits, four per byte
  int8_t scales[kQK_K / 16];  // one per 16 elements
  uint16_t d;                 // fp16
};
static_assert(sizeof(BlockQ6K) == 210, "Q6_K block must be 210 bytes");

// --- 32-element blocks without super-blocks (dot products against Q8_0 activations) ---

inline constexpr int kQK4_0 = 32;  // elements per Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 block

// Q4_0: y[j] = fp16(d) * ((qs[j] & 15) - 8), y[j + 16] = fp16(d) * ((qs[j] >> 4) - 8).
struct BlockQ4_0 {
  uint16_t d;  // fp16
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be 18 bytes");

// Q4_1: y = fp16(d) * q + fp16(m), q in [0, 15] (nibbles as in Q4_0).
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must be 20 bytes");

// Q5_0: q = (nibble | bit j of the little-endian u32 qh << 4) - 16; y = fp16(d) * q.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j: fifth bit of element j (0..31)
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must be 22 bytes");

// Q5_1: q as Q5_0 without the -16; y = fp16(d) * q + fp16(m).
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must be 24 bytes");

// IQ4_NL: nibbles index the non-linear table kIq4Values; y = fp16(d) * kIq4Values[nibble].
struct BlockIQ4NL {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockIQ4NL) == 18, "IQ4_NL block must be 18 bytes");
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// MXFP4 (OCP microscaling): e is an E8M0 exponent, nibbles index kMxfp4Values (e2m1 values times
// 2), so y = kMxfp4Values[nibble] * E8M0ToFp32Half(e).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockMXFP4) == 17, "MXFP4 block must be 17 bytes");
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};
// 2^(e - 127) / 2 as float32, exactly (ggml_e8m0_to_fp32_half): subnormal for e < 2.
inline float E8M0ToFp32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof(f));
  return f;
}

// --- 256-element super-blocks (dot products against Q8_K activations) ---

// Q2_K: 16 groups of 16; scales[g] = 4-bit scale | 4-bit min << 4; y = fp16(d)*sc*q - fp16(dmin)*m,
// q in [0, 3]: element 128h + 32k + l (h < 2, k < 4, l < 32) is bits 2k..2k+1 of qs[32h + l].
struct BlockQ2K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;     // fp16 super-scale of the scales
  uint16_t dmin;  // fp16 super-scale of the mins
};
static_assert(sizeof(BlockQ2K) == 84, "Q2_K block must be 84 bytes");

// Q3_K: 16 groups of 16 with 6-bit scales (UnpackScalesQ3K, offset by 32); element e = 32j + l
// (j < 8, l < 32) has q = (its 2 low bits, placed as in Q2_K) - (bit j of hmask[l] ? 0 : 4), so
// q in [-4, 3]; y = fp16(d) * (sc - 32) * q.
struct BlockQ3K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3K) == 110, "Q3_K block must be 110 bytes");

// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in scales_h); each
// sub-block's 16 qs bytes hold elements l (low nibble) and l + 16 (high nibble), decoded through
// kIq4Values: y = fp16(d) * (ls - 32) * kIq4Values[nibble].
struct BlockIQ4XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4XS) == 136, "IQ4_XS block must be 136 bytes");

// The 16 six-bit scale codes (0..63, still offset by 32) of a Q3_K block's 12 scale bytes: low 4
// bits of code j are nibble (j / 8) of byte j % 8, high 2 bits are bits 2(j / 4 % 2) of byte 8 + j
// % 4.
inline void UnpackScalesQ3K(const uint8_t* b, uint8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[j % 8] >> (4 * (j / 8))) & 0x0F;
    const int hi = (b[8 + j % 4] >> (2 * (j / 4))) & 0x03;
    out[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// Scale code (0..63, offset by 32) of sub-block ib (0..7) of an IQ4_XS block.
inline int ScaleIQ4XS(const BlockIQ4XS& b, int ib) {
  return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

// Q8_K: activation format of the K-quant dot products (never stored in files); d is float32 and may
// be negative (the element of largest magnitude maps to -127).
struct BlockQ8K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // sum of each group of 16 quants
};
static_assert(sizeof(BlockQ8K) == 292, "Q8_K block must be 292 bytes");

// IEEE binary16 -> binary32 (exact, including subnormals, inf and NaN).
float Fp16ToFp32(uint16_t h);
// binary32 -> binary16, round to nearest even, overflow to +-inf, NaN stays NaN (quiet).
uint16_t Fp32ToFp16(float f);
// bf16 -> binary32 (exact: the upper 16 bits).
inline float Bf16ToFp32(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
}
// binary32 -> bf16 as llama.cpp does it: NaN -> quiet NaN, otherwise round to nearest even.
uint16_t Fp32ToBf16(float f);

// Elements per block of `type` (1 for F32/F16/BF16); 0 for types this library does not handle.
int64_t BlockElems(gguf::Type type);
// Bytes per block of `type`; 0 for types this library does not handle.
int64_t BlockBytes(gguf::Type type);
// Bytes of a row of `n` elements of `type`; -1 if the type is unsupported or n is not a multiple of
// the block size.
int64_t RowBytes(gguf::Type type, int64_t n);
// True for the weight types ref::DequantizeRow / MatMul handle (docs/quant.md lists them).
bool IsSupportedWeightType(gguf::Type type);

// Unpacks scale `s` (0..7) and min of the 12 packed bytes of a Q4_K / Q5_K block
// (gguf-and-quants.md §3.5.1).
inline void UnpackScaleMinK(const uint8_t* b, int s, uint8_t* sc, uint8_t* m) {
  if (s < 4) {
    *sc = b[s] & 63;
    *m = b[s + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((b[s + 4] & 0x0F) | ((b[s - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((b[s + 4] >> 4) | ((b[s] >> 6) << 4));
  }
}

// Round half to even for |x| <= 2^22 without a call (the magic-number trick ggml uses).
inline int NearestInt(float x) {
  const float v = x + 12582912.f;  // 1.5 * 2^23: the sum's mantissa holds round(x)
  int32_t i;
  __builtin_memcpy(&i, &v, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

// x: [n] -> n/256 Q8_K blocks at dst, exactly as llama.cpp's quantize_row_q8_K_ref
// (gguf-and-quants.md §3.8). n % 256 == 0.
void QuantizeRowQ8K(const float* x, void* dst_blocks, int64_t n);
// x: [n] -> n/32 Q8_0 blocks (llama.cpp quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d)).
// n % 32 == 0.
void QuantizeRowQ8_0(const float* x, void* dst_blocks, int64_t n);

namespace ref {
// Decodes `n` consecutive elements of a row of `type` (any IsSupportedWeightType type, or Q8_K)
// into dst: [n] float32, bit-exact with the formulas of gguf-and-quants.md §3. n % BlockElems(type)
// == 0; src holds n / BlockElems(type) blocks. Returns false (dst untouched) for any other type or
// a bad n.
bool DequantizeRow(gguf::Type type, const void* src, float* dst, int64_t n);
}  // namespace ref

}  // namespace qwenrt
