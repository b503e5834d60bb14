// Dot products between one weight row (GGUF block format) and one activation row, as the CPU matmul
// uses them (docs/spec/gguf-and-quants.md §3.9). `ref::` versions are scalar with exact integer
// inner sums and define the result; `cpu::` versions (SIMD) must agree with them to float rounding.
// `n` is the row length in elements (a multiple of the block size); `w` and `a` point at n /
// block-size blocks.
#pragma once

#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/quant.h"

namespace qwenrt {

namespace ref {
// Per super-block: fp16(d)*dy*sum_s sc_s*sum(q4*q8) - fp16(dmin)*dy*sum_s
// m_s*(bsums[2s]+bsums[2s+1]).
float VecDotQ4K_Q8K(const void* w, const void* a, int64_t n);
float VecDotQ5K_Q8K(const void* w, const void* a, int64_t n);
// Per super-block: fp16(d)*dy*sum_g scales[g]*sum(q6*q8), q6 in [-32, 31].
float VecDotQ6K_Q8K(const void* w, const void* a, int64_t n);
// Per block: fp16(d_w)*fp16(d_a)*sum(q_w*q_a).
float VecDotQ8_0_Q8_0(const void* w, const void* a, int64_t n);
// 32-element blocks against Q8_0 activations, per block: scale(w) * fp16(d_a) * sum(q_w * q_a),
// with q_w the block's integer values (Q4_0: nibble - 8; Q5_0: 5-bit - 16; IQ4_NL / MXFP4: table
// values, MXFP4's scale E8M0ToFp32Half(e)); Q4_1 / Q5_1 add fp16(m) * fp16(d_a) * sum(q_a).
float VecDotQ4_0_Q8_0(const void* w, const void* a, int64_t n);
float VecDotQ4_1_Q8_0(const void* w, const void* a, int64_t n);
float VecDotQ5_0_Q8_0(const void* w, const void* a, int64_t n);
float VecDotQ5_1_Q8_0(const void* w, const void* a, int64_t n);
float VecDotIQ4NL_Q8_0(const void* w, const void* a, int64_t n);
float VecDotMXFP4_Q8_0(const void* w, const void* a, int64_t n);
// Per super-block: Q2_K fp16(d)*dy*sum_g sc_g*sum(q2*q8) - fp16(dmin)*dy*sum_g m_g*bsums[g];
// Q3_K fp16(d)*dy*sum_g (sc_g - 32)*sum(q3*q8); IQ4_XS fp16(d)*dy*sum_s (ls_s -
// 32)*sum(kIq4Values*q8).
float VecDotQ2K_Q8K(const void* w, const void* a, int64_t n);
float VecDotQ3K_Q8K(const void* w, const void* a, int64_t n);
float VecDotIQ4XS_Q8K(const void* w, const void* a, int64_t n);
// Float weights against f32 activations (more accurate than llama.cpp's f16/bf16-rounded
// activations and no slower: the weights dominate the memory traffic). Accumulates in f32, column
// order.
float VecDotF32(const float* w, const float* a, int64_t n);
float VecDotF16_F32(const uint16_t* w, const float* a, int64_t n);
float VecDotBF16_F32(const uint16_t* w, const float* a, int64_t n);
}  // namespace ref

}  // namespace qwenrt

// Which file defines the cpu:: kernels below for the ISA level being compiled (ops/cpu_dispatch.h):
// cpu/vec_dot_x86.cpp needs AVX2 + FMA + F16C, cpu/vec_dot_arm.cpp aarch64 NEON; otherwise
// cpu/vec_dot_scalar.cpp. A new SIMD kernel file follows the same pattern.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define QWENRT_X86_DOT 1
#else
#define QWENRT_X86_DOT 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define QWENRT_ARM_DOT 1
#else
#define QWENRT_ARM_DOT 0
#endif

namespace QWENRT_CPU_NAMESPACE {

// Multi-token dot kernel: for t < ntok (1 <= ntok <= kMaxDotTokens),
//   out[t * out_stride] = dot(weight row `w`, activation row `a + t * a_stride` bytes)
// over n elements. Unpacking a weight block once for several tokens is what makes prefill fast.
// With AVX-512VL: 32 vector registers, 8 tokens' accumulators fit (per ISA level: use
// MaxDotTokens() outside cpu/).
#if QWENRT_X86_DOT && defined(__AVX512VL__)
inline constexpr int kMaxDotTokens = 8;
#else
inline constexpr int kMaxDotTokens = 4;
#endif
using DotKernel = void (*)(const void* w, const void* a, size_t a_stride, int ntok, int64_t n,
                           float* out, int64_t out_stride);

// Activations: Q8_K rows (K-quants, IQ4_XS), Q8_0 rows (Q8_0 and the other 32-element blocks), f32
// rows (float weights).
void DotQ4K_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotQ5K_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotQ6K_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotQ8_0_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
// The 32-element block types against Q8_0 (cpu/vec_dot_legacy_x86.cpp) and Q2_K / Q3_K / IQ4_XS
// against Q8_K (cpu/vec_dot_kquant_low_x86.cpp).
void DotQ4_0_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotQ4_1_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotQ5_0_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotQ5_1_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotIQ4NL_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                   int64_t out_stride);
void DotMXFP4_Q8_0(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                   int64_t out_stride);
void DotQ2K_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotQ3K_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotIQ4XS_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotF32_F32(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotF16_F32(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                int64_t out_stride);
void DotBF16_F32(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                 int64_t out_stride);

// SIMD version of QuantizeRowQ8K (quant.h), bit-identical to it.
void QuantizeRowQ8K(const float* x, void* dst_blocks, int64_t n);

// kMaxDotTokens of the ISA level in use (ops/cpu_dispatch.h): the largest ntok the kernels take.
int MaxDotTokens();

// Which instruction set the kernels above were compiled for ("avx512vnni", "avx2", "neon-dotprod",
// "neon", "scalar"), for the ISA level in use.
const char* DotKernelIsa();

}  // namespace QWENRT_CPU_NAMESPACE
