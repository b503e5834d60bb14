// The Qwen3.5 forward pass on the GPU (forward_cuda.h): the layer recipe. Read forward.cpp first:
// the layer functions here are the same list of ops with the same names, each a launch on device
// buffers (cuda_kernels.h) on one stream. Where the buffers come from is not this file's business:
// the weights are the Model's (cuda_weights.h), the KV cache and recurrent state the state mirror's
// (cuda_state.h); this file owns only the activations and the staging of inputs and outputs.
//
//   x = token_embd[tokens]                     (decoded on the host, one row per token, uploaded)
//   for each layer: x += GatedDeltaLayer or FullAttentionLayer (RMSNorm(x, attn_norm))
//                   x += Mlp or Moe (RMSNorm(x, post_attention_norm))
//   logits = output · RMSNorm(x, output_norm)
//
// Each residual add is fused with the norm after it (AddRmsNorm). RoundAttentionInputs is not
// called: this path is exact f32 like kRef. MoE routing (MoeRoute, GroupByExpert: top-k over X
// router logits per token) runs on the host between two launches: the router logits come down, the
// expert grouping goes up. Everything else stays on the device.
#ifdef QWENRT_HAVE_CUDA

#include "model/forward_cuda.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/activations.h"
#include "model/cuda_buffers.h"
#include "model/cuda_state.h"
#include "model/cuda_weights.h"
#include "ops/cuda_device.h"
#include "ops/cuda_kernels.h"
#include "ops/quant.h"

namespace qwenrt {
namespace {

// The activations of activations.h on the device; the MoE grouping (ids, slots, expert_begin)
// stays on the host, where the routing runs. Plus what only this pass needs.
struct DeviceActivations : ActivationSet<DeviceArray, std::vector<int32_t>> {
  DeviceArray att_scratch;  // cuda::AttentionScratchFloats
  DeviceArray moe_rows;  // [2 * Tm * K] int32: gather rows (the token), then scatter rows (t*K+j)
  DeviceArray logits;    // [Tm or 1, V], grown on demand
};

class CudaForwardImpl final : public CudaForward {
 public:
  CudaForwardImpl(const Model& model, const Options& options)
      : model_(model),
        c_(model.config()),
        Tm_(options.max_ubatch),
        use_graphs_(options.graphs && !c_.moe) {}
  ~CudaForwardImpl() override {
    cuda::GraphDestroy(graph_);
  }  // then state_ fetches, then the stream goes

  Status Init();
  Status Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens, bool all_logits,
             float* logits) override;

 private:
  // The recipe, function for function with forward.cpp.
  Status Embed(const int32_t* tokens, int64_t T);
  Status GatedDeltaLayer(const GatedDeltaWeights& w, int64_t T, float* conv_state,
                         float* ssm_state);
  Status FullAttentionLayer(const AttentionWeights& w, int64_t T, int64_t n_past,
                            const int64_t* pos_dev, float* k_cache, float* v_cache);
  Status SwiGluFfn(const DevMatrix& gate, const DevMatrix& up, const DevMatrix& down,
                   const float* x, float* y, int64_t n);
  Status Mlp(const DenseFfnWeights& w, int64_t T);
  Status Moe(const MoeWeights& w, int64_t T);
  Status Logits(int64_t first, int64_t rows, float* logits_host);
  Status RunUbatch(const int32_t* tokens, int64_t T, int64_t n_past, bool all_logits,
                   float* logits_host);
  // The layer stack on a.x (-> a.x), at positions n_past (+ *pos_dev when given: graph capture).
  Status Layers(int64_t T, int64_t n_past, const int64_t* pos_dev);
  Status DecodeWithGraph(int64_t n_past);

  // Device views of host weights.
  DevMatrix Dev(const WeightMatrix& w) const { return weights_->Matrix(w); }
  const float* Dev(const float* p) const { return weights_->Vector(p); }
  cuda::MatMulTarget Target(const WeightMatrix& w, float* y) const {
    return weights_->Target(w, y);
  }
  Status MatMul(const DevMatrix& w, const float* x, float* y, int64_t T) {
    return cuda::LaunchMatMul(w.type, w.data, w.row_bytes, w.cols, w.rows, x, y, T, stream_);
  }

