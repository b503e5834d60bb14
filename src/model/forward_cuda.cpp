// The Qwen3.5 forward pass on the GPU (forward_cuda.h). Read forward.cpp first: the layer functions
// here are the same list of ops, each a launch on device buffers (cuda_kernels.h) on one stream.
//
//   x = token_embd[tokens]                     (decoded on the host, one row per token, uploaded)
//   for each layer: x += GatedDeltaLayer or FullAttentionLayer (RMSNorm(x, attn_norm))
//                   x += Mlp or Moe (RMSNorm(x, post_attention_norm))
//   logits = output · RMSNorm(x, output_norm)
//
// MoE routing (top-k over X router logits per token) runs on the host between two launches: the
// router logits come down, the expert grouping goes up. Everything else stays on the device.
#ifdef QWENRT_HAVE_CUDA

#include "model/forward_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ops/cuda_device.h"
#include "ops/cuda_kernels.h"
#include "ops/quant.h"

namespace qwenrt {
namespace {

// Move-only owner of one device allocation of floats (or bytes).
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
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
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

// The model's tensor data on the device: one upload of the GGUF data section, so a host weight
// pointer maps to the device by its offset. Shared by all CudaForwards of one Model.
class DeviceWeights {
 public:
  static StatusOr<std::shared_ptr<DeviceWeights>> For(const Model& model) {
    static std::mutex mu;
    static std::map<const Model*, std::weak_ptr<DeviceWeights>> cache;
    std::lock_guard<std::mutex> lock(mu);
    // A live entry belongs to this very Model: a context holding it keeps its Model alive.
    if (auto hit = cache[&model].lock()) return hit;
    auto w = std::shared_ptr<DeviceWeights>(new DeviceWeights());
    const gguf::File& f = model.gguf();
    w->host_base_ = f.bytes() + f.data_offset();
    w->size_ = static_cast<size_t>(f.size() - f.data_offset());
    QWENRT_RETURN_IF_ERROR(w->data_.Allocate(w->size_));
    QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(w->data_.u8(), w->host_base_, w->size_, nullptr));
    const ModelConfig& c = model.config();
    if (c.rope_pair_uses_pos.size() > 0) {
      std::vector<uint8_t> pairs(c.rope_pair_uses_pos.begin(), c.rope_pair_uses_pos.end());
      QWENRT_RETURN_IF_ERROR(w->rope_pairs_.Allocate(pairs.size()));
      QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(w->rope_pairs_.u8(), pairs.data(), pairs.size(), nullptr));
    }
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(nullptr));
    cache[&model] = w;
    return w;
  }

  // The device address of host weight bytes [p, p + n), or nullptr if they are not in the data section.
  const uint8_t* Map(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(p);
    if (b < host_base_ || b + n > host_base_ + size_) return nullptr;
    return data_.u8() + (b - host_base_);
  }
  const uint8_t* rope_pairs() const { return rope_pairs_.bytes() > 0 ? rope_pairs_.u8() : nullptr; }

 private:
  DeviceWeights() = default;
  const uint8_t* host_base_ = nullptr;
  size_t size_ = 0;
  DeviceArray data_;
  DeviceArray rope_pairs_;
};

// A weight matrix with its device address.
struct DevMatrix {
  gguf::Type type = gguf::Type::F32;
  int64_t cols = 0, rows = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
};

// Device activations for one ubatch of up to Tm tokens (same names and shapes as forward.h's).
struct DeviceActivations {
  DeviceArray x, xn, mix;                                           // [Tm, E]
  DeviceArray qkv, conv, z, alpha, beta, gq, gk, gv, go;            // gated delta net
  DeviceArray qg, q, k, v, att;                                     // full attention
  DeviceArray att_scratch;                                          // cuda::AttentionScratchFloats
  DeviceArray ff_gate, ff_up;                                       // [Tm, ff]
  DeviceArray router, xe, ye, yslot, shgate, moe_weights, moe_rows;  // MoE
  DeviceArray logits;                                               // [Tm or 1, V], grown on demand
};

class CudaForwardImpl final : public CudaForward, public StateMirror {
 public:
  CudaForwardImpl(const Model& model, int64_t max_ubatch) : model_(model), c_(model.config()), Tm_(max_ubatch) {}
  ~CudaForwardImpl() override {
    // Hand every state whose newest contents live here to the host first.
    if (pending_rec_ != nullptr) pending_rec_->Sync();
    std::vector<const RecurrentState*> copies;
    for (const auto& [state, buffers] : copies_) copies.push_back(state);
    for (const RecurrentState* state : copies) state->Sync();
    cuda::GraphDestroy(graph_);
    cuda::StreamDestroy(stream_);
  }

