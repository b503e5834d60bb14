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
//     qs bytes 32g + 4(l%8) .. +3 with g = l/8 (one aligned 32-bit load): elements i .. i+3,
//     i = 4(l%8), of sub-blocks 2g (low nibbles) and 2g+1 (high nibbles); Q5_K's high bits come
//     from qh bytes i .. i+3 (bits 2g, 2g+1). 8 elements, 2 scale/min pairs per lane.
//   Q6_K (210 B: ql[128], qh[64], scales[16], d): with n = l/16, j = 2(l%16): elements
//     128n + 32m + j and + j+1 for m = 0..3 (16-bit loads: Q6_K blocks are only 2-byte aligned).
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

// Pinned-rounding arithmetic: on the device these are the _rn intrinsics, which nvcc never fuses or
// reorders, so every instantiation of the kernels below (any number of tokens per warp) computes each
// (row, token) sum with the same roundings in the same order: a prefill equals token-by-token decode
// bit for bit. On the host (the CPU emulation in tests) plain operations.
#ifdef __CUDA_ARCH__
QWENRT_HD float Fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
QWENRT_HD float Mul(float a, float b) { return __fmul_rn(a, b); }
QWENRT_HD float Sub(float a, float b) { return __fsub_rn(a, b); }
#else
QWENRT_HD float Fma(float a, float b, float c) { return a * b + c; }
QWENRT_HD float Mul(float a, float b) { return a * b; }
QWENRT_HD float Sub(float a, float b) { return a - b; }
#endif

// Each Dot* adds lane `lane`'s share of row . x[t] to acc[t] for the NT tokens x[t] = x + t * ldx
// (t < NT): every weight value is decoded once and used for all NT tokens. Only the blocks b0,
// b0 + bstep, ... of the row are visited (a block: 32 columns for F32/F16/BF16, the quant block
// otherwise), so several warps can share one row.

template <int NT>
QWENRT_HD void DotF32(const uint8_t* row, const float* x, int64_t ldx, int64_t cols, int lane,
                      int64_t b0, int64_t bstep, float (&acc)[NT]) {
  const float* w = reinterpret_cast<const float*>(row);  // F32 rows are 4-byte aligned
  for (int64_t c = lane + kLanes * b0; c < cols; c += kLanes * bstep) {
    const float wv = w[c];
    for (int t = 0; t < NT; ++t) acc[t] = Fma(wv, x[t * ldx + c], acc[t]);
  }
}

template <int NT, bool kBf16>
QWENRT_HD void DotHalf(const uint8_t* row, const float* x, int64_t ldx, int64_t cols, int lane,
                       int64_t b0, int64_t bstep, float (&acc)[NT]) {
  for (int64_t c = lane + kLanes * b0; c < cols; c += kLanes * bstep) {
    const uint16_t h = LoadU16(row + 2 * c);
    const float wv = kBf16 ? Bf16ToFloat(h) : HalfToFloat(h);
    for (int t = 0; t < NT; ++t) acc[t] = Fma(wv, x[t * ldx + c], acc[t]);
  }
}

template <int NT>
QWENRT_HD void DotQ8_0(const uint8_t* row, const float* x, int64_t ldx, int64_t cols, int lane,
                       int64_t b0, int64_t bstep, float (&acc)[NT]) {
  const int64_t nb = cols / 32;
  for (int64_t b = b0; b < nb; b += bstep) {
    const uint8_t* blk = row + b * 34;
    const float d = HalfToFloat(LoadU16(blk));
    const float wv = Mul(d, static_cast<float>(static_cast<int8_t>(blk[2 + lane])));
    for (int t = 0; t < NT; ++t) acc[t] = Fma(wv, x[t * ldx + b * 32 + lane], acc[t]);
  }
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

// Little-endian u32 from a 4-byte aligned pointer.
QWENRT_HD uint32_t LoadU32(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t*>(p);
#else
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
#endif
}

// v[k] = p[k], k < N (N = 2 or 4): one vector load on the device (p must be 8·N/2-byte aligned).
template <int N>
QWENRT_HD void LoadFloats(const float* p, float (&v)[N]) {
#ifdef __CUDA_ARCH__
  if constexpr (N == 4) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
    const float2 f = *reinterpret_cast<const float2*>(p);
    v[0] = f.x, v[1] = f.y;
  }
#else
  for (int k = 0; k < N; ++k) v[k] = p[k];
#endif
}

