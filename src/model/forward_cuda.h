// The forward pass on an NVIDIA GPU: the same layer sequence as forward.cpp, with the weights, the
// activations, the KV cache and the recurrent state resident on the device. Plain C++ (no CUDA
// headers); built only with CUDA (QWENRT_HAVE_CUDA), else Create returns UNSUPPORTED.
//
// Where things live: the weights are the Model's (Model::cuda_weights(), cuda_weights.h, shared by
// every context of that Model); the activations and staging buffers are this context's; the KV
// cache and recurrent state are mirrored on the device by the context's CudaStateMirror
// (cuda_state.h). After a run the new KV rows are back on the host, while the recurrent state stays
// on the device, *pending* (recurrent_state.h): its owner calls RecurrentState::Fetch before
// reading its host buffers, so decode steps move no state across the bus. Destroying the context
// fetches it too. Numerics: exact f32 like the reference path (weights decoded on the fly, no
// activation quantization); every kernel is split-invariant (cuda_kernels.h), so a prefill equals
// the same tokens decoded one at a time, bit for bit, and a resumed session equals a full
// re-prefill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"

namespace qwenrt {

class CudaForward {
 public:
  struct Options {
    int64_t max_ubatch = 512;  // Tm: scratch is sized for ubatches of up to this many tokens
    // Decode steps (T = 1, dense models) replay one captured CUDA graph of the layer stack instead
    // of launching each kernel. Off by default: on an H200 it measured within +-5% of eager
    // launches (docs/cuda.md). MoE models ignore it (their routing runs on the host between
    // launches).
    bool graphs = false;
  };

  virtual ~CudaForward() = default;
  // Uploads the model's weights on first use (Model::cuda_weights()) and allocates scratch for
  // ubatches of up to `options.max_ubatch` tokens. Errors: UNSUPPORTED (no CUDA build, no device, a
  // shape the kernels lack), DEVICE (out of device memory, driver), INVALID_ARGUMENT.
  static StatusOr<std::unique_ptr<CudaForward>> Create(const Model& model, const Options& options);
  static StatusOr<std::unique_ptr<CudaForward>> Create(const Model& model, int64_t max_ubatch) {
    Options options;
    options.max_ubatch = max_ubatch;
    return Create(model, options);
  }

  // As Forward (forward.h): tokens at positions kv.size() ..., validated by the caller, capacity
  // already reserved; `rec` may be pending on this or another context. On error kv and rec are
  // unchanged (the device mirror is dropped), except when a kernel failed while rec's only copy was
  // the device one, or fetching it from another context failed: then rec is NaN and the error says
  // so (DEVICE; a Session restores a checkpoint).
  virtual Status Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens,
                     bool all_logits, float* logits) = 0;
};

}  // namespace qwenrt