  Status Init();
  Status Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens, bool all_logits,
             float* logits) override;
  void Pull(RecurrentState& rec) override;
  void Forget(const RecurrentState& rec) override;
  void Moved(const RecurrentState& from, const RecurrentState& to) override;
  bool Clone(const RecurrentState& from, RecurrentState& to) override;

 private:
  Status Mirror(KvCache& kv, RecurrentState& rec);
  Status Ubatch(const int32_t* tokens, int64_t T, int64_t n_past, bool all_logits, float* logits_host);
  // The layer stack on a.x (-> a.x), at positions n_past (+ *pos_dev when given: graph capture).
  Status Layers(int64_t T, int64_t n_past, const int64_t* pos_dev);
  Status DecodeWithGraph(int64_t n_past);
  Status GatedDeltaLayer(const GatedDeltaWeights& w, int64_t T, float* conv_state, float* ssm_state);
  Status FullAttentionLayer(const AttentionWeights& w, int64_t T, int64_t n_past, const int64_t* pos_dev,
                            float* k_cache, float* v_cache);
  Status Mlp(const DenseFfnWeights& w, int64_t T);
  Status Moe(const MoeWeights& w, int64_t T);
  Status SwiGluFfn(const DevMatrix& gate, const DevMatrix& up, const DevMatrix& down, const float* x,
                   float* y, int64_t n);
  Status Logits(int64_t first, int64_t rows, float* logits_host);

  // Device views of host weights (checked once in Init: every weight lies in the data section).
  DevMatrix Dev(const WeightMatrix& w) const {
    return DevMatrix{w.type, w.cols, w.rows, weights_->Map(w.data, 1), w.row_bytes};
  }
  const float* Dev(const float* p) const { return reinterpret_cast<const float*>(weights_->Map(p, 4)); }
  cuda::MatMulTarget Target(const WeightMatrix& w, float* y) const {
    const DevMatrix d = Dev(w);
    return cuda::MatMulTarget{d.type, d.data, d.row_bytes, d.rows, y};
  }
  Status MatMul(const DevMatrix& w, const float* x, float* y, int64_t T) {
    return cuda::LaunchMatMul(w.type, w.data, w.row_bytes, w.cols, w.rows, x, y, T, stream_);
  }
  Status CheckWeightsMapped() const;
  Status FetchKvRows(KvCache& kv, int64_t from, int64_t n);
  // Device-to-device copy of one state's two arrays (conv windows, delta-rule matrices).
  Status CopyState(float* dst_conv, float* dst_ssm, const float* src_conv, const float* src_ssm) {
    QWENRT_RETURN_IF_ERROR(cuda::CopyOnDevice(dst_conv, src_conv, conv_state_.bytes(), stream_));
    return cuda::CopyOnDevice(dst_ssm, src_ssm, ssm_state_.bytes(), stream_);
  }
  // A state whose only copy was lost on the device: NaN, so nothing computes on silently stale data.
  static void Poison(RecurrentState& rec) {
    for (int64_t g = 0; g < rec.n_layers(); ++g) {
      std::fill_n(rec.host_conv(g), rec.conv_floats(), std::nanf(""));
      std::fill_n(rec.host_ssm(g), rec.ssm_floats(), std::nanf(""));
    }
    rec.RenewLineage();
  }

  const Model& model_;
  const ModelConfig& c_;
  const int64_t Tm_;
  cuda::Stream stream_ = nullptr;
  std::shared_ptr<DeviceWeights> weights_;
  DeviceActivations a_;
  PinnedArray embed_host_;   // [Tm, E] token rows decoded on the host
  PinnedArray router_host_;  // [Tm, X] router logits brought down for routing
  PinnedArray moe_host_;     // [Tm * K] f32 weights, then [2 * Tm * K] int32 gather/scatter rows
  PinnedArray kv_stage_;     // [n_attn_layers, 2, Tm, Hkv * Dh] new K/V rows on their way to the host
  PinnedArray logits_stage_; // [V] last-token logits on their way to the caller (decode)
  PinnedArray state_stage_;  // [n_gdn_layers, conv_floats] then [n_gdn_layers, ssm_floats]
  std::vector<int32_t> ids_, slots_, expert_begin_;  // host MoE grouping (forward.cpp's Moe)
  std::vector<float> route_weights_;

  // The device mirror of the last (kv, rec) this context ran (forward_cuda.h).
  std::vector<DeviceArray> k_, v_;  // [n_attn_layers][kv_capacity_ * row]
  int64_t kv_capacity_ = 0;         // positions allocated per layer
  int64_t kv_rows_ = 0;             // valid mirrored positions
  uint64_t kv_lineage_ = 0;         // 0: nothing mirrored
  DeviceArray conv_state_, ssm_state_;  // [n_gdn_layers, conv_floats] / [n_gdn_layers, ssm_floats]
  uint64_t rec_lineage_ = 0;
  // With QWENRT_CUDA_GRAPHS=1, decode steps (T = 1, dense models) replay one captured graph of the
  // whole layer stack; the position comes from pos_dev_. Recaptured when the KV buffers move.
  bool use_graphs_ = false;
  cuda::Graph graph_ = nullptr;
  int64_t graph_kv_capacity_ = -1;
  DeviceArray pos_dev_;   // [1] int64: n_past of the step being replayed
  PinnedArray pos_host_;  // [1] int64 staging
  // States whose newest contents live only here (StateMirror): the live one, in conv_state_ /
  // ssm_state_ (the one runs advance), and copies made on the device (checkpoints), each in its own
  // buffers. rec_lineage_ names what the live buffers hold when no state is pending on them.
  const RecurrentState* pending_rec_ = nullptr;
  struct DeviceState {
    DeviceArray conv, ssm;
  };
  std::map<const RecurrentState*, DeviceState> copies_;
  // The device buffers holding `state`'s pending contents: the live ones or its copy's.
  std::pair<float*, float*> Buffers(const RecurrentState& state) {
    if (&state == pending_rec_) return {conv_state_.f(), ssm_state_.f()};
    const DeviceState& d = copies_.at(&state);
    return {d.conv.f(), d.ssm.f()};
  }
  Status pull_error_;  // a failed Pull, reported by the next Run
};

