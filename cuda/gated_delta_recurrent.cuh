// Launcher of the token-serial gated delta rule kernel on device pointers (see
// gated_delta_recurrent.cu).
#pragma once

#include "common.cuh"
#include "gated_delta.h"

namespace qwenrt::cuda {

// Same layouts and result as ref::GatedDelta (gated_delta.h), all pointers on the device:
// q, k [T, Hk, Dk]; v [T, Hv, Dv]; g, beta [T, Hv]; state [Hv, Dv, Dk] updated in place;
// out [T, Hv, Dv]. Dk <= kGatedDeltaMaxDk. Enqueues on `stream`.
// Errors: UNSUPPORTED (Dk too large), DEVICE (launch failure).
Status LaunchGatedDeltaRecurrent(const GatedDeltaShape& shape, const float* q, const float* k,
                                 const float* v, const float* g, const float* beta, float* state,
                                 float* out, cudaStream_t stream);

}  // namespace qwenrt::cuda