  const Model& model_;
  const ModelConfig& c_;
  const int64_t Tm_;
  // Declared first so that it goes last: state_ fetches pending states on it as it dies.
  DeviceStream stream_owner_;
  cuda::Stream stream_ = nullptr;               // stream_owner_'s
  std::shared_ptr<const CudaWeights> weights_;  // the Model's
  CudaStateMirror state_;                       // the device side of (kv, rec)
  DeviceActivations a_;
  PinnedArray embed_host_;    // [Tm, E] token rows decoded on the host
  PinnedArray router_host_;   // [Tm, X] router logits brought down for routing
  PinnedArray moe_host_;      // [Tm * K] f32 weights, then [2 * Tm * K] int32 gather/scatter rows
  PinnedArray logits_stage_;  // [V] last-token logits on their way to the caller (decode)
  std::vector<float> route_weights_;  // [Tm, K] host routing weights (a_.weights: on the device)

  // Options::graphs: decode steps (T = 1, dense models) replay one captured graph of the whole
  // layer stack; the position comes from pos_dev_. Recaptured when the KV buffers move.
  bool use_graphs_ = false;
  cuda::Graph graph_ = nullptr;
  int64_t graph_kv_capacity_ = -1;
  DeviceArray pos_dev_;   // [1] int64: n_past of the step being replayed
  PinnedArray pos_host_;  // [1] int64 staging
};

// x[t] = token_embd row tokens[t] (no scaling): decoded on the host, one row per token, uploaded.
Status CudaForwardImpl::Embed(const int32_t* tokens, int64_t T) {
  const WeightMatrix& token_embd = model_.weights().token_embd;
  const int64_t E = c_.n_embd;
  // The staging buffer may still feed the previous ubatch's upload: wait before rewriting it.
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  float* embed = embed_host_.as<float>();
  for (int64_t t = 0; t < T; ++t) {
    const uint8_t* row = token_embd.data + static_cast<size_t>(tokens[t]) * token_embd.row_bytes;
    ref::DequantizeRow(token_embd.type, row, embed + t * E, E);
  }
  return cuda::CopyToDevice(a_.x.f(), embed, static_cast<size_t>(T * E) * sizeof(float), stream_);
}

// Gated delta net (docs/spec/qwen35-architecture.md §7): xn -> mix, advancing this layer's conv
// window and delta-rule state.
Status CudaForwardImpl::GatedDeltaLayer(const GatedDeltaWeights& w, int64_t T,
                                        float* conv_state /*[C, Kc-1]*/,
                                        float* ssm_state /*[Hv, Dv, Dk]*/) {
  DeviceActivations& a = a_;
  const int64_t C = c_.conv_channels(), Hk = c_.ssm_hk, Hv = c_.ssm_hv, Dk = c_.ssm_dk,
                Dv = c_.ssm_dv;
  // One launch for the four projections of xn.
  const cuda::MatMulTarget proj[] = {Target(w.qkv, a.qkv.f()),       // m: [T, C]
                                     Target(w.gate, a.z.f()),        // z: [T, Cv]
                                     Target(w.beta, a.beta.f()),     // b: [T, Hv]
                                     Target(w.alpha, a.alpha.f())};  // a: [T, Hv]
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 4, c_.n_embd, a.xn.f(), T, stream_));

  QWENRT_RETURN_IF_ERROR(cuda::LaunchCausalConvSilu(CausalConvShape{T, C, c_.conv_kernel},
                                                    a.qkv.f(), Dev(w.conv1d), conv_state,
                                                    a.conv.f(), stream_));
  // One launch: split into q [T, Hk, Dk], k [T, Hk, Dk] (L2-normed on the way out; q also scaled by
  // 1/sqrt(Dk)), v [T, Hv, Dv]; and the gates: g = ssm_a * softplus(alpha + dt_bias), beta =
  // sigmoid(b).
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(Dk));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchGdnSplit(a.conv.f(), T, Hk, Dk, Hv, Dv, c_.eps, q_scale,
                                              a.gq.f(), a.gk.f(), a.gv.f(), a.alpha.f(), a.beta.f(),
                                              Dev(w.ssm_a), Dev(w.dt_bias), stream_));

  // Value head h reads key head h % Hk (tiled order, qwen35-architecture.md §5.1).
  QWENRT_RETURN_IF_ERROR(cuda::LaunchGatedDelta(GatedDeltaShape{T, Hk, Hv, Dk, Dv}, a.gq.f(),
                                                a.gk.f(), a.gv.f(), a.alpha.f(), a.beta.f(),
                                                ssm_state, a.go.f(), stream_));
  QWENRT_RETURN_IF_ERROR(  // gated RMSNorm: norm(o) * silu(z)
      cuda::LaunchGatedRmsNorm(a.go.f(), Dev(w.norm), a.z.f(), a.go.f(), T * Hv, Dv, c_.eps,
                               stream_));
  return MatMul(Dev(w.out), a.go.f(), a.mix.f(), T);
}