Status CudaForwardImpl::CheckWeightsMapped() const {
  const Weights& w = model_.weights();
  auto mat = [&](const WeightMatrix& m) {
    return m.rows == 0 || weights_->Map(m.data, static_cast<size_t>(m.rows - 1) * m.row_bytes +
                                                    static_cast<size_t>(RowBytes(m.type, m.cols))) != nullptr;
  };
  auto experts = [&](const ExpertMatrices& e) {
    return e.n_expert == 0 || mat(e.Expert(e.n_expert - 1));
  };
  auto vec = [&](const float* p, int64_t n) {
    return p == nullptr || weights_->Map(p, static_cast<size_t>(n) * sizeof(float)) != nullptr;
  };
  bool ok = mat(w.token_embd) && mat(w.output) && vec(w.output_norm, c_.n_embd);
  for (int64_t l = 0; l < c_.n_layer && ok; ++l) {
    const LayerWeights& lw = w.layers[l];
    ok = vec(lw.attn_norm, c_.n_embd) && vec(lw.post_attention_norm, c_.n_embd);
    if (c_.recurrent[l]) {
      const GatedDeltaWeights& g = lw.gdn;
      ok = ok && mat(g.qkv) && mat(g.gate) && mat(g.alpha) && mat(g.beta) && mat(g.out) &&
           vec(g.conv1d, c_.conv_channels() * c_.conv_kernel) && vec(g.dt_bias, c_.ssm_hv) &&
           vec(g.ssm_a, c_.ssm_hv) && vec(g.norm, c_.ssm_dv);
    } else {
      const AttentionWeights& a = lw.attn;
      ok = ok && mat(a.q) && mat(a.k) && mat(a.v) && mat(a.o) && vec(a.q_norm, c_.head_dim) &&
           vec(a.k_norm, c_.head_dim);
    }
    if (c_.moe) {
      const MoeWeights& m = lw.moe;
      ok = ok && mat(m.router) && experts(m.gate) && experts(m.up) && experts(m.down) &&
           mat(m.shexp_gate_inp) && mat(m.shexp_gate) && mat(m.shexp_up) && mat(m.shexp_down);
    } else {
      ok = ok && mat(lw.ffn.gate) && mat(lw.ffn.up) && mat(lw.ffn.down);
    }
  }
  if (!ok) return InternalError("CUDA forward: a weight lies outside the GGUF data section");
  return OkStatus();
}

Status CudaForwardImpl::Init() {
  if (!CudaAvailable()) return Unsupported("CUDA forward: no CUDA device is available");
  QWENRT_RETURN_IF_ERROR(cuda::StreamCreate(&stream_));
  QWENRT_ASSIGN_OR_RETURN(weights_, DeviceWeights::For(model_));
  QWENRT_RETURN_IF_ERROR(CheckWeightsMapped());
  if (c_.n_attn_layers() > 0 && c_.head_dim > 512) {
    return Unsupported("CUDA forward: head_dim {} > 512", c_.head_dim);
  }
  if (c_.n_gdn_layers() > 0 && c_.ssm_dk > 256) return Unsupported("CUDA forward: ssm Dk {} > 256", c_.ssm_dk);

  const int64_t Tm = Tm_, E = c_.n_embd, C = c_.conv_channels(), Cq = c_.ssm_hk * c_.ssm_dk,
                Cv = c_.ssm_hv * c_.ssm_dv, Hv = c_.ssm_hv, HD = c_.n_head * c_.head_dim,
                KvD = c_.n_head_kv * c_.head_dim, X = c_.n_expert, K = c_.n_expert_used;
  const int64_t ff = std::max({c_.n_ff, c_.n_ff_exp, c_.n_ff_shexp});
  DeviceActivations& a = a_;
  QWENRT_RETURN_IF_ERROR(a.x.AllocateFloats(Tm * E));
  QWENRT_RETURN_IF_ERROR(a.xn.AllocateFloats(Tm * E));
  QWENRT_RETURN_IF_ERROR(a.mix.AllocateFloats(Tm * E));
  if (c_.n_gdn_layers() > 0) {
    QWENRT_RETURN_IF_ERROR(a.qkv.AllocateFloats(Tm * C));
    QWENRT_RETURN_IF_ERROR(a.conv.AllocateFloats(Tm * C));
    QWENRT_RETURN_IF_ERROR(a.z.AllocateFloats(Tm * Cv));
    QWENRT_RETURN_IF_ERROR(a.alpha.AllocateFloats(Tm * Hv));
    QWENRT_RETURN_IF_ERROR(a.beta.AllocateFloats(Tm * Hv));
    QWENRT_RETURN_IF_ERROR(a.gq.AllocateFloats(Tm * Cq));
    QWENRT_RETURN_IF_ERROR(a.gk.AllocateFloats(Tm * Cq));
    QWENRT_RETURN_IF_ERROR(a.gv.AllocateFloats(Tm * Cv));
    QWENRT_RETURN_IF_ERROR(a.go.AllocateFloats(Tm * Cv));
    const int64_t G = c_.n_gdn_layers();
    QWENRT_RETURN_IF_ERROR(conv_state_.AllocateFloats(G * C * (c_.conv_kernel - 1)));
    QWENRT_RETURN_IF_ERROR(ssm_state_.AllocateFloats(G * Hv * c_.ssm_dv * c_.ssm_dk));
    QWENRT_RETURN_IF_ERROR(state_stage_.Allocate(conv_state_.bytes() + ssm_state_.bytes()));
  }
  if (c_.n_attn_layers() > 0) {
    QWENRT_RETURN_IF_ERROR(a.qg.AllocateFloats(Tm * 2 * HD));
    QWENRT_RETURN_IF_ERROR(a.q.AllocateFloats(Tm * HD));
    QWENRT_RETURN_IF_ERROR(a.k.AllocateFloats(Tm * KvD));
    QWENRT_RETURN_IF_ERROR(a.v.AllocateFloats(Tm * KvD));
    QWENRT_RETURN_IF_ERROR(a.att.AllocateFloats(Tm * HD));
    QWENRT_RETURN_IF_ERROR(a.att_scratch.AllocateFloats(cuda::AttentionScratchFloats(c_.n_head, c_.head_dim)));
  }
  QWENRT_RETURN_IF_ERROR(a.ff_gate.AllocateFloats(Tm * ff));
  QWENRT_RETURN_IF_ERROR(a.ff_up.AllocateFloats(Tm * ff));
  QWENRT_RETURN_IF_ERROR(embed_host_.Allocate(static_cast<size_t>(Tm * E) * sizeof(float)));
  if (c_.moe) {
    QWENRT_RETURN_IF_ERROR(a.router.AllocateFloats(Tm * X));
    QWENRT_RETURN_IF_ERROR(a.xe.AllocateFloats(Tm * E));
    QWENRT_RETURN_IF_ERROR(a.ye.AllocateFloats(Tm * E));
    QWENRT_RETURN_IF_ERROR(a.yslot.AllocateFloats(Tm * K * E));
    QWENRT_RETURN_IF_ERROR(a.shgate.AllocateFloats(Tm));
    QWENRT_RETURN_IF_ERROR(a.moe_weights.AllocateFloats(Tm * K));
    QWENRT_RETURN_IF_ERROR(a.moe_rows.Allocate(static_cast<size_t>(2 * Tm * K) * sizeof(int32_t)));
    QWENRT_RETURN_IF_ERROR(router_host_.Allocate(static_cast<size_t>(Tm * X) * sizeof(float)));
    QWENRT_RETURN_IF_ERROR(moe_host_.Allocate(static_cast<size_t>(3 * Tm * K) * sizeof(float)));
    try {
      ids_.resize(static_cast<size_t>(Tm * K));
      slots_.resize(static_cast<size_t>(Tm * K));
      expert_begin_.resize(static_cast<size_t>(X + 1));
      route_weights_.resize(static_cast<size_t>(Tm * K));
    } catch (const std::bad_alloc&) {
      return OutOfMemory("CUDA forward: out of host memory for MoE routing");
    }
  }
  QWENRT_RETURN_IF_ERROR(logits_stage_.Allocate(static_cast<size_t>(c_.n_vocab) * sizeof(float)));
  QWENRT_RETURN_IF_ERROR(kv_stage_.Allocate(static_cast<size_t>(2 * c_.n_attn_layers() * Tm * KvD) * sizeof(float)));
  k_.resize(static_cast<size_t>(c_.n_attn_layers()));
  v_.resize(static_cast<size_t>(c_.n_attn_layers()));
  QWENRT_RETURN_IF_ERROR(pos_dev_.Allocate(sizeof(int64_t)));
  QWENRT_RETURN_IF_ERROR(pos_host_.Allocate(sizeof(int64_t)));
  // Off by default: on an H200 at the 0.8B shape replay measured 3-5% slower than eager launches
  // (decode is bound by the kernels themselves, not by launching them; docs/performance.md).
  const char* env = std::getenv("QWENRT_CUDA_GRAPHS");
  use_graphs_ = !c_.moe && env != nullptr && std::string(env) == "1";  // MoE routes on the host
  return OkStatus();
}

