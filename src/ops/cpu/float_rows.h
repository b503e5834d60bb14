// Float weights (F32, F16, BF16) against f32 activations as a register tile of rows x tokens: each
// weight vector is loaded (and widened) once for all the call's tokens and each activation vector
// once for a pair of rows, so prefill runs at the FMA rate instead of the load rate of one row at a
// time. Internal to src/ops/cpu/ (matmul.cpp calls its own level's).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/quant.h"

namespace QWENRT_CPU_NAMESPACE {

// out[t * out_stride + r] = dot(row r at w + r * row_bytes, f32 row t at a + t * a_stride) over n
// elements, for r < nrows (<= 16) and t < ntok (1 <= ntok <= kMaxDotTokens). Each (row, token) is
// summed in the same order whatever nrows and ntok: a token alone gives the bits it gets in a
// batch.
using FloatRowsKernel = void (*)(const uint8_t* w, size_t row_bytes, int nrows, const uint8_t* a,
                                 size_t a_stride, int ntok, int64_t n, float* out,
                                 int64_t out_stride);

// This level's tile kernel for a float `type`, or null (the per-row DotKernel then serves).
FloatRowsKernel FloatRowsKernelFor(gguf::Type type);

}  // namespace QWENRT_CPU_NAMESPACE