template <int NT, bool kFiveBit>
QWENRT_HD void DotQ45K(const uint8_t* row, const float* x, int64_t ldx, int64_t cols, int lane,
                       int64_t b0, int64_t bstep, float (&acc)[NT]) {
  constexpr int kBlockBytes = kFiveBit ? 176 : 144;
  constexpr int kQsOffset = kFiveBit ? 48 : 16;
  const int g = lane / 8, i = 4 * (lane % 8);
  const int64_t nb = cols / 256;
  for (int64_t b = b0; b < nb; b += bstep) {
    const uint8_t* blk = row + b * kBlockBytes;
    const float d = HalfToFloat(LoadU16(blk)), dmin = HalfToFloat(LoadU16(blk + 2));
    const uint32_t qs = LoadU32(blk + kQsOffset + 32 * g + i);
    const uint32_t qh = kFiveBit ? LoadU32(blk + 16 + i) : 0u;
    const float* xb = x + b * 256 + 64 * g + i;  // sub-block 2g; 2g+1 is 32 further
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * g + half;
      int sc, m;
      ScaleMinK(blk + 4, s, &sc, &m);
      const float d1 = Mul(d, static_cast<float>(sc)), m1 = Mul(dmin, static_cast<float>(m));
      float wv[4];
      for (int k = 0; k < 4; ++k) {
        int q = (qs >> (8 * k + 4 * half)) & 0x0F;
        if (kFiveBit) q += ((qh >> (8 * k + s)) & 1) << 4;
        wv[k] = Sub(Mul(d1, static_cast<float>(q)), m1);
      }
      for (int t = 0; t < NT; ++t) {
        float xv[4];
        LoadFloats<4>(xb + t * ldx + 32 * half, xv);
        for (int k = 0; k < 4; ++k) acc[t] = Fma(wv[k], xv[k], acc[t]);
      }
    }
  }
}

template <int NT>
QWENRT_HD void DotQ6K(const uint8_t* row, const float* x, int64_t ldx, int64_t cols, int lane,
                      int64_t b0, int64_t bstep, float (&acc)[NT]) {
  const int n = lane / 16, j = 2 * (lane % 16);
  const int64_t nb = cols / 256;
  for (int64_t b = b0; b < nb; b += bstep) {
    const uint8_t* blk = row + b * 210;
    const float d = HalfToFloat(LoadU16(blk + 208));
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    const uint16_t lo0 = LoadU16(blk + 64 * n + j), lo1 = LoadU16(blk + 64 * n + 32 + j);
    const uint16_t hi = LoadU16(blk + 128 + 32 * n + j);
    const float* xb = x + b * 256 + 128 * n + j;
    for (int m = 0; m < 4; ++m) {
      // Elements 128n + 32m + j + k, k = 0..1 (both in scale group 8n + 2m + j/16).
      const float dsc = Mul(d, static_cast<float>(scales[8 * n + 2 * m + j / 16]));
      const uint16_t lo = (m & 1) ? lo1 : lo0;
      float wv[2];
      for (int k = 0; k < 2; ++k) {
        const int l4 = (lo >> (8 * k + 4 * (m >> 1))) & 0x0F;
        const int h2 = (hi >> (8 * k + 2 * m)) & 3;
        wv[k] = Mul(dsc, static_cast<float>((l4 | (h2 << 4)) - 32));
      }
      for (int t = 0; t < NT; ++t) {
        float xv[2];
        LoadFloats<2>(xb + t * ldx + 32 * m, xv);
        for (int k = 0; k < 2; ++k) acc[t] = Fma(wv[k], xv[k], acc[t]);
      }
    }
  }
}

// Lane `lane`'s share of row . x[t] for NT tokens (x[t] = x + t * ldx), added to acc, for a row of
// type `type_id` (gguf::Type value); nothing is added for types without a lane decoder.
template <int NT>
QWENRT_HD void LaneDotN(uint32_t type_id, const uint8_t* row, const float* x, int64_t ldx, int64_t cols,
                        int lane, int64_t b0, int64_t bstep, float (&acc)[NT]) {
  switch (type_id) {
    case 0: DotF32<NT>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 1: DotHalf<NT, false>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 30: DotHalf<NT, true>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 8: DotQ8_0<NT>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 12: DotQ45K<NT, false>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 13: DotQ45K<NT, true>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    case 14: DotQ6K<NT>(row, x, ldx, cols, lane, b0, bstep, acc); break;
    default: break;
  }
}

// One token, the whole row: lane `lane`'s share of row . x.
QWENRT_HD float LaneDot(uint32_t type_id, const uint8_t* row, const float* x, int64_t cols, int lane) {
  float acc[1] = {0.0f};
  LaneDotN<1>(type_id, row, x, cols, cols, lane, 0, 1, acc);
  return acc[0];
}

}  // namespace qwenrt::lanes