// Brings the device mirror up to date with (kv, rec): see forward_cuda.h.
Status CudaForwardImpl::Mirror(KvCache& kv, RecurrentState& rec) {
  const KvCache& ckv = kv;
  const RecurrentState& crec = rec;
  if (rec.pending() != this && rec.lineage() != rec_lineage_) {  // (const reads below pull it)
    rec_lineage_ = 0;
    // Through the pinned staging: one copy per state array instead of two per layer.
    const size_t cf = static_cast<size_t>(crec.conv_floats()), sf = static_cast<size_t>(crec.ssm_floats());
    const int64_t G = crec.n_layers();
    float* conv = state_stage_.as<float>();
    float* ssm = conv + G * cf;
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));  // the staging may still be in use
    for (int64_t g = 0; g < G; ++g) {
      std::copy_n(crec.conv(g), cf, conv + g * cf);
      std::copy_n(crec.ssm(g), sf, ssm + g * sf);
    }
    QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(conv_state_.f(), conv, G * cf * sizeof(float), stream_));
    QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(ssm_state_.f(), ssm, G * sf * sizeof(float), stream_));
    rec_lineage_ = rec.lineage();
  }
  const int64_t row = kv.row_floats();
  if (kv.lineage() != kv_lineage_) kv_rows_ = 0;
  kv_rows_ = std::min(kv_rows_, kv.size());  // a truncated cache keeps its prefix
  kv_lineage_ = 0;                           // until the rows below are in place
  if (kv.capacity() > kv_capacity_ && kv.n_layers() > 0) {
    const size_t bytes = static_cast<size_t>(kv.capacity() * row) * sizeof(float);
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
    kv_capacity_ = kv.capacity();
  }
  if (kv_rows_ < kv.size()) {
    const size_t off = static_cast<size_t>(kv_rows_ * row);
    const size_t bytes = static_cast<size_t>((kv.size() - kv_rows_) * row) * sizeof(float);
    for (int64_t a = 0; a < kv.n_layers(); ++a) {
      QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(k_[a].f() + off, ckv.k(a) + off, bytes, stream_));
      QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(v_[a].f() + off, ckv.v(a) + off, bytes, stream_));
    }
    kv_rows_ = kv.size();
  }
  kv_lineage_ = kv.lineage();
  return OkStatus();
}

