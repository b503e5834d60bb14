// Per-lane row dot products over GGUF weight blocks, as the CUDA mat-vec kernel splits them: lane
// l (0..31) of a warp owns fixed positions inside every block, and the warp's sum of the 32 lane
// results is the row's dot product. Plain C++ usable from host code too (QWENRT_HD is
// `__host__ __device__` under nvcc), so tests can emulate a warp on the CPU and check the lane
// mapping against ref::MatMul without a GPU. No CUDA headers.
//
// Lane l owns, per block:
//   F32/F16/BF16: columns l, l+32, l+64, ...
//   Q8_0 (34 B: d fp16, qs[32]):              element l
//   Q4_K (144 B: d, dmin, scales[12], qs[128]) / Q5_K (176 B: d, dmin, scales[12], qh[32],
//   qs[128]):
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
// reorders, so every instantiation of the kernels below (any number of tokens per warp) computes
// each (row, token) sum with the same roundings in the same order: a prefill equals token-by-token
// decode bit for bit. On the host (the CPU emulation in tests) plain operations.
#ifdef __CUDA_ARCH__
QWENRT_HD float Fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
QWENRT_HD float Mul(float a, float b) { return __fmul_rn(a, b); }
QWENRT_HD float Sub(float a, float b) { return __fsub_rn(a, b); }
#else
QWENRT_HD float Fma(float a, float b, float c) { return a * b + c; }
QWENRT_HD float Mul(float a, float b) { return a * b; }
QWENRT_HD float Sub(float a, float b) { return a - b; }
#endif

// Each Dot* adds lane `lane`'s share of row_r . x[t] to acc[r][t] for R rows and the NT tokens
// x[t] = x + t * ldx: every weight value is decoded once and used for all NT tokens, every x value
// loaded once and used for all R rows. For each (r, t) the products are added in the same order
// whatever NT and R are, so any (NT, R) gives the same bits. Only the blocks b0, b0 + bstep, ... of
// the rows are visited (a block: 32 columns for F32/F16/BF16, the quant block otherwise), so
// several warps can share rows.

template <int NT, int R>
QWENRT_HD void DotF32(const uint8_t* const (&rows)[R], const float* x, int64_t ldx, int64_t cols,
                      int lane, int64_t b0, int64_t bstep, float (&acc)[R][NT]) {
  for (int64_t c = lane + kLanes * b0; c < cols; c += kLanes * bstep) {
    float wv[R];
    for (int r = 0; r < R; ++r)
      wv[r] = reinterpret_cast<const float*>(rows[r])[c];  // 4-byte aligned rows
    for (int t = 0; t < NT; ++t) {
      const float xv = x[t * ldx + c];
      for (int r = 0; r < R; ++r) acc[r][t] = Fma(wv[r], xv, acc[r][t]);
    }
  }
}

template <int NT, int R, bool kBf16>
QWENRT_HD void DotHalf(const uint8_t* const (&rows)[R], const float* x, int64_t ldx, int64_t cols,
                       int lane, int64_t b0, int64_t bstep, float (&acc)[R][NT]) {
  for (int64_t c = lane + kLanes * b0; c < cols; c += kLanes * bstep) {
    float wv[R];
    for (int r = 0; r < R; ++r) {
      const uint16_t h = LoadU16(rows[r] + 2 * c);
      wv[r] = kBf16 ? Bf16ToFloat(h) : HalfToFloat(h);
    }
    for (int t = 0; t < NT; ++t) {
      const float xv = x[t * ldx + c];
      for (int r = 0; r < R; ++r) acc[r][t] = Fma(wv[r], xv, acc[r][t]);
    }
  }
}

template <int NT, int R>
QWENRT_HD void DotQ8_0(const uint8_t* const (&rows)[R], const float* x, int64_t ldx, int64_t cols,
                       int lane, int64_t b0, int64_t bstep, float (&acc)[R][NT]) {
  const int64_t nb = cols / 32;
  for (int64_t b = b0; b < nb; b += bstep) {
    float wv[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * 34;
      wv[r] =
          Mul(HalfToFloat(LoadU16(blk)), static_cast<float>(static_cast<int8_t>(blk[2 + lane])));
    }
    for (int t = 0; t < NT; ++t) {
      const float xv = x[t * ldx + b * 32 + lane];
      for (int r = 0; r < R; ++r) acc[r][t] = Fma(wv[r], xv, acc[r][t]);
    }
  }
}

// Scale and min of sub-block s from the 12 packed bytes (docs/spec/gguf-and-quants.md §3.5.1).
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
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
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

