// RecurrentState: what the gated-delta-net layers carry from token to token for one sequence — the
// conv window and the delta-rule matrix per GDN layer, f32, plain data. Its size does not depend on
// the position; it cannot be truncated, only snapshotted (Copy) and restored (move-assign or
// CopyFrom). Thread safety: one thread per RecurrentState at a time.
//
// Device residency (the CUDA backend, forward_cuda.h): a forward pass on the GPU leaves the newest
// contents on the device and marks the state *pending* there, so decode steps move no state over
// the bus. The accessors never fetch: while pending() the host buffers are stale (a copy made on
// the device has none yet), and whoever reads or writes them calls Fetch() first. A Session does
// that before it saves; code that only hands the state to Forward, Copy, CopyFrom, Reset or a move
// needs to do nothing (they follow the device copy).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/lineage.h"
#include "base/status.h"
#include "model/config.h"

namespace qwenrt {

class RecurrentState;

// A device that holds newer contents of RecurrentStates than their host buffers (the CUDA state
// mirror, cuda_state.h). A state pending on a mirror calls Fetch when asked to, Clone when copied,
// Forget when its contents are replaced or it dies, and Moved when it is moved. All are called on
// the thread using the state.
class StateMirror {
 public:
  virtual ~StateMirror() = default;
  // Writes the newer contents into state.host_conv()/host_ssm() and clears its pending mark. On a
  // device error the buffers are filled with NaN (loud, never silently stale) and DEVICE returned.
  virtual Status Fetch(RecurrentState& state) = 0;
  virtual void Forget(const RecurrentState& state) = 0;
  // `to` now stands where `from` stood (a move): the mirror re-keys its copy.
  virtual void Moved(const RecurrentState& from, const RecurrentState& to) = 0;
  // Gives `to` a copy of `from`'s pending contents: on the device when there is room (`to` becomes
  // pending here), else fetched straight into `to`'s host buffers (`from` stays pending). Error:
  // DEVICE (then `to` is NaN).
  virtual Status Clone(const RecurrentState& from, RecurrentState& to) = 0;
};

class RecurrentState {
 public:
  // Zeroed state (the state at position 0) for `config`'s GDN layers. Error: OutOfMemory.
  // mtp: also hold the MTP draft head's carried row (mtp_hidden(); the model needs an MTP block).
  static StatusOr<RecurrentState> Create(const ModelConfig& config, bool mtp = false);
  // The sizes Create allocates by (per GDN layer), and the whole state's bytes: EstimateMemory
  // (session/memory_estimate.h) uses the same functions so that it cannot drift from Create.
  static int64_t ConvFloats(const ModelConfig& config) {
    return config.conv_channels() * (config.conv_kernel - 1);
  }
  static int64_t SsmFloats(const ModelConfig& config) {
    return config.ssm_hv * config.ssm_dv * config.ssm_dk;
  }
  static size_t BytesFor(const ModelConfig& config) {
    return static_cast<size_t>(config.n_gdn_layers() * (ConvFloats(config) + SsmFloats(config))) *
           sizeof(float);
  }

  RecurrentState(RecurrentState&& other) noexcept;             // pending contents move along
  RecurrentState& operator=(RecurrentState&& other) noexcept;  // ours are forgotten
  ~RecurrentState();

  int64_t n_layers() const { return static_cast<int64_t>(conv_.size()); }  // GDN layers
  int64_t conv_floats() const { return conv_floats_; }                     // per layer: C * (Kc-1)
  int64_t ssm_floats() const { return ssm_floats_; }  // per layer: Hv * Dv * Dk

  // GDN layer `g` (0-based among GDN layers); the host buffers, valid only when !pending().
  // conv: [C, Kc-1]: for each channel the last Kc-1 pre-convolution inputs, oldest first.
  float* conv(int64_t g) {
    assert(pending_ == nullptr &&
           "RecurrentState: Fetch() a pending state before using its buffers");
    lineage_.Renew();
    return conv_[g].data();
  }
  const float* conv(int64_t g) const {
    assert(pending_ == nullptr &&
           "RecurrentState: Fetch() a pending state before using its buffers");
    return conv_[g].data();
  }
  // ssm: [Hv, Dv, Dk]: S_h[i][j] (key i, value j) at h*Dv*Dk + j*Dk + i.
  float* ssm(int64_t g) {
    assert(pending_ == nullptr &&
           "RecurrentState: Fetch() a pending state before using its buffers");
    lineage_.Renew();
    return ssm_[g].data();
  }
  const float* ssm(int64_t g) const {
    assert(pending_ == nullptr &&
           "RecurrentState: Fetch() a pending state before using its buffers");
    return ssm_[g].data();
  }

  // The mirror holding newer contents than the host buffers, or nullptr.
  const StateMirror* pending() const { return pending_; }
  // Brings pending contents to the host buffers (no-op when not pending). Error: DEVICE, and then
  // the contents are NaN.
  Status Fetch();

  // Device mirrors only (StateMirror): the contents now live on `mirror` (nullptr: the host buffers
  // are current again); the lineage is kept, since they are the contents the mirror ran to.
  void SetPending(StateMirror* mirror) { pending_ = mirror; }
  // Device mirrors only: the contents advanced on the device (a forward ran), so they get a new
  // name.
  void RenewLineage() { lineage_.Renew(); }
  // Device mirrors only: the host buffers whatever the pending mark, without renewing the lineage.
  // A copy made on a device (Clone) has no host buffers until these size them.
  float* host_conv(int64_t g) {
    conv_[g].resize(static_cast<size_t>(conv_floats_));
    return conv_[g].data();
  }
  float* host_ssm(int64_t g) {
    ssm_[g].resize(static_cast<size_t>(ssm_floats_));
    return ssm_[g].data();
  }

  // The MTP draft head's state at this position (model/mtp.h): the trunk's post-norm hidden row of
  // the last position, [E], which the head fuses with the next token's embedding. It is carried
  // like the GDN state (checkpoints, forks, save/load) because a cut-back KV cannot give it back.
  // Host-only (the CUDA backend does not run the head); empty without MTP.
  bool has_mtp() const { return !mtp_hidden_.empty(); }
  int64_t mtp_floats() const { return static_cast<int64_t>(mtp_hidden_.size()); }
  float* mtp_hidden() { return mtp_hidden_.data(); }
  const float* mtp_hidden() const { return mtp_hidden_.data(); }

  // Names the contents (lineage.h): renewed by the mutable views, Reset and CopyFrom; moved with
  // them.
  uint64_t lineage() const { return lineage_.id(); }

  void Reset();  // back to the position-0 state (all zeros); pending contents are dropped
  size_t bytes() const;
  // Deep copy; of a pending state, made on its device when there is room. Errors: OutOfMemory,
  // DEVICE.
  StatusOr<RecurrentState> Copy() const;
  // Copies `other`'s contents into this state (same shapes required; reuses this memory); of a
  // pending `other`, on its device when there is room. Error: DEVICE (this state is then NaN).
  Status CopyFrom(const RecurrentState& other);

 private:
  RecurrentState() = default;
  void ForgetPending();  // contents replaced: tell the mirror, without fetching

  int64_t conv_floats_ = 0, ssm_floats_ = 0;
  std::vector<std::vector<float>> conv_;  // [n_gdn_layers][C * (Kc-1)]
  std::vector<std::vector<float>> ssm_;   // [n_gdn_layers][Hv * Dv * Dk]
  std::vector<float> mtp_hidden_;         // [E] with MTP, else empty
  Lineage lineage_;
  StateMirror* pending_ = nullptr;  // newer contents on a device (SetPending)
};

}  // namespace qwenrt