// Copies KV rows [from, from + n) of every attention layer to the host cache: all of a piece go to
// the pinned staging buffer with one synchronisation, then into the cache's own memory.
Status CudaForwardImpl::FetchKvRows(KvCache& kv, int64_t from, int64_t n) {
  const int64_t row = kv.row_floats(), A = kv.n_layers();
  float* stage = kv_stage_.as<float>();
  for (int64_t p0 = from; p0 < from + n; p0 += Tm_) {
    const int64_t m = std::min(Tm_, from + n - p0);
    const size_t off = static_cast<size_t>(p0 * row), len = static_cast<size_t>(m * row);
    for (int64_t a = 0; a < A; ++a) {
      QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(stage + 2 * a * len, k_[a].f() + off, len * sizeof(float), stream_));
      QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(stage + (2 * a + 1) * len, v_[a].f() + off, len * sizeof(float), stream_));
    }
    QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
    for (int64_t a = 0; a < A; ++a) {
      std::copy_n(stage + 2 * a * len, len, kv.k(a) + off);
      std::copy_n(stage + (2 * a + 1) * len, len, kv.v(a) + off);
    }
  }
  return OkStatus();
}

// Pending contents to the host (RecurrentState::Sync calls this).
void CudaForwardImpl::Pull(RecurrentState& rec) {
  // Both state arrays in two copies to the pinned staging, one synchronisation, then into the
  // state's own (pageable) memory: several times faster than per-layer pageable copies.
  const auto [src_conv, src_ssm] = Buffers(rec);
  const size_t cf = static_cast<size_t>(rec.conv_floats()), sf = static_cast<size_t>(rec.ssm_floats());
  const int64_t G = rec.n_layers();
  float* conv = state_stage_.as<float>();
  float* ssm = conv + G * cf;
  Status s = cuda::CopyToHostAsync(conv, src_conv, G * cf * sizeof(float), stream_);
  if (s.ok()) s = cuda::CopyToHostAsync(ssm, src_ssm, G * sf * sizeof(float), stream_);
  if (s.ok()) s = cuda::StreamSynchronize(stream_);
  const bool live = &rec == pending_rec_;
  if (live) {
    pending_rec_ = nullptr;  // the live buffers still hold these contents (rec_lineage_ names them)
  } else {
    copies_.erase(&rec);
  }
  if (s.ok()) {
    for (int64_t g = 0; g < G; ++g) {
      std::copy_n(conv + g * cf, cf, rec.host_conv(g));
      std::copy_n(ssm + g * sf, sf, rec.host_ssm(g));
    }
  } else {
    Poison(rec);
    if (live) rec_lineage_ = 0;
    pull_error_ = Status(StatusCode::kDevice, "CUDA forward: fetching the recurrent state failed (it was "
                                              "replaced by NaN): " + s.message());
  }
}

void CudaForwardImpl::Forget(const RecurrentState& rec) {
  if (pending_rec_ == &rec) {
    pending_rec_ = nullptr;
    rec_lineage_ = 0;  // the live buffers hold contents nobody names any more
  } else {
    copies_.erase(&rec);
  }
}

void CudaForwardImpl::Moved(const RecurrentState& from, const RecurrentState& to) {
  if (pending_rec_ == &from) {
    pending_rec_ = &to;
    return;
  }
  auto node = copies_.extract(&from);
  node.key() = &to;
  copies_.insert(std::move(node));
}

// A checkpoint (or a restore) without leaving the device: one device-to-device copy of the state.
bool CudaForwardImpl::Clone(const RecurrentState& from, RecurrentState& to) {
  const auto [src_conv, src_ssm] = Buffers(from);
  float* dst_conv = conv_state_.f();
  float* dst_ssm = ssm_state_.f();
  if (&to == pending_rec_) {
    rec_lineage_ = 0;  // the live buffers are rewritten: `to` is pending, so no lineage is needed
  } else {
    auto it = copies_.find(&to);
    if (it == copies_.end()) {
      DeviceState d;
      if (!d.conv.Allocate(conv_state_.bytes()).ok() || !d.ssm.Allocate(ssm_state_.bytes()).ok()) return false;
      it = copies_.emplace(&to, std::move(d)).first;
    }
    dst_conv = it->second.conv.f();
    dst_ssm = it->second.ssm.f();
  }
  if (!CopyState(dst_conv, dst_ssm, src_conv, src_ssm).ok()) {
    if (&to != pending_rec_) copies_.erase(&to);
    return false;  // (to's contents are being replaced by the caller's host copy)
  }
  to.SetPending(this);
  return true;
}

