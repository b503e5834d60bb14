// The forward pass on an NVIDIA GPU: the same layer sequence as forward.cpp, with the weights, the
// activations, the KV cache and the recurrent state resident on the device. Plain C++ (no CUDA
// headers); built only with CUDA (QWENRT_HAVE_CUDA), else Create returns UNSUPPORTED.
//
// State: KvCache and RecurrentState stay the host-side truth that sessions checkpoint, fork and
// save. CudaForward keeps a device mirror of the last (kv, rec) it ran and knows it is current by
// their lineage (lineage.h); a stale mirror is re-uploaded (only the KV rows it lacks when the cache
// was merely truncated or grown). After a run the new KV rows are copied back to the host at once
// (a few KiB per token); the recurrent state (MiBs) stays on the device, pending (StateMirror in
// recurrent_state.h): the first host access to it (a checkpoint, save, fork, another context)
// fetches it, so decode steps move no state across the bus. Destroying the context fetches it too.
// Numerics: exact f32 like the reference path (weights decoded on the fly, no activation
// quantization); every kernel is split-invariant (cuda_kernels.h), so a prefill equals the same
// tokens decoded one at a time, bit for bit, and a resumed session equals a full re-prefill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"
#include "base/status.h"

namespace qwenrt {

class CudaForward {
 public:
  virtual ~CudaForward() = default;
  // Uploads the model's weights on first use (shared by every CudaForward of that Model while any
  // lives) and allocates scratch for ubatches of up to `max_ubatch` tokens. Errors: UNSUPPORTED (no
  // CUDA build, no device, a weight type the kernels lack), DEVICE (out of device memory, driver).
  static StatusOr<std::unique_ptr<CudaForward>> Create(const Model& model, int64_t max_ubatch);

  // As Forward (forward.h): tokens at positions kv.size() ..., validated by the caller, capacity
  // already reserved. On error kv and rec are unchanged (the device mirror is dropped), except when
  // a kernel failed while rec's only copy was the device one: then rec is NaN and the error says
  // the state was lost (DEVICE; a Session restores a checkpoint).
  virtual Status Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens, bool all_logits,
                     float* logits) = 0;
};

}  // namespace qwenrt
