// The device mirror of a CUDA context's KV cache and recurrent state (cuda_state.h).
#ifdef QWENRT_HAVE_CUDA

#include "model/cuda_state.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace qwenrt {
namespace {

// A state whose only copy was lost on the device: NaN, so nothing computes on silently stale data.
void Poison(RecurrentState& rec) {
  for (int64_t g = 0; g < rec.n_layers(); ++g) {
    std::fill_n(rec.host_conv(g), rec.conv_floats(), std::nanf(""));
    std::fill_n(rec.host_ssm(g), rec.ssm_floats(), std::nanf(""));
  }
  rec.RenewLineage();
}

}  // namespace

CudaStateMirror::~CudaStateMirror() {
  // Hand every state whose newest contents live here to the host first. (Every state here was
  // handed over non-const, by Advanced or Clone; the map keys are const only for lookups.)
  if (pending_rec_ != nullptr) (void)Fetch(*const_cast<RecurrentState*>(pending_rec_));
  std::vector<const RecurrentState*> copies;
  for (const auto& [state, buffers] : copies_) copies.push_back(state);
  for (const RecurrentState* state : copies) (void)Fetch(*const_cast<RecurrentState*>(state));
}

Status CudaStateMirror::Init(const ModelConfig& c, int64_t max_ubatch, cuda::Stream stream) {
  stream_ = stream;
  max_ubatch_ = max_ubatch;
  conv_floats_ = c.conv_channels() * (c.conv_kernel - 1);
  ssm_floats_ = c.ssm_hv * c.ssm_dv * c.ssm_dk;
  const int64_t G = c.n_gdn_layers(), KvD = c.n_head_kv * c.head_dim;
  if (G > 0) {
    QWENRT_RETURN_IF_ERROR(conv_state_.AllocateFloats(G * conv_floats_));
    QWENRT_RETURN_IF_ERROR(ssm_state_.AllocateFloats(G * ssm_floats_));
    QWENRT_RETURN_IF_ERROR(state_stage_.Allocate(conv_state_.bytes() + ssm_state_.bytes()));
  }
  QWENRT_RETURN_IF_ERROR(kv_stage_.Allocate(
      static_cast<size_t>(2 * c.n_attn_layers() * max_ubatch * KvD) * sizeof(float)));
  k_.resize(static_cast<size_t>(c.n_attn_layers()));
  v_.resize(static_cast<size_t>(c.n_attn_layers()));
  return OkStatus();
}

Status CudaStateMirror::Adopt(RecurrentState& rec) {
  // Another state's newest contents are in the live buffers: fetch them before they are reused.
  if (pending_rec_ != nullptr && pending_rec_ != &rec) {
    QWENRT_RETURN_IF_ERROR(Fetch(*const_cast<RecurrentState*>(pending_rec_)));
  }
  if (rec.pending() == this &&
      &rec != pending_rec_) {  // a device copy (a restored checkpoint): make it live
    const DeviceState& d = copies_.at(&rec);
    rec_lineage_ = 0;
    // On failure rec is still pending on its copy.
    QWENRT_RETURN_IF_ERROR(CopyState(conv_state_.f(), ssm_state_.f(), d.conv.f(), d.ssm.f()));
    copies_.erase(&rec);
    pending_rec_ = &rec;
  } else if (rec.pending() != nullptr && rec.pending() != this) {
    QWENRT_RETURN_IF_ERROR(rec.Fetch());  // pending on another context: to the host, then Upload
  }
  return OkStatus();
}

