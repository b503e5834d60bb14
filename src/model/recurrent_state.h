// RecurrentState: what the gated-delta-net layers carry from token to token for one sequence — the
// conv window and the delta-rule matrix per GDN layer, f32, plain data. Its size does not depend on
// the position; it cannot be truncated, only snapshotted (Copy) and restored (move-assign or
// CopyFrom). Thread safety: one thread per RecurrentState at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "base/lineage.h"
#include "base/status.h"

namespace qwenrt {

class RecurrentState;

// A device that holds newer contents of RecurrentStates than their host buffers (forward_cuda.cpp
// runs decode steps, and takes checkpoint copies, without bringing the state to the host). While a
// state is pending on a mirror, the state calls Pull before anything reads or writes its host
// buffers, Forget when its contents are replaced or it dies, Moved when it is moved. All are called
// on the thread using the state.
class StateMirror {
 public:
  virtual ~StateMirror() = default;
  // Writes the newer contents into state.host_conv()/host_ssm() (already sized). Cannot fail to the
  // caller: on a device error the buffers are filled with NaN (loud, never silently stale) and the
  // mirror reports the error from its next run.
  virtual void Pull(RecurrentState& state) = 0;
  virtual void Forget(const RecurrentState& state) = 0;
  // `to` now stands where `from` stood (a move): the mirror re-keys its copy.
  virtual void Moved(const RecurrentState& from, const RecurrentState& to) = 0;
  // Gives `to` a copy of `from`'s contents (pending here) on the device; `to` becomes pending here.
  // False when the mirror cannot (out of device memory): the caller copies through the host.
  virtual bool Clone(const RecurrentState& from, RecurrentState& to) = 0;
};

class RecurrentState {
 public:
  // Zeroed state (the state at position 0) for `config`'s GDN layers. Error: OutOfMemory.
  static StatusOr<RecurrentState> Create(const ModelConfig& config);

  RecurrentState(RecurrentState&& other) noexcept;             // pending contents move along
  RecurrentState& operator=(RecurrentState&& other) noexcept;  // ours are forgotten
  ~RecurrentState();

  int64_t n_layers() const { return static_cast<int64_t>(conv_.size()); }  // GDN layers
  int64_t conv_floats() const { return conv_floats_; }  // per layer: C * (Kc-1)
  int64_t ssm_floats() const { return ssm_floats_; }    // per layer: Hv * Dv * Dk

  // GDN layer `g` (0-based among GDN layers). Every accessor first pulls pending device contents.
  // conv: [C, Kc-1]: for each channel the last Kc-1 pre-convolution inputs, oldest first.
  float* conv(int64_t g) {
    Sync();
    lineage_.Renew();
    return conv_[g].data();
  }
  const float* conv(int64_t g) const {
    Sync();
    return conv_[g].data();
  }
  // ssm: [Hv, Dv, Dk]: S_h[i][j] (key i, value j) at h*Dv*Dk + j*Dk + i.
  float* ssm(int64_t g) {
    Sync();
    lineage_.Renew();
    return ssm_[g].data();
  }
  const float* ssm(int64_t g) const {
    Sync();
    return ssm_[g].data();
  }

  // Device mirrors only (StateMirror): the contents now live on `mirror` (which must Forget or Pull
  // before it dies); the lineage is kept, since they are the contents the mirror ran to.
  void SetPending(StateMirror* mirror) const;
  // Device mirrors only: the contents advanced on the device (a forward ran), so they get a new name.
  void RenewLineage() { lineage_.Renew(); }
  const StateMirror* pending() const { return pending_; }
  void Sync() const;  // pulls pending contents now, if any
  // For StateMirror::Pull: the host buffers, without syncing or renewing the lineage. A copy made on
  // a device (Clone) has no host buffers until its first Pull sizes them.
  float* host_conv(int64_t g) {
    conv_[g].resize(static_cast<size_t>(conv_floats_));
    return conv_[g].data();
  }
  float* host_ssm(int64_t g) {
    ssm_[g].resize(static_cast<size_t>(ssm_floats_));
    return ssm_[g].data();
  }

  // Names the contents (lineage.h): renewed by the mutable views, Reset and CopyFrom; moved with them.
  uint64_t lineage() const { return lineage_.id(); }

  void Reset();  // back to the position-0 state (all zeros)
  size_t bytes() const;
  StatusOr<RecurrentState> Copy() const;  // deep copy; error: OutOfMemory
  // Copies `other`'s contents into this state (same shapes required; no allocation).
  void CopyFrom(const RecurrentState& other);

 private:
  RecurrentState() = default;
  void ForgetPending();  // contents replaced: tell the mirror, without pulling

  int64_t conv_floats_ = 0, ssm_floats_ = 0;
  std::vector<std::vector<float>> conv_;  // [n_gdn_layers][C * (Kc-1)]
  std::vector<std::vector<float>> ssm_;   // [n_gdn_layers][Hv * Dv * Dk]
  Lineage lineage_;
  mutable StateMirror* pending_ = nullptr;  // newer contents on a device (SetPending)
};

}  // namespace qwenrt