template <int NT, int R, bool kFiveBit>
QWENRT_HD void DotQ45K(const uint8_t* const (&rows)[R], const float* x, int64_t ldx, int64_t cols,
                       int lane, int64_t b0, int64_t bstep, float (&acc)[R][NT]) {
  constexpr int kBlockBytes = kFiveBit ? 176 : 144;
  constexpr int kQsOffset = kFiveBit ? 48 : 16;
  const int g = lane / 8, i = 4 * (lane % 8);
  const int64_t nb = cols / 256;
  for (int64_t b = b0; b < nb; b += bstep) {
    uint32_t qs[R], qh[R];
    float d[R], dmin[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kBlockBytes;
      d[r] = HalfToFloat(LoadU16(blk));
      dmin[r] = HalfToFloat(LoadU16(blk + 2));
      qs[r] = LoadU32(blk + kQsOffset + 32 * g + i);
      qh[r] = kFiveBit ? LoadU32(blk + 16 + i) : 0u;
    }
    const float* xb = x + b * 256 + 64 * g + i;  // sub-block 2g; 2g+1 is 32 further
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * g + half;
      float wv[R][4];
      for (int r = 0; r < R; ++r) {
        int sc, m;
        ScaleMinK(rows[r] + b * kBlockBytes + 4, s, &sc, &m);
        const float d1 = Mul(d[r], static_cast<float>(sc)),
                    m1 = Mul(dmin[r], static_cast<float>(m));
        for (int k = 0; k < 4; ++k) {
          int q = (qs[r] >> (8 * k + 4 * half)) & 0x0F;
          if (kFiveBit) q += ((qh[r] >> (8 * k + s)) & 1) << 4;
          wv[r][k] = Sub(Mul(d1, static_cast<float>(q)), m1);
        }
      }
      for (int t = 0; t < NT; ++t) {
        float xv[4];
        LoadFloats<4>(xb + t * ldx + 32 * half, xv);
        for (int r = 0; r < R; ++r) {
          for (int k = 0; k < 4; ++k) acc[r][t] = Fma(wv[r][k], xv[k], acc[r][t]);
        }
      }
    }
  }
}

template <int NT, int R>
QWENRT_HD void DotQ6K(const uint8_t* const (&rows)[R], const float* x, int64_t ldx, int64_t cols,
                      int lane, int64_t b0, int64_t bstep, float (&acc)[R][NT]) {
  const int n = lane / 16, j = 2 * (lane % 16);
  const int64_t nb = cols / 256;
  for (int64_t b = b0; b < nb; b += bstep) {
    float d[R];
    uint16_t lo0[R], lo1[R], hi[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * 210;
      d[r] = HalfToFloat(LoadU16(blk + 208));
      lo0[r] = LoadU16(blk + 64 * n + j);
      lo1[r] = LoadU16(blk + 64 * n + 32 + j);
      hi[r] = LoadU16(blk + 128 + 32 * n + j);
    }
    const float* xb = x + b * 256 + 128 * n + j;
    for (int m = 0; m < 4; ++m) {
      // Elements 128n + 32m + j + k, k = 0..1 (both in scale group 8n + 2m + j/16).
      float wv[R][2];
      for (int r = 0; r < R; ++r) {
        const int8_t* scales = reinterpret_cast<const int8_t*>(rows[r] + b * 210 + 192);
        const float dsc = Mul(d[r], static_cast<float>(scales[8 * n + 2 * m + j / 16]));
        const uint16_t lo = (m & 1) ? lo1[r] : lo0[r];
        for (int k = 0; k < 2; ++k) {
          const int l4 = (lo >> (8 * k + 4 * (m >> 1))) & 0x0F;
          const int h2 = (hi[r] >> (8 * k + 2 * m)) & 3;
          wv[r][k] = Mul(dsc, static_cast<float>((l4 | (h2 << 4)) - 32));
        }
      }
      for (int t = 0; t < NT; ++t) {
        float xv[2];
        LoadFloats<2>(xb + t * ldx + 32 * m, xv);
        for (int r = 0; r < R; ++r) {
          for (int k = 0; k < 2; ++k) acc[r][t] = Fma(wv[r][k], xv[k], acc[r][t]);
        }
      }
    }
  }
}

// Lane `lane`'s share of row_r . x[t] for R rows and NT tokens (x[t] = x + t * ldx), added to acc,
// for rows of type `type_id` (gguf::Type value); nothing is added for types without a lane decoder.
template <int NT, int R>
QWENRT_HD void LaneDotN(uint32_t type_id, const uint8_t* const (&rows)[R], const float* x,
                        int64_t ldx, int64_t cols, int lane, int64_t b0, int64_t bstep,
                        float (&acc)[R][NT]) {
  switch (type_id) {
    case 0:
      DotF32<NT, R>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 1:
      DotHalf<NT, R, false>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 30:
      DotHalf<NT, R, true>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 8:
      DotQ8_0<NT, R>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 12:
      DotQ45K<NT, R, false>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 13:
      DotQ45K<NT, R, true>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    case 14:
      DotQ6K<NT, R>(rows, x, ldx, cols, lane, b0, bstep, acc);
      break;
    default:
      break;
  }
}

// One token, one whole row: lane `lane`'s share of row . x.
QWENRT_HD float LaneDot(uint32_t type_id, const uint8_t* row, const float* x, int64_t cols,
                        int lane) {
  float acc[1][1] = {{0.0f}};
  const uint8_t* const rows[1] = {row};
  LaneDotN<1, 1>(type_id, rows, x, cols, cols, lane, 0, 1, acc);
  return acc[0][0];
}

}  // namespace qwenrt::lanes