Status CudaStateMirror::Upload(KvCache& kv, const RecurrentState& rec) {
  if (rec.pending() != this &&
      rec.lineage() != rec_lineage_) {  // (Adopt fetched it if pending elsewhere)
    rec_lineage_ = 0;
    // Through the pinned staging: one copy per state array instead of two per layer.
    const size_t cf = static_cast<size_t>(rec.conv_floats()),
                 sf = static_cast<size_t>(rec.ssm_floats());
    const int64_t G = rec.n_layers();
    float* conv = state_stage_.as<float>();
    float* ssm = conv + G * cf;
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));  // the staging may still be in use
    for (int64_t g = 0; g < G; ++g) {
      std::copy_n(rec.conv(g), cf, conv + g * cf);
      std::copy_n(rec.ssm(g), sf, ssm + g * sf);
    }
    QWENRT_RETURN_IF_ERROR(
        cuda::CopyToDevice(conv_state_.f(), conv, G * cf * sizeof(float), stream_));
    QWENRT_RETURN_IF_ERROR(
        cuda::CopyToDevice(ssm_state_.f(), ssm, G * sf * sizeof(float), stream_));
    rec_lineage_ = rec.lineage();
  }
  const int64_t row = kv.row_floats();
  if (kv.lineage() != kv_lineage_) kv_rows_ = 0;
  kv_rows_ = std::min(kv_rows_, kv.size());  // a truncated cache keeps its prefix
  kv_lineage_ = 0;                           // until the rows below are in place
  if (kv.capacity() > kv_capacity_ && kv.n_layers() > 0) {
    // The host cache grows a page at a time; the device buffers double (each growth copies them).
    const int64_t new_cap = std::min(kv.max_tokens(), std::max(kv.capacity(), 2 * kv_capacity_));
    const size_t bytes = static_cast<size_t>(new_cap * row) * sizeof(float);
    for (size_t a = 0; a < k_.size(); ++a) {  // grow, keeping the mirrored rows
      DeviceArray nk, nv;
      QWENRT_RETURN_IF_ERROR(nk.Allocate(bytes));
      QWENRT_RETURN_IF_ERROR(nv.Allocate(bytes));
      const size_t keep = static_cast<size_t>(kv_rows_ * row) * sizeof(float);
      if (keep > 0) {
        QWENRT_RETURN_IF_ERROR(cuda::CopyOnDevice(nk.f(), k_[a].f(), keep, stream_));
        QWENRT_RETURN_IF_ERROR(cuda::CopyOnDevice(nv.f(), v_[a].f(), keep, stream_));
      }
      // The old buffers may still be read by the copies: wait before they are freed.
      QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
      k_[a] = std::move(nk);
      v_[a] = std::move(nv);
    }
    kv_capacity_ = new_cap;
  }
  // The rows the mirror lacks, from the host pages through the pinned staging, a ubatch at a time.
  float* stage = kv_stage_.as<float>();
  for (int64_t p0 = kv_rows_; p0 < kv.size(); p0 += max_ubatch_) {
    const int64_t m = std::min(max_ubatch_, kv.size() - p0);
    const size_t off = static_cast<size_t>(p0 * row), len = static_cast<size_t>(m * row);
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));  // the staging may still be in use
    for (int64_t a = 0; a < kv.n_layers(); ++a) {
      float* ks = stage + 2 * a * len;
      float* vs = ks + len;
      kv.ReadRows(a, p0, m, ks, vs);
      QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(k_[a].f() + off, ks, len * sizeof(float), stream_));
      QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(v_[a].f() + off, vs, len * sizeof(float), stream_));
    }
  }
  kv_rows_ = kv.size();
  kv_lineage_ = kv.lineage();
  return OkStatus();
}

// Copies KV rows [from, from + n) of every attention layer to the host cache: all of a piece go to
// the pinned staging buffer with one synchronisation, then into the cache's own memory.
Status CudaStateMirror::FetchKvRows(KvCache& kv, int64_t from, int64_t n) {
  const int64_t row = kv.row_floats(), A = kv.n_layers();
  float* stage = kv_stage_.as<float>();
  for (int64_t p0 = from; p0 < from + n; p0 += max_ubatch_) {
    const int64_t m = std::min(max_ubatch_, from + n - p0);
    const size_t off = static_cast<size_t>(p0 * row), len = static_cast<size_t>(m * row);
    for (int64_t a = 0; a < A; ++a) {
      QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(stage + 2 * a * len, k_[a].f() + off,
                                                   len * sizeof(float), stream_));
      QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(stage + (2 * a + 1) * len, v_[a].f() + off,
                                                   len * sizeof(float), stream_));
    }
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
    for (int64_t a = 0; a < A; ++a)
      kv.WriteRows(a, p0, m, stage + 2 * a * len, stage + (2 * a + 1) * len);
  }
  return OkStatus();
}

void CudaStateMirror::Advanced(const KvCache& kv, RecurrentState& rec) {
  kv_rows_ = kv.size();
  kv_lineage_ = kv.lineage();
  rec.RenewLineage();  // advanced: a new name, held (pending) here
  rec.SetPending(this);
  pending_rec_ = &rec;
  rec_lineage_ = rec.lineage();
}