// Gated full attention (qwen35-architecture.md §8): xn -> mix; writes this ubatch's K/V rows into
// the device cache.
Status CudaForwardImpl::FullAttentionLayer(const AttentionWeights& w, int64_t T, int64_t n_past,
                                           const int64_t* pos_dev,
                                           float* k_cache /*[cap, Hkv, Dh]*/,
                                           float* v_cache /*[cap, Hkv, Dh]*/) {
  DeviceActivations& a = a_;
  const int64_t H = c_.n_head, Hkv = c_.n_head_kv, Dh = c_.head_dim;
  const cuda::MatMulTarget proj[] = {Target(w.q, a.qg.f()),  // [T, H, 2, Dh]: query, then gate
                                     Target(w.k, a.k.f()),   // [T, Hkv, Dh]
                                     Target(w.v, a.v.f())};  // [T, Hkv, Dh]
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 3, c_.n_embd, a.xn.f(), T, stream_));
  // The query rows are read in place from qg (stride 2*Dh), normed into q [T, H, Dh].
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRmsNormRows(a.qg.f(), 2 * Dh, Dev(w.q_norm), a.q.f(), T * H,
                                                 Dh, c_.eps, stream_));
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchRmsNorm(a.k.f(), Dev(w.k_norm), a.k.f(), T * Hkv, Dh, c_.eps, stream_));
  const uint8_t* pairs = weights_->rope_pairs();
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRope(a.q.f(), T, H, Dh, n_past, c_.rope_dims, c_.rope_base,
                                          c_.rope_freq_scale, pairs, stream_, pos_dev));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRope(a.k.f(), T, Hkv, Dh, n_past, c_.rope_dims, c_.rope_base,
                                          c_.rope_freq_scale, pairs, stream_, pos_dev));

  const int64_t row = Hkv * Dh;  // this ubatch's K/V rows into the cache at n_past (+ *pos_dev)
  QWENRT_RETURN_IF_ERROR(cuda::LaunchStoreRows(k_cache, row, n_past, pos_dev, a.k.f(), T, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchStoreRows(v_cache, row, n_past, pos_dev, a.v.f(), T, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchAttention(
      AttentionShape{T, n_past, H, Hkv, Dh}, a.q.f(), k_cache, v_cache, a.att.f(),
      a.att_scratch.f(), cuda::AttentionScratchFloats(H, Dh), stream_, pos_dev));
  // Output gate, read in place from qg (the second half of each head's 2*Dh rows).
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchMulSigmoid(a.att.f(), a.qg.f() + Dh, T * H, Dh, 2 * Dh, stream_));
  return MatMul(Dev(w.o), a.att.f(), a.mix.f(), T);
}

