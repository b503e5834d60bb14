// Owners of CUDA resources for the device-resident forward pass (cuda_weights.h, cuda_state.h,
// forward_cuda.cpp): one device allocation, one pinned host buffer, one stream. Plain C++ over the
// cuda_kernels.h wrappers; used only in CUDA builds (QWENRT_HAVE_CUDA).
//
// DeviceArray and PinnedArray share one owner, OwnedMemory<Memory>, so the ownership rules are
// written (and tested, tests/cuda_buffers_test.cpp, with a counting Memory that needs no GPU) once:
// Allocate frees what the owner held before allocating again (a context that re-sizes a buffer
// never leaks the old one), a failed Allocate leaves the owner empty, moves hand the allocation
// over, the destructor frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/status.h"
#include "ops/cuda_kernels.h"

namespace qwenrt {

// Memory: a type with `static Status Allocate(void** p, size_t bytes)` and `static void Free(void*
// p)` (Free of nullptr is a no-op).
template <typename Memory>
class OwnedMemory {
 public:
  OwnedMemory() = default;
  OwnedMemory(const OwnedMemory&) = delete;
  OwnedMemory& operator=(const OwnedMemory&) = delete;
  OwnedMemory(OwnedMemory&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedMemory& operator=(OwnedMemory&& o) noexcept {
    std::swap(p_, o.p_);  // ours is freed by `o`
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~OwnedMemory() { Memory::Free(p_); }

  // Frees the current allocation, then allocates `bytes` (at least one byte, so that a valid
  // pointer comes back for empty shapes). On error the owner holds nothing.
  Status Allocate(size_t bytes) {
    Release();
    void* p = nullptr;
    QWENRT_RETURN_IF_ERROR(Memory::Allocate(&p, bytes == 0 ? 1 : bytes));
    p_ = p;
    bytes_ = bytes;
    return OkStatus();
  }
  void Release() {
    Memory::Free(std::exchange(p_, nullptr));
    bytes_ = 0;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

struct DeviceMemory {
  static Status Allocate(void** p, size_t bytes) { return cuda::Malloc(p, bytes); }
  static void Free(void* p) { cuda::Free(p); }
};
struct PinnedMemory {
  static Status Allocate(void** p, size_t bytes) { return cuda::MallocHost(p, bytes); }
  static void Free(void* p) { cuda::FreeHost(p); }
};

// Move-only owner of one device allocation of floats (or bytes).
class DeviceArray : public OwnedMemory<DeviceMemory> {
 public:
  Status AllocateFloats(int64_t n) { return Allocate(static_cast<size_t>(n) * sizeof(float)); }
  float* f() const { return static_cast<float*>(get()); }
  int32_t* i32() const { return static_cast<int32_t*>(get()); }
  int64_t* i64() const { return static_cast<int64_t*>(get()); }
  uint8_t* u8() const { return static_cast<uint8_t*>(get()); }
};

// Move-only owner of one pinned host staging buffer.
class PinnedArray : public OwnedMemory<PinnedMemory> {
 public:
  template <typename T>
  T* as() const {
    return static_cast<T*>(get());
  }
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
