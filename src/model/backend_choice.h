// What each backend can run beyond one sequence at a time, and what the C API's AUTO backend
// resolves to: the one place that decides both, so that AUTO never hands a host a session that a
// later call (the batching engine) refuses.
//
// Batching (ForwardBatch with several steps, hence the Engine) runs on kRef and kCpu: the same
// recipe over the rows of all sequences (forward.cpp). On kCuda it stays UNSUPPORTED until a GPU
// run verifies batch == alone bit for bit on the device (the CUDA pass runs one sequence per call;
// scripts/gpu-check.sh is where that check belongs). Flip it here, and AUTO follows.
#pragma once

#include "base/status.h"
#include "model/backend.h"

namespace qwenrt {

// OK when ForwardBatch may run several sequences in one pass on `kind`; UNSUPPORTED otherwise (with
// the reason). Asked by ForwardBatch (more than one step), Engine::Create and ResolveAutoBackend.
Status CheckBatching(BackendKind kind);

// What this process can run on.
struct BackendAvailability {
  bool cuda_device = false;    // built with CUDA and a device is present
  bool cuda_batching = false;  // CheckBatching(kCuda) is OK
};
// The real availability: CudaAvailable() and CheckBatching(kCuda).
BackendAvailability DetectBackends();

// AUTO: kCuda when a device is present and every call a session may meet works there (batching
// included), else kCpu. Today (CUDA batching unverified) that is kCpu with or without a GPU; a host
// that wants the GPU asks for kCuda. A pure function of `available`, so tests emulate a GPU.
BackendKind ResolveAutoBackend(const BackendAvailability& available);

}  // namespace qwenrt