// y[n, E] = down · (silu(gate · x) * (up · x)) for n rows x[n, E].
Status CudaForwardImpl::SwiGluFfn(const DevMatrix& gate, const DevMatrix& up, const DevMatrix& down,
                                  const float* x, float* y, int64_t n) {
  const cuda::MatMulTarget proj[] = {
      {gate.type, gate.data, gate.row_bytes, gate.rows, a_.ff_gate.f()},
      {up.type, up.data, up.row_bytes, up.rows, a_.ff_up.f()}};
  QWENRT_RETURN_IF_ERROR(cuda::LaunchMatMulMulti(proj, 2, gate.cols, x, n, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::LaunchSwiGlu(a_.ff_gate.f(), a_.ff_up.f(), n * gate.rows, stream_));
  return MatMul(down, a_.ff_up.f(), y, n);
}

// Dense SwiGLU FFN (qwen35-architecture.md §9.1): xn -> mix.
Status CudaForwardImpl::Mlp(const DenseFfnWeights& w, int64_t T) {
  return SwiGluFfn(Dev(w.gate), Dev(w.up), Dev(w.down), a_.xn.f(), a_.mix.f(), T);
}

// Routed experts + sigmoid-gated shared expert (qwen35-architecture.md §9.2): xn -> mix. Routing
// and the grouping of (token, slot) pairs by expert happen on the host, exactly as forward.cpp's
// Moe does them.
Status CudaForwardImpl::Moe(const MoeWeights& w, int64_t T) {
  DeviceActivations& a = a_;
  const int64_t E = c_.n_embd, X = c_.n_expert, K = c_.n_expert_used;
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.router), a.xn.f(), a.router.f(), T));  // [T, X]
  float* router = router_host_.as<float>();
  QWENRT_RETURN_IF_ERROR(
      cuda::CopyToHost(router, a.router.f(), static_cast<size_t>(T * X) * sizeof(float), stream_));
  ref::MoeRoute(router, T, X, K, a.ids.data(), route_weights_.data());

  ref::GroupByExpert(a.ids.data(), T * K, X, a.slots.data(), a.expert_begin.data());

  // Upload: weights [T, K], then gather rows (token of each sorted slot) and scatter rows (the
  // slot).
  float* wts = moe_host_.as<float>();
  int32_t* rows = reinterpret_cast<int32_t*>(wts + T * K);
  std::copy_n(route_weights_.data(), T * K, wts);
  for (int64_t i = 0; i < T * K; ++i) {
    rows[i] = static_cast<int32_t>(a.slots[i] / K);  // gather: the token
    rows[T * K + i] = a.slots[i];                    // scatter: (token, slot) = t*K + j
  }
  QWENRT_RETURN_IF_ERROR(
      cuda::CopyToDevice(a.weights.f(), wts, static_cast<size_t>(T * K) * sizeof(float), stream_));
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(
      a.moe_rows.i32(), rows, static_cast<size_t>(2 * T * K) * sizeof(int32_t), stream_));
  // The pinned staging is rewritten by the next MoE layer: the copies must have read it by then.
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  const int32_t* gather = a.moe_rows.i32();
  const int32_t* scatter = gather + T * K;

  for (int64_t e = 0; e < X; ++e) {
    const int64_t b = a.expert_begin[e], n = a.expert_begin[e + 1] - b;
    if (n == 0) continue;
    QWENRT_RETURN_IF_ERROR(cuda::LaunchMoeGather(a.xn.f(), gather + b, n, E, a.xe.f(), stream_));
    QWENRT_RETURN_IF_ERROR(SwiGluFfn(Dev(w.gate.Expert(e)), Dev(w.up.Expert(e)),
                                     Dev(w.down.Expert(e)), a.xe.f(), a.ye.f(), n));
    QWENRT_RETURN_IF_ERROR(
        cuda::LaunchMoeScatter(a.ye.f(), scatter + b, n, E, a.yslot.f(), stream_));
  }
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchMoeCombine(a.yslot.f(), a.weights.f(), T, K, E, a.mix.f(), stream_));

  QWENRT_RETURN_IF_ERROR(
      SwiGluFfn(Dev(w.shexp_gate), Dev(w.shexp_up), Dev(w.shexp_down), a.xn.f(), a.ye.f(), T));
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.shexp_gate_inp), a.xn.f(), a.shgate.f(), T));  // [T, 1]
  return cuda::LaunchAddSigmoidGated(a.mix.f(), a.ye.f(), a.shgate.f(), T, E, stream_);
}

// logits[rows, V] = output · RMSNorm(x[first .. first+rows), output_norm)   (qwen35-architecture.md
// §11)
Status CudaForwardImpl::Logits(int64_t first, int64_t rows, float* logits_host) {
  const Weights& w = model_.weights();
  const int64_t E = c_.n_embd, V = c_.n_vocab;
  const size_t need = static_cast<size_t>(rows * V) * sizeof(float);  // allocated by Run
  QWENRT_RETURN_IF_ERROR(cuda::LaunchRmsNorm(a_.x.f() + first * E, Dev(w.output_norm), a_.xn.f(),
                                             rows, E, c_.eps, stream_));
  QWENRT_RETURN_IF_ERROR(MatMul(Dev(w.output), a_.xn.f(), a_.logits.f(), rows));
  if (rows > 1) return cuda::CopyToHost(logits_host, a_.logits.f(), need, stream_);
  // One row (every decode step): through pinned memory, about twice as fast as a pageable copy.
  QWENRT_RETURN_IF_ERROR(
      cuda::CopyToHostAsync(logits_stage_.as<float>(), a_.logits.f(), need, stream_));
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(stream_));
  std::copy_n(logits_stage_.as<float>(), V, logits_host);
  return OkStatus();
}

