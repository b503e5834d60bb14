// CudaWeights: a Model's tensor data on the GPU, for the CUDA forward pass (forward_cuda.h). One
// upload of the GGUF data section, so a host weight pointer maps to the device by its offset;
// nothing is converted (the kernels decode the GGUF blocks on the fly). The Model owns it
// (Model::cuda_weights(): made by the first CUDA context, shared by every later one, freed with
// the Model); it is immutable once made, so any thread may read it. Plain C++ (no CUDA headers);
// Upload is UNSUPPORTED in a build without CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "model/cuda_buffers.h"
#include "model/weights.h"
#include "ops/cuda_kernels.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {

class Model;

// A weight matrix with its device address.
struct DevMatrix {
  gguf::Type type = gguf::Type::F32;
  int64_t cols = 0, rows = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
};

class CudaWeights {
 public:
  // Copies `model`'s data section (and the IMROPE pair table) to the device and checks that every
  // weight the forward pass reads lies in it. Call Model::cuda_weights() instead, which does this
  // once per Model. Errors: UNSUPPORTED (built without CUDA), DEVICE (out of device memory,
  // driver), INTERNAL (a weight outside the data section).
  static StatusOr<std::shared_ptr<const CudaWeights>> Upload(const Model& model);

  // The device address of host weight bytes [p, p + n), or nullptr if they are not in the data
  // section.
  const uint8_t* Map(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(p);
    if (b < host_base_ || b + n > host_base_ + size_) return nullptr;
    return data_.u8() + (b - host_base_);
  }
  // Device views of host weights (Upload checked that each one maps).
  DevMatrix Matrix(const WeightMatrix& w) const {
    return DevMatrix{w.type, w.cols, w.rows, Map(w.data, 1), w.row_bytes};
  }
  const float* Vector(const float* p) const { return reinterpret_cast<const float*>(Map(p, 4)); }
  // `w` as one output of a MatMulMulti launch writing y.
  cuda::MatMulTarget Target(const WeightMatrix& w, float* y) const {
    const DevMatrix d = Matrix(w);
    return cuda::MatMulTarget{d.type, d.data, d.row_bytes, d.rows, y};
  }
  // [R/2] bytes (device): 1 where a rotary pair sees the text position (IMROPE); nullptr: all do.
  const uint8_t* rope_pairs() const { return rope_pairs_.bytes() > 0 ? rope_pairs_.u8() : nullptr; }

 private:
  CudaWeights() = default;
  Status CheckMapped(const Model& model) const;

  const uint8_t* host_base_ = nullptr;
  size_t size_ = 0;
  DeviceArray data_;        // the GGUF data section
  DeviceArray rope_pairs_;  // [R/2] uint8
};

}  // namespace qwenrt
