// Row-interleaved ("packed") copies of K-quant weight matrices for the CPU matmul, made once at
// model load (Model::Build, ModelLoadOptions::repack_weights). A packed matrix is groups of
// kPackRows rows; group g holds, per super-block b, one PackedQ4K / PackedQ6K record with the
// kPackRows rows' data side by side, so that one 64-byte load carries 4 consecutive elements of all
// 16 rows: exactly the operand of one 512-bit vpdpbusd, whose 16 int32 lanes are then the 16 rows.
// The activation operand is 4 bytes of one Q8_K token broadcast to every lane, so a tile of 16 rows
// x several tokens keeps the weights in registers across tokens and the tokens in cache across
// rows, and ends in 16 outputs per token with no horizontal sums. Rows past `rows` in the last
// group are zero (d = 0: they add 0).
//
// Per (row, token), every kernel variant computes per super-block the same exact integer sums as
// ref::VecDot* and combines them in one fixed float order that does not depend on how many tokens a
// call takes: so a token's outputs are bit-identical whether it is decoded alone or prefilled among
// others (the split-invariance contract), and within float rounding of ref::VecDot*.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/quant.h"
#include "ops/vec_dot.h"

// The packed kernels: cpu/packed_dot_x86.cpp with AVX-512 F/BW/VL + VNNI (QWENRT_PACKED_X86),
// cpu/packed_dot_avx2.cpp with AVX2 (QWENRT_X86_DOT of vec_dot.h), otherwise
// cpu/packed_dot_scalar.cpp.
#if QWENRT_X86_DOT && defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define QWENRT_PACKED_X86 1
#else
#define QWENRT_PACKED_X86 0
#endif