// One ubatch of T <= Tm tokens at positions n_past ...; logits_host: [T, V] (all_logits), [V] (last
// token) or nullptr.
Status CudaForwardImpl::RunUbatch(const int32_t* tokens, int64_t T, int64_t n_past, bool all_logits,
                                  float* logits_host) {
  QWENRT_RETURN_IF_ERROR(Embed(tokens, T));
  if (T == 1 && use_graphs_) {
    QWENRT_RETURN_IF_ERROR(DecodeWithGraph(n_past));
  } else {
    QWENRT_RETURN_IF_ERROR(Layers(T, n_past, nullptr));
  }
  if (logits_host == nullptr) return OkStatus();
  return all_logits ? Logits(0, T, logits_host) : Logits(T - 1, 1, logits_host);
}

// The layer loop of forward.cpp's RunUbatch on a_.x, apart so that a decode step can be captured
// as a graph.
Status CudaForwardImpl::Layers(int64_t T, int64_t n_past, const int64_t* pos_dev) {
  const Weights& w = model_.weights();
  const int64_t E = c_.n_embd;
  // Each residual add is fused with the norm that follows it (x += mix; xn = RMSNorm(x)).
  QWENRT_RETURN_IF_ERROR(
      cuda::LaunchRmsNorm(a_.x.f(), Dev(w.layers[0].attn_norm), a_.xn.f(), T, E, c_.eps, stream_));
  for (int64_t l = 0; l < c_.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    const int64_t slot = c_.kind_index[l];
    if (c_.recurrent[l]) {
      QWENRT_RETURN_IF_ERROR(GatedDeltaLayer(lw.gdn, T, state_.conv(slot), state_.ssm(slot)));
    } else {
      QWENRT_RETURN_IF_ERROR(
          FullAttentionLayer(lw.attn, T, n_past, pos_dev, state_.k(slot), state_.v(slot)));
    }
    QWENRT_RETURN_IF_ERROR(cuda::LaunchAddRmsNorm(a_.x.f(), a_.mix.f(), Dev(lw.post_attention_norm),
                                                  a_.xn.f(), T, E, c_.eps, stream_));
    QWENRT_RETURN_IF_ERROR(c_.moe ? Moe(lw.moe, T) : Mlp(lw.ffn, T));
    if (l + 1 < c_.n_layer) {
      QWENRT_RETURN_IF_ERROR(cuda::LaunchAddRmsNorm(
          a_.x.f(), a_.mix.f(), Dev(w.layers[l + 1].attn_norm), a_.xn.f(), T, E, c_.eps, stream_));
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
  *pos_host_.as<int64_t>() = n_past;  // the previous step's copy is done: Embed synchronised
  QWENRT_RETURN_IF_ERROR(
      cuda::CopyToDevice(pos_dev_.i64(), pos_host_.as<int64_t>(), sizeof(int64_t), stream_));
  if (graph_ == nullptr || graph_kv_capacity_ != state_.kv_capacity()) {
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
    graph_kv_capacity_ = state_.kv_capacity();
  }
  return cuda::GraphLaunch(graph_, stream_);
}

Status CudaForwardImpl::Init() {
  // The CUDA rope kernel has no YaRN blend; refused until one is written and run on a device.
  if (c_.yarn()) {
    return Unsupported("CUDA forward: YaRN rope scaling is not supported on CUDA (use the CPU)");
  }
  if (!CudaAvailable()) return Unsupported("CUDA forward: no CUDA device is available");
  QWENRT_RETURN_IF_ERROR(stream_owner_.Create());
  stream_ = stream_owner_.get();
  QWENRT_ASSIGN_OR_RETURN(weights_, model_.cuda_weights());
  if (c_.n_attn_layers() > 0 && c_.head_dim > 512) {
    return Unsupported("CUDA forward: head_dim {} > 512", c_.head_dim);
  }
  if (c_.n_gdn_layers() > 0 && c_.ssm_dk > 256)
    return Unsupported("CUDA forward: ssm Dk {} > 256", c_.ssm_dk);

  const int64_t Tm = Tm_, E = c_.n_embd, X = c_.n_expert, K = c_.n_expert_used;
  DeviceActivations& a = a_;
  Status allocated = OkStatus();
  try {
    ForEachActivation(a, c_, Tm, [&](auto& buffer, int64_t n) {
      if constexpr (std::is_same_v<std::decay_t<decltype(buffer)>, DeviceArray>) {
        if (allocated.ok()) allocated = buffer.AllocateFloats(n);
      } else {
        buffer.resize(static_cast<size_t>(n));  // the host MoE grouping
      }
    });
    if (c_.moe) route_weights_.resize(static_cast<size_t>(Tm * K));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("CUDA forward: out of host memory for MoE routing");
  }
  QWENRT_RETURN_IF_ERROR(allocated);
  if (c_.n_attn_layers() > 0) {
    QWENRT_RETURN_IF_ERROR(
        a.att_scratch.AllocateFloats(cuda::AttentionScratchFloats(c_.n_head, c_.head_dim)));
  }
  QWENRT_RETURN_IF_ERROR(embed_host_.Allocate(static_cast<size_t>(Tm * E) * sizeof(float)));
  if (c_.moe) {
    QWENRT_RETURN_IF_ERROR(a.moe_rows.Allocate(static_cast<size_t>(2 * Tm * K) * sizeof(int32_t)));
    QWENRT_RETURN_IF_ERROR(router_host_.Allocate(static_cast<size_t>(Tm * X) * sizeof(float)));
    QWENRT_RETURN_IF_ERROR(moe_host_.Allocate(static_cast<size_t>(3 * Tm * K) * sizeof(float)));
  }
  QWENRT_RETURN_IF_ERROR(logits_stage_.Allocate(static_cast<size_t>(c_.n_vocab) * sizeof(float)));
  QWENRT_RETURN_IF_ERROR(pos_dev_.Allocate(sizeof(int64_t)));
  QWENRT_RETURN_IF_ERROR(pos_host_.Allocate(sizeof(int64_t)));
  return state_.Init(c_, Tm_, stream_);
}

Status CudaForwardImpl::Run(KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens,
                            bool all_logits, float* logits) {
  const int64_t T = static_cast<int64_t>(tokens.size()), n_past0 = kv.size(), V = c_.n_vocab;
  if (c_.n_attn_layers() > 0 && n_past0 + T > cuda::kAttentionMaxKeys) {  // before anything moves
    return Unsupported("CUDA forward: {} positions exceed the attention kernel's limit of {}",
                       n_past0 + T, cuda::kAttentionMaxKeys);
  }
  QWENRT_RETURN_IF_ERROR(state_.Adopt(rec));
  const size_t logits_bytes =
      static_cast<size_t>((all_logits ? std::min(T, Tm_) : 1) * V) * sizeof(float);
  bool launched = false;  // from here on, the device state has advanced
  Status s = [&]() -> Status {
    if (a_.logits.bytes() < logits_bytes) QWENRT_RETURN_IF_ERROR(a_.logits.Allocate(logits_bytes));
    QWENRT_RETURN_IF_ERROR(state_.Upload(kv, rec));
    launched = true;
    for (int64_t b = 0; b < T; b += Tm_) {
      const int64_t n = std::min(Tm_, T - b);
      float* out = all_logits ? logits + b * V : (b + n == T ? logits : nullptr);
      QWENRT_RETURN_IF_ERROR(RunUbatch(tokens.data() + b, n, n_past0 + b, all_logits, out));
    }
    return state_.FetchKvRows(kv, n_past0, T);  // small; the recurrent state stays pending here
  }();
  if (!s.ok()) return state_.Failed(rec, launched, std::move(s));
  kv.Commit(n_past0 + T);
  state_.Advanced(kv, rec);
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<CudaForward>> CudaForward::Create(const Model& model,
                                                           const Options& options) {
  if (options.max_ubatch < 1)
    return InvalidArgument("max_ubatch must be >= 1, got {}", options.max_ubatch);
  auto f = std::make_unique<CudaForwardImpl>(model, options);
  QWENRT_RETURN_IF_ERROR(f->Init());
  return std::unique_ptr<CudaForward>(std::move(f));
}

}  // namespace qwenrt

#endif  // QWENRT_HAVE_CUDA
