// Owners of CUDA resources for the device-resident forward pass (cuda_weights.h, cuda_state.h,
// forward_cuda.cpp): one device allocation, one pinned host buffer, one stream. Plain C++ over the
// cuda_kernels.h wrappers; used only in CUDA builds (QWENRT_HAVE_CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/status.h"
#include "ops/cuda_kernels.h"

namespace qwenrt {

// Move-only owner of one device allocation of floats (or bytes).
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr, o.bytes_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceArray() { cuda::Free(p_); }

  Status Allocate(size_t bytes) {
    cuda::Free(p_);
    p_ = nullptr;
    bytes_ = 0;
    QWENRT_RETURN_IF_ERROR(cuda::Malloc(&p_, bytes == 0 ? 1 : bytes));
    bytes_ = bytes;
    return OkStatus();
  }
  Status AllocateFloats(int64_t n) { return Allocate(static_cast<size_t>(n) * sizeof(float)); }
  float* f() const { return static_cast<float*>(p_); }
  int32_t* i32() const { return static_cast<int32_t*>(p_); }
  int64_t* i64() const { return static_cast<int64_t*>(p_); }
  uint8_t* u8() const { return static_cast<uint8_t*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Pinned host staging buffer.
class PinnedArray {
 public:
  PinnedArray() = default;
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() { cuda::FreeHost(p_); }
  Status Allocate(size_t bytes) {
    QWENRT_RETURN_IF_ERROR(cuda::MallocHost(&p_, bytes == 0 ? 1 : bytes));
    return OkStatus();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// Owner of one stream (created by Create, destroyed with the owner).
class DeviceStream {
 public:
  DeviceStream() = default;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  ~DeviceStream() { cuda::StreamDestroy(s_); }
  Status Create() { return cuda::StreamCreate(&s_); }
  cuda::Stream get() const { return s_; }

 private:
  cuda::Stream s_ = nullptr;
};

}  // namespace qwenrt