Status CudaForwardImpl::Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens,
                            bool all_logits, float* logits) {
  if (!pull_error_.ok()) return std::exchange(pull_error_, OkStatus());
  const int64_t T = static_cast<int64_t>(tokens.size()), n_past0 = kv.size(), V = c_.n_vocab;
  if (c_.n_attn_layers() > 0 && n_past0 + T > cuda::kAttentionMaxKeys) {  // before anything moves
    return Unsupported("CUDA forward: {} positions exceed the attention kernel's limit of {}", n_past0 + T,
                       cuda::kAttentionMaxKeys);
  }
  // Another state's newest contents are in the live buffers: fetch them before they are reused.
  if (pending_rec_ != nullptr && pending_rec_ != &rec) pending_rec_->Sync();
  if (rec.pending() == this && &rec != pending_rec_) {  // a device copy (a restored checkpoint): make it live
    const DeviceState& d = copies_.at(&rec);
    rec_lineage_ = 0;
    // On failure rec is still pending on its copy.
    QWENRT_RETURN_IF_ERROR(CopyState(conv_state_.f(), ssm_state_.f(), d.conv.f(), d.ssm.f()));
    copies_.erase(&rec);
    pending_rec_ = &rec;
  }
  const size_t logits_bytes = static_cast<size_t>((all_logits ? std::min(T, Tm_) : 1) * V) * sizeof(float);
  bool launched = false;  // from here on, the device state has advanced
  Status s = [&]() -> Status {
    if (a_.logits.bytes() < logits_bytes) QWENRT_RETURN_IF_ERROR(a_.logits.Allocate(logits_bytes));
    QWENRT_RETURN_IF_ERROR(Mirror(kv, rec));
    launched = true;
    for (int64_t b = 0; b < T; b += Tm_) {
      const int64_t n = std::min(Tm_, T - b);
      float* out = all_logits ? logits + b * V : (b + n == T ? logits : nullptr);
      QWENRT_RETURN_IF_ERROR(Ubatch(tokens.data() + b, n, n_past0 + b, all_logits, out));
    }
    return FetchKvRows(kv, n_past0, T);  // small; the recurrent state stays pending here
  }();
  if (!s.ok()) {  // the mirror may be half-written: forget it
    kv_lineage_ = rec_lineage_ = 0;
    kv_rows_ = 0;
    if (launched && rec.pending() == this) {
      // Its only copy was the device one, now half-advanced: lost. Make that loud (the session
      // restores a checkpoint on DEVICE errors).
      rec.SetPending(nullptr);
      pending_rec_ = nullptr;
      Poison(rec);
      return Status(StatusCode::kDevice, "CUDA forward failed and the recurrent state was lost: " + s.message());
    }
    return s;  // the host state is as it was
  }
  kv.Commit(n_past0 + T);
  kv_rows_ = kv.size();
  kv_lineage_ = kv.lineage();
  rec.RenewLineage();  // advanced: a new name, held (pending) here
  rec.SetPending(this);
  pending_rec_ = &rec;
  rec_lineage_ = rec.lineage();
  return OkStatus();
}

// One ubatch of T <= Tm tokens at positions n_past ...; logits_host: [T, V] (all_logits), [V] (last
// token) or nullptr.
Status CudaForwardImpl::Ubatch(const int32_t* tokens, int64_t T, int64_t n_past, bool all_logits,
                               float* logits_host) {
  const Weights& w = model_.weights();
  const int64_t E = c_.n_embd;
  // The staging buffer may still feed the previous ubatch's upload: wait before rewriting it.
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  float* embed = embed_host_.as<float>();
  for (int64_t t = 0; t < T; ++t) {
    const uint8_t* row = w.token_embd.data + static_cast<size_t>(tokens[t]) * w.token_embd.row_bytes;
    ref::DequantizeRow(w.token_embd.type, row, embed + t * E, E);
  }
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(a_.x.f(), embed, static_cast<size_t>(T * E) * sizeof(float), stream_));

  if (T == 1 && use_graphs_) {
    QWENRT_RETURN_IF_ERROR(DecodeWithGraph(n_past));
  } else {
    QWENRT_RETURN_IF_ERROR(Layers(T, n_past, nullptr));
  }
  if (logits_host == nullptr) return OkStatus();
  return all_logits ? Logits(0, T, logits_host) : Logits(T - 1, 1, logits_host);
}

Status CudaForwardImpl::Layers(int64_t T, int64_t n_past, const int64_t* pos_dev) {
  const Weights& w = model_.weights();
  const int64_t E = c_.n_embd;
  const int64_t cf = c_.conv_channels() * (c_.conv_kernel - 1), sf = c_.ssm_hv * c_.ssm_dv * c_.ssm_dk;
  // Each residual add is fused with the norm that follows it (x += mix; xn = RMSNorm(x)).
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRmsNorm(a_.x.f(), Dev(w.layers[0].attn_norm), a_.xn.f(), T, E, c_.eps, stream_));
  for (int64_t l = 0; l < c_.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    const int64_t slot = c_.kind_index[l];
    if (c_.recurrent[l]) {
      QWENRT_RETURN_IF_ERROR(GatedDeltaLayer(lw.gdn, T, conv_state_.f() + slot * cf, ssm_state_.f() + slot * sf));
    } else {
      QWENRT_RETURN_IF_ERROR(FullAttentionLayer(lw.attn, T, n_past, pos_dev, k_[slot].f(), v_[slot].f()));
    }
    QWENRT_RETURN_IF_ERROR(
        cuda::LaunchAddRmsNorm(a_.x.f(), a_.mix.f(), Dev(lw.post_attention_norm), a_.xn.f(), T, E, c_.eps, stream_));
    QWENRT_RETURN_IF_ERROR(c_.moe ? Moe(lw.moe, T) : Mlp(lw.ffn, T));
    if (l + 1 < c_.n_layer) {
      QWENRT_RETURN_IF_ERROR(cuda::LaunchAddRmsNorm(a_.x.f(), a_.mix.f(), Dev(w.layers[l + 1].attn_norm), a_.xn.f(),
                                                    T, E, c_.eps, stream_));
    } else {
      QWENRT_RETURN_IF_ERROR(cuda::LaunchAdd(a_.x.f(), a_.mix.f(), T * E, stream_));
    }
  }
  return OkStatus();
}

// One decode step by graph replay: the first step (and any after the KV buffers moved) captures the
// layer stack with the position read from pos_dev_, later steps only update pos_dev_ and replay.
// A capture that fails turns graphs off for this context and runs the step eagerly.
Status CudaForwardImpl::DecodeWithGraph(int64_t n_past) {
  *pos_host_.as<int64_t>() = n_past;  // the previous step's copy is done: Ubatch synchronised
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(pos_dev_.i64(), pos_host_.as<int64_t>(), sizeof(int64_t), stream_));
  if (graph_ == nullptr || graph_kv_capacity_ != kv_capacity_) {
    cuda::GraphDestroy(graph_);
    graph_ = nullptr;
    Status s = cuda::BeginCapture(stream_);
    if (s.ok()) s = Layers(1, 0, pos_dev_.i64());
    cuda::Graph g = nullptr;
    const Status e = cuda::EndCapture(stream_, &g);
    if (!s.ok() || !e.ok()) {
      cuda::GraphDestroy(g);
      use_graphs_ = false;
      return Layers(1, n_past, nullptr);
    }
    graph_ = g;
    graph_kv_capacity_ = kv_capacity_;
  }
  return cuda::GraphLaunch(graph_, stream_);
}

