// NEON (aarch64) multi-token dot kernels of vec_dot.h, with SDOT where the level has it (the
// dotprod level, __ARM_FEATURE_DOTPROD) and widening multiply-accumulates otherwise.
//
// K-quants against Q8_K, per 32-element sub-block: the weight quants are unpacked once to 32 signed
// bytes (Q4_K 0..15, Q5_K 0..31, Q6_K -32..31), the exact integer sum sum(q_w * q_a) is formed per
// token, scaled by the sub-block's integer scale, and per super-block and token the float
// combination d * d_act * sumi - dmin * d_act * sum_s m_s * bsums is accumulated. Integer sums are
// exact, so results differ from ref:: only by float summation order. The weight bytes are unpacked
// once for up to kMaxDotTokens tokens (prefill).
//
// Q8_0, Q4_0 (against Q8_0) and IQ4_XS (against Q8_K) are the other types with NEON kernels here:
// the rest of the legacy, low-bit K and i-quant types use vec_dot_scalar.cpp /
// vec_dot_iq_scalar.cpp.
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

#if QWENRT_ARM_DOT
#include <arm_neon.h>

namespace QWENRT_CPU_NAMESPACE {
namespace {

#if defined(__ARM_FEATURE_DOTPROD)
constexpr const char* kIsa = "neon-dotprod";
// sum(a * b) of 32 byte pairs, added lane-wise into acc (4 x i32).
inline int32x4_t Dot32(int32x4_t acc, int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1) {
  return vdotq_s32(vdotq_s32(acc, a0, b0), a1, b1);
}
#else
constexpr const char* kIsa = "neon";
// Products fit in i16 (two per lane: |q_w| <= 127 and |q_a| <= 128 give at most 32512);
// pairwise-added into i32.
inline int32x4_t Dot32(int32x4_t acc, int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1) {
  int16x8_t p0 = vmull_s8(vget_low_s8(a0), vget_low_s8(b0));
  int16x8_t p1 = vmull_s8(vget_low_s8(a1), vget_low_s8(b1));
  p0 = vmlal_s8(p0, vget_high_s8(a0), vget_high_s8(b0));
  p1 = vmlal_s8(p1, vget_high_s8(a1), vget_high_s8(b1));
  return vpadalq_s16(vpadalq_s16(acc, p0), p1);
}
#endif

inline int8x16_t LoadS8(const int8_t* p) { return vld1q_s8(p); }

// Sub-block s (32 elements) of a Q4_K / Q5_K block as two vectors of signed bytes.
struct Quants32 {
  int8x16_t lo, hi;  // elements 0..15, 16..31
};

// Q4_K (kHigh = false) and Q5_K (kHigh = true) share everything but the fifth bit.
template <typename Block, bool kHigh, int NT>
void DotK45(const Block* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  float sum[NT] = {};
  const uint8x16_t m4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t sc[8], m[8];
    for (int s = 0; s < 8; ++s) UnpackScaleMinK(x[b].scales, s, &sc[s], &m[s]);
    int32_t sumi[NT] = {};
    uint8x16_t qh0, qh1;
    if constexpr (kHigh) qh0 = vld1q_u8(x[b].qh), qh1 = vld1q_u8(x[b].qh + 16);
    for (int g = 0; g < 4; ++g) {
      const uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * g), q1 = vld1q_u8(x[b].qs + 32 * g + 16);
      uint8x16_t lo0 = vandq_u8(q0, m4), lo1 = vandq_u8(q1, m4);
      uint8x16_t hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
      if constexpr (kHigh) {
        // Bit s of qh[l] is the fifth bit of element 32s + l (s = 2g for lo, 2g + 1 for hi).
        const int8x16_t sl = vdupq_n_s8(static_cast<int8_t>(-2 * g)),
                        sh = vdupq_n_s8(static_cast<int8_t>(-2 * g - 1));
        lo0 = vorrq_u8(lo0, vshlq_n_u8(vandq_u8(vshlq_u8(qh0, sl), one), 4));
        lo1 = vorrq_u8(lo1, vshlq_n_u8(vandq_u8(vshlq_u8(qh1, sl), one), 4));
        hi0 = vorrq_u8(hi0, vshlq_n_u8(vandq_u8(vshlq_u8(qh0, sh), one), 4));
        hi1 = vorrq_u8(hi1, vshlq_n_u8(vandq_u8(vshlq_u8(qh1, sh), one), 4));
      }
      const Quants32 lo{vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1)};
      const Quants32 hi{vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1)};
      for (int t = 0; t < NT; ++t) {
        const int8_t* qa = y[t][b].qs + 64 * g;
        const int32x4_t pl = Dot32(vdupq_n_s32(0), lo.lo, lo.hi, LoadS8(qa), LoadS8(qa + 16));
        const int32x4_t ph = Dot32(vdupq_n_s32(0), hi.lo, hi.hi, LoadS8(qa + 32), LoadS8(qa + 48));
        sumi[t] += sc[2 * g] * vaddvq_s32(pl) + sc[2 * g + 1] * vaddvq_s32(ph);
      }
    }
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int t = 0; t < NT; ++t) {
      int32_t summ = 0;
      for (int s = 0; s < 8; ++s) summ += m[s] * (y[t][b].bsums[2 * s] + y[t][b].bsums[2 * s + 1]);
      const float dy = y[t][b].d;
      sum[t] += d * dy * static_cast<float>(sumi[t]) - dmin * dy * static_cast<float>(summ);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = sum[t];
}

