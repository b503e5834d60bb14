// RecurrentState: what the gated-delta-net layers carry from token to token for one sequence — the
// conv window and the delta-rule matrix per GDN layer, f32, plain data. Its size does not depend on
// the position; it cannot be truncated, only snapshotted (Copy) and restored (move-assign or
// CopyFrom). Thread safety: one thread per RecurrentState at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config.h"
#include "status.h"

namespace qwenrt {

class RecurrentState {
 public:
  // Zeroed state (the state at position 0) for `config`'s GDN layers. Error: OutOfMemory.
  static StatusOr<RecurrentState> Create(const ModelConfig& config);

  RecurrentState(RecurrentState&&) noexcept = default;
  RecurrentState& operator=(RecurrentState&&) noexcept = default;

  int64_t n_layers() const { return static_cast<int64_t>(conv_.size()); }  // GDN layers
  int64_t conv_floats() const { return conv_floats_; }  // per layer: C * (Kc-1)
  int64_t ssm_floats() const { return ssm_floats_; }    // per layer: Hv * Dv * Dk

  // GDN layer `g` (0-based among GDN layers).
  // conv: [C, Kc-1]: for each channel the last Kc-1 pre-convolution inputs, oldest first.
  float* conv(int64_t g) { return conv_[g].data(); }
  const float* conv(int64_t g) const { return conv_[g].data(); }
  // ssm: [Hv, Dv, Dk]: S_h[i][j] (key i, value j) at h*Dv*Dk + j*Dk + i.
  float* ssm(int64_t g) { return ssm_[g].data(); }
  const float* ssm(int64_t g) const { return ssm_[g].data(); }

  void Reset();  // back to the position-0 state (all zeros)
  size_t bytes() const;
  StatusOr<RecurrentState> Copy() const;  // deep copy; error: OutOfMemory
  // Copies `other`'s contents into this state (same shapes required; no allocation).
  void CopyFrom(const RecurrentState& other);

 private:
  RecurrentState() = default;

  int64_t conv_floats_ = 0, ssm_floats_ = 0;
  std::vector<std::vector<float>> conv_;  // [n_gdn_layers][C * (Kc-1)]
  std::vector<std::vector<float>> ssm_;   // [n_gdn_layers][Hv * Dv * Dk]
};

}  // namespace qwenrt