// Gated delta net (spec §7): xn -> mix, advancing this layer's conv window and delta-rule state.
Status CudaForwardImpl::GatedDeltaLayer(const GatedDeltaWeights& w, int64_t T, float* conv_state /*[C, Kc-1]*/,
                                        float* ssm_state /*[Hv, Dv, Dk]*/) {
  DeviceActivations& a = a_;
  const int64_t C = c_.conv_channels(), Hk = c_.ssm_hk, Hv = c_.ssm_hv, Dk = c_.ssm_dk, Dv = c_.ssm_dv;
  // One launch for the four projections of xn.
  const cuda::MatMulTarget proj[] = {Target(w.qkv, a.qkv.f()),       // m: [T, C]
                                     Target(w.gate, a.z.f()),        // z: [T, Cv]
                                     Target(w.beta, a.beta.f()),     // b: [T, Hv]
                                     Target(w.alpha, a.alpha.f())};  // a: [T, Hv]
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 4, c_.n_embd, a.xn.f(), T, stream_));

  QWENRT_RETURN_IF_ERROR(cuda::LaunchCausalConvSilu(CausalConvShape{T, C, c_.conv_kernel}, a.qkv.f(),
                                                    Dev(w.conv1d), conv_state, a.conv.f(), stream_));
  // One launch: split into q [T, Hk, Dk], k [T, Hk, Dk] (L2-normed on the way out; q also scaled by
  // 1/sqrt(Dk)), v [T, Hv, Dv]; and the gates: g = ssm_a * softplus(alpha + dt_bias), beta = sigmoid(b).
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(Dk));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchGdnSplit(a.conv.f(), T, Hk, Dk, Hv, Dv, c_.eps, q_scale, a.gq.f(), a.gk.f(),
                                              a.gv.f(), a.alpha.f(), a.beta.f(), Dev(w.ssm_a), Dev(w.dt_bias),
                                              stream_));

  // Value head h reads key head h % Hk (tiled order, spec §5.1).
  QWENRT_RETURN_IF_ERROR(cuda::LaunchGatedDelta(GatedDeltaShape{T, Hk, Hv, Dk, Dv}, a.gq.f(), a.gk.f(),
                                                a.gv.f(), a.alpha.f(), a.beta.f(), ssm_state, a.go.f(),
                                                stream_));
  QWENRT_RETURN_IF_ERROR(  // gated RMSNorm: norm(o) * silu(z)
      cuda::LaunchRmsNormGate(a.go.f(), Dev(w.norm), a.z.f(), a.go.f(), T * Hv, Dv, c_.eps, stream_));
  return MatMul(Dev(w.out), a.go.f(), a.mix.f(), T);
}

// Gated full attention (spec §8): xn -> mix; writes this ubatch's K/V rows into the device cache.
Status CudaForwardImpl::FullAttentionLayer(const AttentionWeights& w, int64_t T, int64_t n_past,
                                           const int64_t* pos_dev, float* k_cache /*[cap, Hkv, Dh]*/,
                                           float* v_cache /*[cap, Hkv, Dh]*/) {
  DeviceActivations& a = a_;
  const int64_t H = c_.n_head, Hkv = c_.n_head_kv, Dh = c_.head_dim;
  const cuda::MatMulTarget proj[] = {Target(w.q, a.qg.f()),  // [T, H, 2, Dh]: query, then gate
                                     Target(w.k, a.k.f()),   // [T, Hkv, Dh]
                                     Target(w.v, a.v.f())};  // [T, Hkv, Dh]
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 3, c_.n_embd, a.xn.f(), T, stream_));
  // The query rows are read in place from qg (stride 2*Dh), normed into q [T, H, Dh].
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(a.qg.f(), 2 * Dh, Dev(w.q_norm), a.q.f(), T * H, Dh, c_.eps, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRmsNorm(a.k.f(), Dev(w.k_norm), a.k.f(), T * Hkv, Dh, c_.eps, stream_));
  const uint8_t* pairs = weights_->rope_pairs();
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRope(a.q.f(), T, H, Dh, n_past, c_.rope_dims, c_.rope_base,
                                          c_.rope_freq_scale, pairs, stream_, pos_dev));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRope(a.k.f(), T, Hkv, Dh, n_past, c_.rope_dims, c_.rope_base,
                                          c_.rope_freq_scale, pairs, stream_, pos_dev));

  const int64_t row = Hkv * Dh;  // this ubatch's K/V rows into the cache at n_past (+ *pos_dev)
  QWENRT_RETURN_IF_ERROR(cuda::LaunchStoreRows(k_cache, row, n_past, pos_dev, a.k.f(), T, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchStoreRows(v_cache, row, n_past, pos_dev, a.v.f(), T, stream_));
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchAttention(AttentionShape{T, n_past, H, Hkv, Dh}, a.q.f(), k_cache, v_cache, a.att.f(),
                            a.att_scratch.f(), cuda::AttentionScratchFloats(H, Dh), stream_, pos_dev));
  // Output gate, read in place from qg (the second half of each head's 2*Dh rows).
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMulSigmoidRows(a.att.f(), a.qg.f() + Dh, T * H, Dh, 2 * Dh, stream_));
  return MatMul(Dev(w.o), a.att.f(), a.mix.f(), T);
}