Status CudaStateMirror::Failed(RecurrentState& rec, bool launched, Status s) {
  kv_lineage_ = rec_lineage_ = 0;  // the mirror may be half-written: forget it
  kv_rows_ = 0;
  if (launched && rec.pending() == this) {
    // Its only copy was the device one, now half-advanced: lost. Make that loud (the session
    // restores a checkpoint on DEVICE errors).
    rec.SetPending(nullptr);
    pending_rec_ = nullptr;
    Poison(rec);
    return Status(StatusCode::kDevice,
                  "CUDA forward failed and the recurrent state was lost: " + s.message());
  }
  return s;  // the host state is as it was
}

Status CudaStateMirror::CopyToHostState(const float* src_conv, const float* src_ssm,
                                        RecurrentState& rec) {
  // Both state arrays in two copies to the pinned staging, one synchronisation, then into the
  // state's own (pageable) memory: several times faster than per-layer pageable copies.
  const size_t cf = static_cast<size_t>(conv_floats_), sf = static_cast<size_t>(ssm_floats_);
  const int64_t G = rec.n_layers();
  float* conv = state_stage_.as<float>();
  float* ssm = conv + G * cf;
  QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(conv, src_conv, G * cf * sizeof(float), stream_));
  QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(ssm, src_ssm, G * sf * sizeof(float), stream_));
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  for (int64_t g = 0; g < G; ++g) {
    std::copy_n(conv + g * cf, cf, rec.host_conv(g));
    std::copy_n(ssm + g * sf, sf, rec.host_ssm(g));
  }
  return OkStatus();
}

Status CudaStateMirror::Fetch(RecurrentState& rec) {
  const auto [src_conv, src_ssm] = Buffers(rec);
  rec.SetPending(nullptr);  // the host buffers are the truth from here on, whatever happens
  const Status s = CopyToHostState(src_conv, src_ssm, rec);
  const bool live = &rec == pending_rec_;
  if (live) {
    pending_rec_ = nullptr;  // the live buffers still hold these contents (rec_lineage_ names them)
  } else {
    copies_.erase(&rec);
  }
  if (s.ok()) return OkStatus();
  Poison(rec);
  if (live) rec_lineage_ = 0;
  return Status(
      StatusCode::kDevice,
      "CUDA forward: fetching the recurrent state failed (it was replaced by NaN): " + s.message());
}

void CudaStateMirror::Forget(const RecurrentState& rec) {
  if (pending_rec_ == &rec) {
    pending_rec_ = nullptr;
    rec_lineage_ = 0;  // the live buffers hold contents nobody names any more
  } else {
    copies_.erase(&rec);
  }
}

void CudaStateMirror::Moved(const RecurrentState& from, const RecurrentState& to) {
  if (pending_rec_ == &from) {
    pending_rec_ = &to;
    return;
  }
  auto node = copies_.extract(&from);
  node.key() = &to;
  copies_.insert(std::move(node));
}

// A checkpoint (or a restore) without leaving the device: one device-to-device copy of the state.
// Without room for the copy (or if it fails) `to` gets the contents through the host instead.
Status CudaStateMirror::Clone(const RecurrentState& from, RecurrentState& to) {
  const auto [src_conv, src_ssm] = Buffers(from);
  float* dst_conv = conv_state_.f();
  float* dst_ssm = ssm_state_.f();
  bool room = true;
  if (&to == pending_rec_) {
    rec_lineage_ = 0;  // the live buffers are rewritten: `to` is pending, so no lineage is needed
  } else {
    auto it = copies_.find(&to);
    if (it == copies_.end()) {
      DeviceState d;
      room = d.conv.Allocate(conv_state_.bytes()).ok() && d.ssm.Allocate(ssm_state_.bytes()).ok();
      if (room) it = copies_.emplace(&to, std::move(d)).first;
    }
    if (room) {
      dst_conv = it->second.conv.f();
      dst_ssm = it->second.ssm.f();
    }
  }
  if (room && CopyState(dst_conv, dst_ssm, src_conv, src_ssm).ok()) {
    to.SetPending(this);
    return OkStatus();
  }
  // Through the host: `to` stops being held here, `from` stays pending.
  Forget(to);
  to.SetPending(nullptr);
  const Status s = CopyToHostState(src_conv, src_ssm, to);
  if (s.ok()) return OkStatus();
  Poison(to);
  return Status(StatusCode::kDevice,
                "CUDA forward: copying the recurrent state failed (the copy was replaced "
                "by NaN): " +
                    s.message());
}

}  // namespace qwenrt

#endif  // QWENRT_HAVE_CUDA