template <int NT>
void DotQ6K(const BlockQ6K* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
            int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  float sum[NT] = {};
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(3);
  const int8x16_t k32 = vdupq_n_s8(32);
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sumi[NT] = {};
    for (int half = 0; half < 2; ++half) {
      for (int k = 0; k < 4; ++k) {
        // Elements 128*half + 32k .. +31: low nibbles of ql[64*half + 32*(k % 2) ..] for k < 2,
        // high nibbles for k >= 2; bits 2k..2k+1 of qh[32*half ..] on top; minus 32.
        const uint8_t* ql = x[b].ql + 64 * half + 32 * (k % 2);
        const uint8_t* qh = x[b].qh + 32 * half;
        int8x16_t q[2];
        for (int i = 0; i < 2; ++i) {
          const uint8x16_t l = vld1q_u8(ql + 16 * i), h = vld1q_u8(qh + 16 * i);
          const uint8x16_t low = k < 2 ? vandq_u8(l, m4) : vshrq_n_u8(l, 4);
          const uint8x16_t high =
              vandq_u8(vshlq_u8(h, vdupq_n_s8(static_cast<int8_t>(-2 * k))), m2);
          q[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(high, 4))), k32);
        }
        const int j = 8 * half + 2 * k;  // scale groups j (elements 0..15) and j + 1 (16..31)
        for (int t = 0; t < NT; ++t) {
          const int8_t* qa = y[t][b].qs + 128 * half + 32 * k;
          const int32x4_t zero = vdupq_n_s32(0);
#if defined(__ARM_FEATURE_DOTPROD)
          const int32_t s0 = vaddvq_s32(vdotq_s32(zero, q[0], LoadS8(qa)));
          const int32_t s1 = vaddvq_s32(vdotq_s32(zero, q[1], LoadS8(qa + 16)));
#else
          const int16x8_t p0 = vmlal_s8(vmull_s8(vget_low_s8(q[0]), vget_low_s8(LoadS8(qa))),
                                        vget_high_s8(q[0]), vget_high_s8(LoadS8(qa)));
          const int16x8_t p1 = vmlal_s8(vmull_s8(vget_low_s8(q[1]), vget_low_s8(LoadS8(qa + 16))),
                                        vget_high_s8(q[1]), vget_high_s8(LoadS8(qa + 16)));
          const int32_t s0 = vaddvq_s32(vpadalq_s16(zero, p0)),
                        s1 = vaddvq_s32(vpadalq_s16(zero, p1));
#endif
          sumi[t] += x[b].scales[j] * s0 + x[b].scales[j + 1] * s1;
        }
      }
    }
    const float d = Fp16ToFp32(x[b].d);
    for (int t = 0; t < NT; ++t) sum[t] += d * y[t][b].d * static_cast<float>(sumi[t]);
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = sum[t];
}

template <int NT>
void DotQ8_0(const BlockQ8_0* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
             int64_t out_stride) {
  const BlockQ8_0* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  float sum[NT] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const int8x16_t w0 = LoadS8(x[b].qs), w1 = LoadS8(x[b].qs + 16);
    const float d = Fp16ToFp32(x[b].d);
    for (int t = 0; t < NT; ++t) {
      // |q_w| <= 128, |q_a| <= 127: two products per i16 lane could overflow, so one product per
      // lane.
#if defined(__ARM_FEATURE_DOTPROD)
      const int32x4_t s =
          Dot32(vdupq_n_s32(0), w0, w1, LoadS8(y[t][b].qs), LoadS8(y[t][b].qs + 16));
#else
      const int8x16_t a0 = LoadS8(y[t][b].qs), a1 = LoadS8(y[t][b].qs + 16);
      int32x4_t s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(a0)));
      s = vpadalq_s16(s, vmull_s8(vget_high_s8(w0), vget_high_s8(a0)));
      s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(a1)));
      s = vpadalq_s16(s, vmull_s8(vget_high_s8(w1), vget_high_s8(a1)));
#endif
      sum[t] += d * Fp16ToFp32(y[t][b].d) * static_cast<float>(vaddvq_s32(s));
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = sum[t];
}

