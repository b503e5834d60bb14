// GGUF block formats shared by ref/, cpu/ and cuda/: the block structs (byte-exact with ggml), fp16 and
// bf16 conversions, row sizes and the activation quantizers (Q8_K, Q8_0) the CPU dot products use.
// Dequantization lives in ref/dequantize.cpp; the dot products in vec_dot.h. See
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
  uint16_t d;                     // fp16 super-scale of the sub-block scales
  uint16_t dmin;                  // fp16 super-scale of the sub-block mins
  uint8_t scales[kKScaleBytes];   // 8 six-bit scales + 8 six-bit mins (UnpackScaleMinK)
  uint8_t qs[kQK_K / 2];          // bytes 32g..32g+31: sub-block 2g low nibbles, 2g+1 high nibbles
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
  uint8_t ql[kQK_K / 2];     // low 4 bits
  uint8_t qh[kQK_K / 4];     // high 2 bits, four per byte
  int8_t scales[kQK_K / 16];  // one per 16 elements
  uint16_t d;                // fp16
};
static_assert(sizeof(BlockQ6K) == 210, "Q6_K block must be 210 bytes");

// Q8_K: activation format of the K-quant dot products (never stored in files); d is float32 and may be
// negative (the element of largest magnitude maps to -127).
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
// True for the weight types ref::DequantizeRow / MatMul handle: F32 F16 BF16 Q8_0 Q4_K Q5_K Q6_K.
bool IsSupportedWeightType(gguf::Type type);

// Unpacks scale `s` (0..7) and min of the 12 packed bytes of a Q4_K / Q5_K block (gguf-and-quants.md §3.5.1).
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

// x: [n] -> n/256 Q8_K blocks at dst, exactly as llama.cpp's quantize_row_q8_K_ref (gguf-and-quants.md §3.8).
// n % 256 == 0.
void QuantizeRowQ8K(const float* x, void* dst_blocks, int64_t n);
// x: [n] -> n/32 Q8_0 blocks (llama.cpp quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d)).
// n % 32 == 0.
void QuantizeRowQ8_0(const float* x, void* dst_blocks, int64_t n);

namespace ref {
// Decodes `n` consecutive elements of a row of `type` (F32 F16 BF16 Q8_0 Q4_K Q5_K Q6_K Q8_K) into
// dst: [n] float32, bit-exact with the formulas of gguf-and-quants.md §3. n % BlockElems(type) == 0; src holds
// n / BlockElems(type) blocks. Returns false (dst untouched) for any other type or a bad n.
bool DequantizeRow(gguf::Type type, const void* src, float* dst, int64_t n);
}  // namespace ref

}  // namespace qwenrt