// y[n, E] = down · (silu(gate · x) * (up · x)) for n rows x[n, E].
Status CudaForwardImpl::SwiGluFfn(const DevMatrix& gate, const DevMatrix& up, const DevMatrix& down,
                                  const float* x, float* y, int64_t n) {
  const cuda::MatMulTarget proj[] = {{gate.type, gate.data, gate.row_bytes, gate.rows, a_.ff_gate.f()},
                                     {up.type, up.data, up.row_bytes, up.rows, a_.ff_up.f()}};
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 2, gate.cols, x, n, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchSwiGlu(a_.ff_gate.f(), a_.ff_up.f(), n * gate.rows, stream_));
  return MatMul(down, a_.ff_up.f(), y, n);
}

// Dense SwiGLU FFN (spec §9.1): xn -> mix.
Status CudaForwardImpl::Mlp(const DenseFfnWeights& w, int64_t T) {
  return SwiGluFfn(Dev(w.gate), Dev(w.up), Dev(w.down), a_.xn.f(), a_.mix.f(), T);
}

// Routed experts + sigmoid-gated shared expert (spec §9.2): xn -> mix. Routing and the grouping of
// (token, slot) pairs by expert happen on the host, exactly as forward.cpp's Moe does them.
Status CudaForwardImpl::Moe(const MoeWeights& w, int64_t T) {
  DeviceActivations& a = a_;
  const int64_t E = c_.n_embd, X = c_.n_expert, K = c_.n_expert_used;
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.router), a.xn.f(), a.router.f(), T));  // [T, X]
  float* router = router_host_.as<float>();
  QWENRT_RETURN_IF_ERROR(cuda::CopyToHost(router, a.router.f(), static_cast<size_t>(T * X) * sizeof(float), stream_));
  ref::MoeRoute(router, T, X, K, ids_.data(), route_weights_.data());

  ref::GroupByExpert(ids_.data(), T * K, X, slots_.data(), expert_begin_.data());

  // Upload: weights [T, K], then gather rows (token of each sorted slot) and scatter rows (the slot).
  float* wts = moe_host_.as<float>();
  int32_t* rows = reinterpret_cast<int32_t*>(wts + T * K);
  std::copy_n(route_weights_.data(), T * K, wts);
  for (int64_t i = 0; i < T * K; ++i) {
    rows[i] = static_cast<int32_t>(slots_[i] / K);  // gather: the token
    rows[T * K + i] = slots_[i];                    // scatter: (token, slot) = t*K + j
  }
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(a.moe_weights.f(), wts, static_cast<size_t>(T * K) * sizeof(float), stream_));
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(a.moe_rows.i32(), rows, static_cast<size_t>(2 * T * K) * sizeof(int32_t), stream_));
  // The pinned staging is rewritten by the next MoE layer: the copies must have read it by then.
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  const int32_t* gather = a.moe_rows.i32();
  const int32_t* scatter = gather + T * K;

  for (int64_t e = 0; e < X; ++e) {
    const int64_t b = expert_begin_[e], n = expert_begin_[e + 1] - b;
    if (n == 0) continue;
    QWENRT_RETURN_IF_ERROR(cuda::LaunchGatherRows(a.xn.f(), gather + b, n, E, a.xe.f(), stream_));
    QWENRT_RETURN_IF_ERROR(SwiGluFfn(Dev(w.gate.Expert(e)), Dev(w.up.Expert(e)), Dev(w.down.Expert(e)), a.xe.f(),
                                     a.ye.f(), n));
    QWENRT_RETURN_IF_ERROR(cuda::LaunchScatterRows(a.ye.f(), scatter + b, n, E, a.yslot.f(), stream_));
  }
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMoeCombine(a.yslot.f(), a.moe_weights.f(), T, K, E, a.mix.f(), stream_));

  QWENRT_RETURN_IF_ERROR(SwiGluFfn(Dev(w.shexp_gate), Dev(w.shexp_up), Dev(w.shexp_down), a.xn.f(), a.ye.f(), T));
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.shexp_gate_inp), a.xn.f(), a.shgate.f(), T));  // [T, 1]
  return cuda::LaunchAddSigmoidScaled(a.mix.f(), a.ye.f(), a.shgate.f(), T, E, stream_);
}

// logits[rows, V] = output · RMSNorm(x[first .. first+rows), output_norm)   (spec §11)
Status CudaForwardImpl::Logits(int64_t first, int64_t rows, float* logits_host) {
  const Weights& w = model_.weights();
  const int64_t E = c_.n_embd, V = c_.n_vocab;
  const size_t need = static_cast<size_t>(rows * V) * sizeof(float);  // allocated by Run
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchRmsNorm(a_.x.f() + first * E, Dev(w.output_norm), a_.xn.f(), rows, E, c_.eps, stream_));
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.output), a_.xn.f(), a_.logits.f(), rows));
  if (rows > 1) return cuda::CopyToHost(logits_host, a_.logits.f(), need, stream_);
  // One row (every decode step): through pinned memory, about twice as fast as a pageable copy.
  QWENRT_RETURN_IF_ERROR(cuda::CopyToHostAsync(logits_stage_.as<float>(), a_.logits.f(), need, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  std::copy_n(logits_stage_.as<float>(), V, logits_host);
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<CudaForward>> CudaForward::Create(const Model& model, int64_t max_ubatch) {
  if (max_ubatch < 1) return InvalidArgument("max_ubatch must be >= 1, got {}", max_ubatch);
  auto f = std::make_unique<CudaForwardImpl>(model, max_ubatch);
  QWENRT_RETURN_IF_ERROR(f->Init());
  return std::unique_ptr<CudaForward>(std::move(f));
}

}  // namespace qwenrt

#endif  // QWENRT_HAVE_CUDA
