// Multi-token CPU dot kernels of the grid-based i-quants (quant_iq.h) against Q8_K activation rows,
// with the DotKernel signature of vec_dot.h. SIMD in cpu/vec_dot_iq_x86.cpp, the portable version
// in cpu/vec_dot_iq_scalar.cpp; both must agree with ref::VecDotIQ*_Q8K to float rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/quant_iq.h"
#include "ops/vec_dot.h"

namespace QWENRT_CPU_NAMESPACE {

void DotIQ2XXS_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                   int64_t out_stride);
void DotIQ2XS_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                  int64_t out_stride);
void DotIQ2S_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                 int64_t out_stride);
void DotIQ3XXS_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                   int64_t out_stride);
void DotIQ3S_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                 int64_t out_stride);
void DotIQ1S_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                 int64_t out_stride);
void DotIQ1M_Q8K(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
                 int64_t out_stride);

// The kernel for a grid i-quant weight type (Q8_K activations), or nullptr for any other type.
DotKernel IQuantDotKernel(gguf::Type type);

}  // namespace QWENRT_CPU_NAMESPACE
