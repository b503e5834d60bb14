// Launcher of the dequantizing mat-vec kernel on device pointers (see dequant_matvec.cu).
#pragma once

#include "common.cuh"
#include "qwenrt/gguf.hpp"

namespace qwenrt::cuda {

// y[t][r] = sum_c W[r][c] * x[t][c] for t < T, r < rows.
// w: device bytes, row r at w + r * row_bytes, in GGUF block format `type` (F32 F16 BF16 Q8_0 Q4_K
// Q5_K Q6_K); x: [T, cols] device; y: [T, rows] device. cols must be a multiple of the block size.
// Enqueues on `stream`. Errors: UNSUPPORTED type, DEVICE launch failure.
Status LaunchDequantMatVec(gguf::Type type, const uint8_t* w, size_t row_bytes, int64_t cols,
                           int64_t rows, const float* x, float* y, int64_t T, cudaStream_t stream);

}  // namespace qwenrt::cuda
