// Host-pointer entry points of three CUDA kernels (plain C++, no CUDA headers), for tests and
// timings: each call uploads its inputs to fresh device buffers, launches the kernel through the
// same launcher the device-resident forward pass uses (cuda_kernels.h), synchronises the device and
// downloads the results. Their users are tests/ops_cuda_test.cpp (against ref::) and
// bench/cuda_ops_bench.cpp; the forward pass (src/model/forward_cuda.cpp) calls the launchers on
// device pointers instead. Implemented in src/ops/cuda/{rms_norm,dequant_matvec,
// gated_delta_recurrent}.cu; built without CUDA, every function returns UNSUPPORTED (the stubs in
// src/model/cuda_device_stub.cpp).
//
// Errors (all functions): INVALID_ARGUMENT for bad shapes / null pointers, UNSUPPORTED for a weight
// type or head size the kernels do not handle (refused before touching the device), DEVICE for any
// CUDA failure (no device, out of device memory, launch failure) with the CUDA error text. Outputs
// are unspecified after an error.
// Thread safety: any thread. Each call has its own device buffers and works on the legacy default
// stream, but synchronises the whole device, so it also waits for a CUDA session's work in flight.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "ops/gated_delta.h"
#include "ops/matmul.h"

namespace qwenrt::cuda {

// Optional timing of a call: with iters > 0 the kernel is launched once more untimed and then
// `iters` times between CUDA events on device-resident inputs; ms = mean milliseconds per launch
// (kernel only, no copies). Results returned are those of the first launch.
struct KernelTiming {
  int iters = 0;
  double ms = 0.0;
};

// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w            x, y: [rows, n] (may alias); w: [n]
// Same contract as ref::RmsNorm.
Status RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
               KernelTiming* timing = nullptr);

// y[t][r] = sum_c W[r][c] * x[t][c]      x: [T, cols]; y: [T, rows]; W as stored in GGUF.
// Weights F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K, dequantized on the fly in f32 (the "exact" path:
// same products as ref::MatMul, different summation order). Four warps per weight row, each
// decoding its weights once for a group of up to 8 tokens (dequant_matvec.cu).
Status DequantMatVec(const WeightMatrix& w, const float* x, float* y, int64_t T,
                     KernelTiming* timing = nullptr);

// The gated delta rule, token-serial (decode form); same arguments, layouts and result as
// ref::GatedDelta (gated_delta.h): state [Hv, Dv, Dk] updated in place, out [T, Hv, Dv], value head
// h uses key head h % Hk. Dk <= 256 (UNSUPPORTED above).
Status GatedDeltaRecurrent(const GatedDeltaShape& shape, const float* q, const float* k,
                           const float* v, const float* g, const float* beta, float* state,
                           float* out, KernelTiming* timing = nullptr);

// Largest Dk GatedDeltaRecurrent handles (the state column lives in registers, 8 per lane).
inline constexpr int64_t kGatedDeltaMaxDk = 256;

}  // namespace qwenrt::cuda
