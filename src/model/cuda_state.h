// CudaStateMirror: the device side of one CUDA context's KV cache and recurrent state
// (forward_cuda.h). KvCache and RecurrentState stay the host-side truth that sessions checkpoint,
// fork and save; this keeps a device mirror of the last (kv, rec) the context ran, knows it is
// current by their lineage (lineage.h), and re-uploads a stale one (only the KV rows it lacks when
// the cache was merely truncated or grown). New KV rows go back to the host after every run (a few
// KiB per token); the recurrent state (MiBs) stays here, *pending* (the StateMirror protocol of
// recurrent_state.h), and so do checkpoint copies of it (Clone), each in its own device buffers.
// Destroying the mirror fetches every state still pending on it. Plain C++ (no CUDA headers); used
// only in CUDA builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "model/cuda_buffers.h"
#include "model/kv_cache.h"
#include "model/recurrent_state.h"
#include "ops/cuda_kernels.h"

namespace qwenrt {

class CudaStateMirror final : public StateMirror {
 public:
  CudaStateMirror() = default;
  CudaStateMirror(const CudaStateMirror&) = delete;
  CudaStateMirror& operator=(const CudaStateMirror&) = delete;
  ~CudaStateMirror() override;  // fetches every state pending here (a failure leaves it NaN)

  // Device buffers for `config`'s state and staging for runs of up to `max_ubatch` tokens, all
  // enqueued on `stream` (which must outlive the mirror). Error: DEVICE.
  Status Init(const ModelConfig& config, int64_t max_ubatch, cuda::Stream stream);

  // A run of `rec`, in order: Adopt (before anything may be left half-done), Upload, the launches
  // on conv()/ssm()/k()/v(), FetchKvRows of the new rows, then Advanced, or Failed if any step
  // failed. Adopt: the live buffers become `rec`'s. Another state pending in them is fetched first;
  // a device copy of `rec` (a restored checkpoint) is copied in; a state pending on another mirror
  // is fetched (it is uploaded by Upload). Error: DEVICE (rec is as it was).
  Status Adopt(RecurrentState& rec);
  // Brings the mirror up to date with (kv, rec), growing the KV buffers to kv.capacity().
  Status Upload(KvCache& kv, const RecurrentState& rec);
  // Copies KV rows [from, from + n) of every attention layer back to the host cache.
  Status FetchKvRows(KvCache& kv, int64_t from, int64_t n);
  // The run succeeded: kv (committed) and rec (advanced: a new lineage) are what the mirror holds;
  // rec stays pending here.
  void Advanced(const KvCache& kv, RecurrentState& rec);
  // The run failed with `s`: the mirror is dropped (it may be half-written). When the launches had
  // started (`launched`) while rec's only copy was the device one, rec is lost: NaN, and the DEVICE
  // error says so (a Session restores a checkpoint). Returns the error to report.
  Status Failed(RecurrentState& rec, bool launched, Status s);

  // Device buffers the launches read and advance: GDN slot g, attention slot a.
  float* conv(int64_t g) { return conv_state_.f() + g * conv_floats_; }  // [C, Kc-1]
  float* ssm(int64_t g) { return ssm_state_.f() + g * ssm_floats_; }     // [Hv, Dv, Dk]
  float* k(int64_t a) { return k_[a].f(); }                              // [kv_capacity, Hkv, Dh]
  float* v(int64_t a) { return v_[a].f(); }                              // [kv_capacity, Hkv, Dh]
  int64_t kv_capacity() const { return kv_capacity_; }  // changes when Upload grows the buffers

  // StateMirror (recurrent_state.h).
  Status Fetch(RecurrentState& rec) override;
  void Forget(const RecurrentState& rec) override;
  void Moved(const RecurrentState& from, const RecurrentState& to) override;
  Status Clone(const RecurrentState& from, RecurrentState& to) override;

 private:
  struct DeviceState {
    DeviceArray conv, ssm;  // [n_gdn_layers, conv_floats] / [n_gdn_layers, ssm_floats]
  };
  // The device buffers holding `state`'s pending contents: the live ones or its copy's.
  std::pair<float*, float*> Buffers(const RecurrentState& state) {
    if (&state == pending_rec_) return {conv_state_.f(), ssm_state_.f()};
    const DeviceState& d = copies_.at(&state);
    return {d.conv.f(), d.ssm.f()};
  }
  // Device-to-device copy of one state's two arrays (conv windows, delta-rule matrices).
  Status CopyState(float* dst_conv, float* dst_ssm, const float* src_conv, const float* src_ssm) {
    QWENRT_RETURN_IF_ERROR(cuda::CopyOnDevice(dst_conv, src_conv, conv_state_.bytes(), stream_));
    return cuda::CopyOnDevice(dst_ssm, src_ssm, ssm_state_.bytes(), stream_);
  }
  // Device state arrays [G, cf] + [G, sf] into rec's host buffers, through the pinned staging.
  Status CopyToHostState(const float* src_conv, const float* src_ssm, RecurrentState& rec);

  cuda::Stream stream_ = nullptr;
  int64_t max_ubatch_ = 0;
  int64_t conv_floats_ = 0, ssm_floats_ = 0;  // per GDN layer
  PinnedArray kv_stage_;  // [n_attn_layers, 2, Tm, Hkv * Dh] new K/V rows on their way to the host
  PinnedArray state_stage_;  // [n_gdn_layers, conv_floats] then [n_gdn_layers, ssm_floats]

  // The mirror of the last (kv, rec) run here.
  std::vector<DeviceArray> k_, v_;      // [n_attn_layers][kv_capacity_ * row]
  int64_t kv_capacity_ = 0;             // positions allocated per layer
  int64_t kv_rows_ = 0;                 // valid mirrored positions
  uint64_t kv_lineage_ = 0;             // 0: nothing mirrored
  DeviceArray conv_state_, ssm_state_;  // [n_gdn_layers, conv_floats] / [n_gdn_layers, ssm_floats]
  uint64_t rec_lineage_ = 0;
  // States whose newest contents live only here: the live one, in conv_state_ / ssm_state_ (the one
  // runs advance), and copies made on the device (checkpoints), each in its own buffers.
  // rec_lineage_ names what the live buffers hold when no state is pending on them.
  const RecurrentState* pending_rec_ = nullptr;
  std::map<const RecurrentState*, DeviceState> copies_;
};

}  // namespace qwenrt