namespace qwenrt {

inline constexpr int kPackRows = 16;

// Q4_K, 16 rows of one super-block (2368 bytes for 16 x 144 of the file).
struct PackedQ4K {
  uint16_t d[kPackRows];         // fp16 per row
  uint16_t dmin[kPackRows];      // fp16 per row
  uint8_t scales[8][kPackRows];  // sub-block scale s of row r
  uint8_t mins[8][kPackRows];    // sub-block min s of row r
  // qs[s][j][4r + i]: low nibble = q(r, 32s + 4j + i), high nibble = q(r, 32s + 16 + 4j + i).
  uint8_t qs[8][4][4 * kPackRows];
};
static_assert(sizeof(PackedQ4K) == 2368, "PackedQ4K layout");

// Q5_K, 16 rows of one super-block (2880 bytes, as 16 x 176 of the file): Q4_K's record holding the
// four low bits of each value, and the fifth bits: bit k of qh[s][4r + i] is bit 4 of
// q(r, 32s + 16(k / 4) + 4(k % 4) + i), the element of Q4_K's quad k of sub-block s.
struct PackedQ5K {
  PackedQ4K low;
  uint8_t qh[8][4 * kPackRows];
};
static_assert(sizeof(PackedQ5K) == 2880, "PackedQ5K layout");

// Q6_K, 16 rows of one super-block (3360 bytes, as 16 x 210 of the file). u = q6 + 32 in [0, 63].
struct PackedQ6K {
  uint16_t d[kPackRows];           // fp16 per row
  int8_t scales[8][kPackRows][2];  // [p][r] = (scale 2p, scale 2p + 1) of row r
  // For group g (16 elements): ql[g][0][4r + i] = low nibbles of u(16g + i) | u(16g + 8 + i) << 4,
  // ql[g][1] likewise for 16g + 4 + i and 16g + 12 + i; qh[g][4r + i] = the high 2 bits of
  // u(16g + i), u(16g + 4 + i), u(16g + 8 + i), u(16g + 12 + i) at bits 0-1, 2-3, 4-5, 6-7.
  struct Group {
    uint8_t ql[2][4 * kPackRows];
    uint8_t qh[4 * kPackRows];
  } groups[16];
};
static_assert(sizeof(PackedQ6K) == 3360, "PackedQ6K layout");

// Q4_0 / IQ4_NL, 16 rows of 256 elements = 8 blocks of 32 (2304 bytes, as 16 x 8 x 18 of the file).
// qs[s][j][4r + i] is byte 4j + i of block s of row r, moved as it is: its low nibble is element
// 32s + 4j + i, its high nibble element 32s + 16 + 4j + i (the nibble order of PackedQ4K).
struct PackedQ4_0 {
  uint16_t d[8][kPackRows];  // fp16 scale of block s of row r
  uint8_t qs[8][4][4 * kPackRows];
};
static_assert(sizeof(PackedQ4_0) == 2304, "PackedQ4_0 layout");

// MXFP4: PackedQ4_0's layout with each block's E8M0 exponent in place of the fp16 scale (2176
// bytes, as 16 x 8 x 17 of the file).
struct PackedMXFP4 {
  uint8_t e[8][kPackRows];
  uint8_t qs[8][4][4 * kPackRows];
};
static_assert(sizeof(PackedMXFP4) == 2176, "PackedMXFP4 layout");

// Q4_1 / Q5_0 / Q5_1: PackedQ4_0's layout plus each block's fp16 min (Q4_1, Q5_1) and fifth bits
// (Q5_0, Q5_1): bit k of qh[s][4r + i] is bit 4 of element 32s + 4k + i (k = 0..7). The same size
// as the file's blocks (2560 / 2816 / 3072 bytes for 16 x 8 x 20 / 22 / 24).
struct PackedQ4_1 {
  uint16_t d[8][kPackRows];
  uint16_t m[8][kPackRows];
  uint8_t qs[8][4][4 * kPackRows];
};
struct PackedQ5_0 {
  uint16_t d[8][kPackRows];
  uint8_t qs[8][4][4 * kPackRows];
  uint8_t qh[8][4 * kPackRows];
};
struct PackedQ5_1 {
  uint16_t d[8][kPackRows];
  uint16_t m[8][kPackRows];
  uint8_t qs[8][4][4 * kPackRows];
  uint8_t qh[8][4 * kPackRows];
};
static_assert(sizeof(PackedQ4_1) == 2560 && sizeof(PackedQ5_0) == 2816 &&
                  sizeof(PackedQ5_1) == 3072,
              "PackedQ4_1 / Q5_0 / Q5_1 layouts");

// Q8_0, 16 rows of 256 elements = 8 blocks of 32 (4352 bytes, as 16 x 8 x 34 of the file):
// qs[s][j][4r + i] = q(r, 32s + 4j + i) + 128 as u8 (the unsigned operand of vpdpbusd).
struct PackedQ8_0 {
  uint16_t d[8][kPackRows];  // fp16 scale of block s of row r
  uint8_t qs[8][8][4 * kPackRows];
};
static_assert(sizeof(PackedQ8_0) == 4352, "PackedQ8_0 layout");

// IQ4_XS, 16 rows of one super-block (2208 bytes for 16 x 136 of the file). qs as PackedQ4_0's
// (byte 4j + i of sub-block s of row r: low nibble element 32s + 4j + i, high nibble 32s + 16 + 4j
// + i).
struct PackedIQ4XS {
  uint16_t d[kPackRows];        // fp16 per row
  int8_t scales[8][kPackRows];  // ScaleIQ4XS(s) - 32 of row r, in [-32, 31]
  uint8_t qs[8][4][4 * kPackRows];
};
static_assert(sizeof(PackedIQ4XS) == 2208, "PackedIQ4XS layout");

// Q2_K, 16 rows of one super-block (1344 bytes, as 16 x 84 of the file): q in [0, 3] as Q3_K's low
// bit planes (bits 2(k % 4) .. 2(k % 4) + 1 of lo[p][k / 4][4r + i] = q of element 32p + 4k + i)
// and the file's scale | min << 4 byte of group g (16 elements) of row r in scales[g][r].
struct PackedQ2K {
  uint16_t d[kPackRows];     // fp16 per row
  uint16_t dmin[kPackRows];  // fp16 per row
  uint8_t scales[16][kPackRows];
  uint8_t lo[8][2][4 * kPackRows];
};
static_assert(sizeof(PackedQ2K) == 1344, "PackedQ2K layout");

// Q3_K, 16 rows of one super-block (1824 bytes for 16 x 110 of the file), u = q3 + 4 in [0, 7] as
// bit planes. Pair p holds elements 32p .. 32p + 31; quad k (0..7) of it is elements 32p + 4k + i:
// bits 2(k % 4) .. 2(k % 4) + 1 of lo[k / 4][4r + i] are u's low bits, bit k of hi[4r + i] is u's
// bit 2. Group g = 2p + k / 4 (16 elements) has scale scales[g][r].
struct PackedQ3K {
  uint16_t d[kPackRows];         // fp16 per row
  int8_t scales[16][kPackRows];  // 6-bit scale - 32 of group g of row r, in [-32, 31]
  struct Pair {
    uint8_t lo[2][4 * kPackRows];
    uint8_t hi[4 * kPackRows];
  } pairs[8];
};
static_assert(sizeof(PackedQ3K) == 1824, "PackedQ3K layout");

// A 16-entry int8 value table shifted to u8 (values[i] + 128): the unsigned operand of vpdpbusd;
// the offset comes back out through the activation sums. IQ4_NL / IQ4_XS's (in [1, 241]) and
// MXFP4's.
template <const int8_t (&kValues)[16]>
struct ValuesU8 {
  uint8_t v[16];
  constexpr ValuesU8() : v() {
    for (int i = 0; i < 16; ++i) v[i] = static_cast<uint8_t>(kValues[i] + 128);
  }
};
inline constexpr ValuesU8<kIq4Values> kIq4ValuesU8;
inline constexpr ValuesU8<kMxfp4Values> kMxfp4ValuesU8;

// True for the types that have a packed layout (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL, MXFP4, Q8_0).
bool HasPackedLayout(gguf::Type type);

// Bytes of the packed copy of a rows x cols matrix of `type` (0 if HasPackedLayout(type) is false
// or cols is not a multiple of 256: narrower Q4_0 matrices keep the file layout).
size_t PackedBytes(gguf::Type type, int64_t cols, int64_t rows);

// Writes groups [g0, g1) of the packed copy of a matrix of `rows` rows (row r at src + r *
// row_bytes, cols elements) to their place in dst (PackedBytes(type, cols, rows) bytes in all):
// split the groups to pack in parallel. Precondition: HasPackedLayout(type), cols % 256 == 0.
void PackGroups(gguf::Type type, const uint8_t* src, size_t row_bytes, int64_t cols, int64_t rows,
                int64_t g0, int64_t g1, uint8_t* dst);

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// Packed kernel: for t < ntok (1 <= ntok <= kMaxDotTokens of vec_dot.h) and r < nrows (<= 16):
//   out[t * out_stride + r] = dot(row r of the 16-row group at `w`, activation row a + t *
//   a_stride)
// over n elements (n / 256 records at w). Activations: Q8_K rows for the K-quants, Q8_0 rows for
// the 32-element block types (the formats their file-layout kernels take). `stream`: the group
// comes from memory, not from cache (the first token tile of a matmul): the SIMD tiles then
// prefetch ahead (the result does not depend on it).
using PackedKernel = void (*)(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok,
                              int64_t n, float* out, int64_t out_stride, int nrows, bool stream);
// The Q8_K activation rows of a packed kernel call's ntok tokens (1 <= ntok <= kMaxDotTokens).
struct PackedTokens {
  const BlockQ8K* y[kMaxDotTokens];
  PackedTokens(const uint8_t* a, size_t a_stride, int ntok) {
    for (int t = 0; t < ntok && t < kMaxDotTokens; ++t)
      y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  }
};
// The portable Q8_K packed kernels' loop: out[t * out_stride + r] = the sum, over super-blocks b in
// order, of block(t, r, b) -- the type's exact integer sums of (row r, token t) in super-block b,
// combined into a float as its ref::VecDot does.
template <typename F>
void PortablePackedDot(int ntok, int nrows, int64_t nb, float* out, int64_t out_stride, F&& block) {
  for (int t = 0; t < ntok; ++t) {
    for (int r = 0; r < nrows; ++r) {
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) acc += block(t, r, b);
      out[t * out_stride + r] = acc;
    }
  }
}
void DotPackedQ4K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedQ6K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream);
// Q5_K against Q8_K rows: SIMD with AVX-512 VNNI (cpu/packed_dot_x86.cpp, Q4_K's tile plus the
// fifth bits), else portable (cpu/packed_dot_q5k.cpp).
void DotPackedQ5K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream);
// Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 / Q8_0 against Q8_0 rows (cpu/packed_dot_legacy.cpp):
// SIMD with AVX-512 VNNI, else portable.
void DotPackedQ4_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedQ4_1_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedQ5_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedQ5_1_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedQ8_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedIQ4NL_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                         float* out, int64_t out_stride, int nrows, bool stream);
void DotPackedMXFP4_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                         float* out, int64_t out_stride, int nrows, bool stream);
// Q2_K against Q8_K rows (cpu/packed_dot_q2k.cpp): SIMD with AVX-512 VNNI, else portable.
void DotPackedQ2K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream);
// Q3_K against Q8_K rows (cpu/packed_dot_q3k.cpp): SIMD with AVX-512 VNNI, else portable.
void DotPackedQ3K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream);
// IQ4_XS against Q8_K rows (cpu/packed_dot_iq4xs.cpp): SIMD with AVX-512 VNNI, else portable.
void DotPackedIQ4XS_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream);
// True when the packed kernels above are the SIMD ones (AVX-512 VNNI, AVX2); with only the portable
// versions, packing would make the matmul slower, and the loader leaves the weights as they are.
bool PackedKernelsFast();
// The same per type: whether this level's packed kernel of `type` beats its file-layout kernel (the
// loader packs only those). Q4_K / Q6_K: PackedKernelsFast(); the others with AVX-512 VNNI.
bool PackedKernelFast(gguf::Type type);
// The packed kernel of `type` (null when HasPackedLayout(type) is false).
PackedKernel PackedKernelOf(gguf::Type type);
// "avx512vnni", "avx2" or "scalar".
const char* PackedKernelIsa();
}  // namespace QWENRT_CPU_NAMESPACE
