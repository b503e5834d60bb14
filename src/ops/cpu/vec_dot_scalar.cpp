// Portable multi-token dot kernels: the scalar definitions of vec_dot.h applied token by token.
// Used when the ISA level has neither AVX2 nor NEON (see vec_dot_x86.cpp, vec_dot_arm.cpp for the
// SIMD versions), and on NEON for the types vec_dot_arm.cpp has no kernel for (Q4_1, Q5_0, Q5_1,
// IQ4_NL, MXFP4, Q2_K, Q3_K).
#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"
#if !QWENRT_X86_DOT

namespace QWENRT_CPU_NAMESPACE {
namespace {

template <float (*Dot)(const void*, const void*, int64_t)>
void Each(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
          int64_t out_stride) {
  for (int t = 0; t < ntok; ++t)
    out[t * out_stride] = Dot(w, static_cast<const uint8_t*>(a) + t * a_stride, n);
}

#if !QWENRT_ARM_DOT
float F32(const void* w, const void* a, int64_t n) {
  return ref::VecDotF32(static_cast<const float*>(w), static_cast<const float*>(a), n);
}
float F16(const void* w, const void* a, int64_t n) {
  return ref::VecDotF16_F32(static_cast<const uint16_t*>(w), static_cast<const float*>(a), n);
}
float BF16(const void* w, const void* a, int64_t n) {
  return ref::VecDotBF16_F32(static_cast<const uint16_t*>(w), static_cast<const float*>(a), n);
}
#endif  // !QWENRT_ARM_DOT

}  // namespace

#define QWENRT_SCALAR_KERNEL(Name, Dot)                                                     \
  void Name(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out, \
            int64_t out_stride) {                                                           \
    Each<Dot>(w, a, a_stride, ntok, n, out, out_stride);                                    \
  }
QWENRT_SCALAR_KERNEL(DotQ4_1_Q8_0, ref::VecDotQ4_1_Q8_0)
QWENRT_SCALAR_KERNEL(DotQ5_0_Q8_0, ref::VecDotQ5_0_Q8_0)
QWENRT_SCALAR_KERNEL(DotQ5_1_Q8_0, ref::VecDotQ5_1_Q8_0)
QWENRT_SCALAR_KERNEL(DotIQ4NL_Q8_0, ref::VecDotIQ4NL_Q8_0)
QWENRT_SCALAR_KERNEL(DotMXFP4_Q8_0, ref::VecDotMXFP4_Q8_0)
QWENRT_SCALAR_KERNEL(DotQ2K_Q8K, ref::VecDotQ2K_Q8K)
QWENRT_SCALAR_KERNEL(DotQ3K_Q8K, ref::VecDotQ3K_Q8K)
#if !QWENRT_ARM_DOT
QWENRT_SCALAR_KERNEL(DotQ4_0_Q8_0, ref::VecDotQ4_0_Q8_0)
QWENRT_SCALAR_KERNEL(DotIQ4XS_Q8K, ref::VecDotIQ4XS_Q8K)
QWENRT_SCALAR_KERNEL(DotQ4K_Q8K, ref::VecDotQ4K_Q8K)
QWENRT_SCALAR_KERNEL(DotQ5K_Q8K, ref::VecDotQ5K_Q8K)
QWENRT_SCALAR_KERNEL(DotQ6K_Q8K, ref::VecDotQ6K_Q8K)
QWENRT_SCALAR_KERNEL(DotQ8_0_Q8_0, ref::VecDotQ8_0_Q8_0)
QWENRT_SCALAR_KERNEL(DotF32_F32, F32)
QWENRT_SCALAR_KERNEL(DotF16_F32, F16)
QWENRT_SCALAR_KERNEL(DotBF16_F32, BF16)

const char* DotKernelIsa() { return "scalar"; }
#endif  // !QWENRT_ARM_DOT
#undef QWENRT_SCALAR_KERNEL

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // !QWENRT_X86_DOT
