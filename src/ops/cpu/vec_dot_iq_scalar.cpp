// Portable multi-token i-quant dot kernels: ref::VecDotIQ*_Q8K token by token. Used when the build
// has no AVX2 (vec_dot_iq_x86.cpp holds the SIMD versions).
#include "ops/cpu_namespace.h"
#include "ops/vec_dot_iq.h"
#if !QWENRT_X86_DOT

namespace QWENRT_CPU_NAMESPACE {

#define QWENRT_IQ_SCALAR_KERNEL(Name, Dot)                                                  \
  void Name(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out, \
            int64_t out_stride) {                                                           \
    for (int t = 0; t < ntok; ++t)                                                          \
      out[t * out_stride] = Dot(w, static_cast<const uint8_t*>(a) + t * a_stride, n);       \
  }
QWENRT_IQ_SCALAR_KERNEL(DotIQ2XXS_Q8K, ref::VecDotIQ2XXS_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ2XS_Q8K, ref::VecDotIQ2XS_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ2S_Q8K, ref::VecDotIQ2S_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ3XXS_Q8K, ref::VecDotIQ3XXS_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ3S_Q8K, ref::VecDotIQ3S_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ1S_Q8K, ref::VecDotIQ1S_Q8K)
QWENRT_IQ_SCALAR_KERNEL(DotIQ1M_Q8K, ref::VecDotIQ1M_Q8K)
#undef QWENRT_IQ_SCALAR_KERNEL

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // !QWENRT_X86_DOT