// Q4_0: element j < 16 is the low nibble of qs[j], element 16 + j the high one, minus 8.
template <int NT>
void DotQ4_0(const BlockQ4_0* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
             int64_t out_stride) {
  const BlockQ8_0* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  float sum[NT] = {};
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  const int8x16_t k8 = vdupq_n_s8(8);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8x16_t q = vld1q_u8(x[b].qs);
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), k8);
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), k8);
    const float d = Fp16ToFp32(x[b].d);
    for (int t = 0; t < NT; ++t) {
      const int32x4_t s =
          Dot32(vdupq_n_s32(0), lo, hi, LoadS8(y[t][b].qs), LoadS8(y[t][b].qs + 16));
      sum[t] += d * Fp16ToFp32(y[t][b].d) * static_cast<float>(vaddvq_s32(s));
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = sum[t];
}

// IQ4_XS: per 32-element sub-block ib, the nibbles of qs[16 ib ..] (low: elements 0..15, high:
// 16..31) index kIq4Values (one table lookup for 16 weights), scaled by the sub-block's 6-bit scale
// minus 32.
template <int NT>
void DotIQ4XS(const BlockIQ4XS* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
              int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  float sum[NT] = {};
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  const int8x16_t values = vld1q_s8(kIq4Values);
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sumi[NT] = {};
    for (int ib = 0; ib < 8; ++ib) {
      const uint8x16_t q = vld1q_u8(x[b].qs + 16 * ib);
      const int8x16_t lo = vqtbl1q_s8(values, vandq_u8(q, m4));
      const int8x16_t hi = vqtbl1q_s8(values, vshrq_n_u8(q, 4));
      const int scale = ScaleIQ4XS(x[b], ib) - 32;
      for (int t = 0; t < NT; ++t) {
        const int8_t* qa = y[t][b].qs + 32 * ib;
        sumi[t] += scale * vaddvq_s32(Dot32(vdupq_n_s32(0), lo, hi, LoadS8(qa), LoadS8(qa + 16)));
      }
    }
    const float d = Fp16ToFp32(x[b].d);
    for (int t = 0; t < NT; ++t) sum[t] += d * y[t][b].d * static_cast<float>(sumi[t]);
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = sum[t];
}

// Float weights: Load4 converts 4 weights to f32; activations are f32 rows.
inline float32x4_t Load4F32(const void* p, int64_t i) {
  return vld1q_f32(static_cast<const float*>(p) + i);
}
inline float32x4_t Load4F16(const void* p, int64_t i) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p) + i)));
}
inline float32x4_t Load4BF16(const void* p, int64_t i) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const uint16_t*>(p) + i), 16));
}
inline float OneF32(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
inline float OneF16(const void* p, int64_t i) {
  return Fp16ToFp32(static_cast<const uint16_t*>(p)[i]);
}
inline float OneBF16(const void* p, int64_t i) {
  return Bf16ToFp32(static_cast<const uint16_t*>(p)[i]);
}

template <float32x4_t (*Load4)(const void*, int64_t), float (*One)(const void*, int64_t), int NT>
void DotFloat(const void* w, const uint8_t* a, size_t a_stride, int64_t n, float* out,
              int64_t out_stride) {
  const float* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const float*>(a + t * a_stride);
  float32x4_t acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = vdupq_n_f32(0);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t w0 = Load4(w, i), w1 = Load4(w, i + 4);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = vfmaq_f32(acc0[t], w0, vld1q_f32(x[t] + i));
      acc1[t] = vfmaq_f32(acc1[t], w1, vld1q_f32(x[t] + i + 4));
    }
  }
  for (int t = 0; t < NT; ++t) {
    float s = vaddvq_f32(vaddq_f32(acc0[t], acc1[t]));
    for (int64_t j = i; j < n; ++j) s += One(w, j) * x[t][j];
    out[t * out_stride] = s;
  }
}

}  // namespace

void DotQ4K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotK45<BlockQ4K, false, NT>(static_cast<const BlockQ4K*>(w), static_cast<const uint8_t*>(a), s,
                                n / kQK_K, o, os);
  });
}
void DotQ5K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotK45<BlockQ5K, true, NT>(static_cast<const BlockQ5K*>(w), static_cast<const uint8_t*>(a), s,
                               n / kQK_K, o, os);
  });
}
void DotQ6K_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ6K<NT>(static_cast<const BlockQ6K*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
               os);
  });
}
void DotQ8_0_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ8_0<NT>(static_cast<const BlockQ8_0*>(w), static_cast<const uint8_t*>(a), s, n / kQK8_0, o,
                os);
  });
}
void DotQ4_0_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotQ4_0<NT>(static_cast<const BlockQ4_0*>(w), static_cast<const uint8_t*>(a), s, n / kQK4_0, o,
                os);
  });
}
void DotIQ4XS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotIQ4XS<NT>(static_cast<const BlockIQ4XS*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o,
                 os);
  });
}
void DotF32_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load4F32, OneF32, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}
void DotF16_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load4F16, OneF16, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}
void DotBF16_F32(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotFloat<Load4BF16, OneBF16, NT>(w, static_cast<const uint8_t*>(a), s, n, o, os);
  });
}

const char* DotKernelIsa() { return kIsa; }

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_ARM_DOT
