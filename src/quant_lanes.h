// Per-lane row dot products over GGUF weight blocks, as the CUDA mat-vec kernel splits them: lane
// l (0..31) of a warp owns fixed positions inside every block, and the warp's sum of the 32 lane
// results is the row's dot product. Plain C++ usable from host code too (QWENRT_HD is
// `__host__ __device__` under nvcc), so tests can emulate a warp on the CPU and check the lane
// mapping against ref::MatMul without a GPU. No CUDA headers.
//
// Lane l owns, per block:
//   F32/F16/BF16: columns l, l+32, l+64, ...
//   Q8_0 (34 B: d fp16, qs[32]):              element l
//   Q4_K (144 B: d, dmin, scales[12], qs[128]) / Q5_K (176 B: d, dmin, scales[12], qh[32], qs[128]):
//                                             element 32s + l of sub-block s = 0..7 (qs byte 32g + l
//                                             holds s = 2g in its low, s = 2g+1 in its high nibble)
//   Q6_K (210 B: ql[128], qh[64], scales[16], d): elements 128n + 32m + l, n = 0..1, m = 0..3
// Values decode exactly as ref::DequantizeRow: Q8_0 d*q; Q4_K/Q5_K (d*sc)*q - (dmin*m); Q6_K
// (d*sc)*q; each product with x in f32.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define QWENRT_HD __host__ __device__ __forceinline__
#else
#define QWENRT_HD inline
#endif

namespace qwenrt::lanes {

inline constexpr int kLanes = 32;

QWENRT_HD float BitsToFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

// Little-endian u16 from a byte pointer (GGUF blocks are only 2-byte aligned, F16 rows may be odd).
QWENRT_HD uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (static_cast<uint16_t>(p[1]) << 8));
}

// IEEE binary16 -> binary32, exact (subnormals, inf, NaN).
QWENRT_HD float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

QWENRT_HD float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

QWENRT_HD float DotF32(const uint8_t* row, const float* x, int64_t cols, int lane) {
  const float* w = reinterpret_cast<const float*>(row);  // F32 rows are 4-byte aligned
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kLanes) acc += w[c] * x[c];
  return acc;
}

QWENRT_HD float DotF16(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kLanes) acc += HalfToFloat(LoadU16(row + 2 * c)) * x[c];
  return acc;
}

QWENRT_HD float DotBF16(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  for (int64_t c = lane; c < cols; c += kLanes) acc += Bf16ToFloat(LoadU16(row + 2 * c)) * x[c];
  return acc;
}

QWENRT_HD float DotQ8_0(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * 34;
    const float d = HalfToFloat(LoadU16(blk));
    const float q = static_cast<float>(static_cast<int8_t>(blk[2 + lane]));
    acc += (d * q) * x[b * 32 + lane];
  }
  return acc;
}

// Scale and min of sub-block s from the 12 packed bytes (spec §3.5.1).
QWENRT_HD void ScaleMinK(const uint8_t* b, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = b[s] & 63;
    *m = b[s + 4] & 63;
  } else {
    *sc = (b[s + 4] & 0x0F) | ((b[s - 4] >> 6) << 4);
    *m = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

template <bool kFiveBit>
QWENRT_HD float DotQ45K(const uint8_t* row, const float* x, int64_t cols, int lane) {
  constexpr int kBlockBytes = kFiveBit ? 176 : 144;
  constexpr int kQsOffset = kFiveBit ? 48 : 16;
  float acc = 0.0f;
  const int64_t nb = cols / 256;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * kBlockBytes;
    const float d = HalfToFloat(LoadU16(blk)), dmin = HalfToFloat(LoadU16(blk + 2));
    const uint8_t* scales = blk + 4;
    const uint8_t* qs = blk + kQsOffset;
    const int qh = kFiveBit ? blk[16 + lane] : 0;
    const float* xb = x + b * 256 + lane;
    for (int g = 0; g < 4; ++g) {
      const int byte = qs[32 * g + lane];
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * g + half;
        int sc, m;
        ScaleMinK(scales, s, &sc, &m);
        int q = half == 0 ? (byte & 0x0F) : (byte >> 4);
        if (kFiveBit) q += ((qh >> s) & 1) << 4;
        const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
        acc += (d1 * static_cast<float>(q) - m1) * xb[32 * s];
      }
    }
  }
  return acc;
}

QWENRT_HD float DotQ6K(const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc = 0.0f;
  const int64_t nb = cols / 256;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * 210;
    const float d = HalfToFloat(LoadU16(blk + 208));
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    const float* xb = x + b * 256;
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = blk + 64 * n;
      const int lo0 = ql[lane], lo1 = ql[lane + 32];
      const int hi = blk[128 + 32 * n + lane];
      const int q[4] = {(lo0 & 0x0F) | (((hi >> 0) & 3) << 4), (lo1 & 0x0F) | (((hi >> 2) & 3) << 4),
                        (lo0 >> 4) | (((hi >> 4) & 3) << 4), (lo1 >> 4) | (((hi >> 6) & 3) << 4)};
      for (int m = 0; m < 4; ++m) {
        const int e = 128 * n + 32 * m + lane;
        acc += (d * static_cast<float>(scales[e / 16]) * static_cast<float>(q[m] - 32)) * xb[e];
      }
    }
  }
  return acc;
}

// Lane `lane`'s share of the dot product of one row of type `type_id` (gguf::Type value) with x;
// 0 for types without a lane decoder.
QWENRT_HD float LaneDot(uint32_t type_id, const uint8_t* row, const float* x, int64_t cols, int lane) {
  switch (type_id) {
    case 0: return DotF32(row, x, cols, lane);
    case 1: return DotF16(row, x, cols, lane);
    case 30: return DotBF16(row, x, cols, lane);
    case 8: return DotQ8_0(row, x, cols, lane);
    case 12: return DotQ45K<false>(row, x, cols, lane);
    case 13: return DotQ45K<true>(row, x, cols, lane);
    case 14: return DotQ6K(row, x, cols, lane);
    default: return 0.0f;
  }
}

}  // namespace qwenrt::lanes
