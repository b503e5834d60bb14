// Launcher of the RMSNorm kernel on device pointers (see rms_norm.cu for the math and mapping).
#pragma once

#include "common.cuh"

namespace qwenrt::cuda {

// y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * w.   x, y: [rows, n] device (may alias); w: [n] device.
// Enqueues on `stream`; returns the launch status (errors of the kernel itself surface at the next
// synchronising call).
Status LaunchRmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
                     cudaStream_t stream);

}  // namespace qwenrt::cuda
