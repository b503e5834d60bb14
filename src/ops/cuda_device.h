// Is there a usable CUDA device? Plain C++ (no CUDA headers), so any part of qwenrt can ask. When
// the library is built without CUDA (QWENRT_HAVE_CUDA undefined) these are stubs from
// cuda_device_stub.cpp: CudaAvailable() is false and CudaDeviceName() returns UNSUPPORTED.
#pragma once

#include <string>

#include "base/status.h"

namespace qwenrt {

// True when the CUDA runtime initialises and reports at least one device. The first call
// initialises the runtime (can take ~0.1-1 s); the answer is cached for the process. Any thread.
bool CudaAvailable();

// "NVIDIA H200 (sm_90, 139.8 GiB)" for the current device. Errors: UNSUPPORTED (built without
// CUDA), DEVICE (no device / driver problem, with the CUDA error text). Any thread.
StatusOr<std::string> CudaDeviceName();

}  // namespace qwenrt
