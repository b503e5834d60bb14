// The forward pass: runs a batch of tokens of one sequence through the model, advancing its KV cache
// and recurrent state, and produces logits. ForwardContext holds the per-session scratch (sized for
// the largest ubatch, so no allocation per token) and the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/backend.h"
#include "model/forward_cuda.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace qwenrt {

// Scratch activations for one ubatch of up to Tm tokens (cf. gemma.cpp activations.h).
struct Activations {
  std::vector<float> x;        // [Tm, E] residual stream
  std::vector<float> xn;       // [Tm, E] normed input of the current sub-block
  std::vector<float> mix;      // [Tm, E] sub-block output
  // Gated delta net.
  std::vector<float> qkv;      // [Tm, C] projections before the conv (the conv state's inputs)
  std::vector<float> conv;     // [Tm, C] after conv + SiLU
  std::vector<float> z;        // [Tm, Hv*Dv] output gate
  std::vector<float> alpha;    // [Tm, Hv] decay input, then g (log-decay)
  std::vector<float> beta;     // [Tm, Hv] write strength input, then sigmoid'ed
  std::vector<float> gq;       // [Tm, Hk, Dk]
  std::vector<float> gk;       // [Tm, Hk, Dk]
  std::vector<float> gv;       // [Tm, Hv, Dv]
  std::vector<float> go;       // [Tm, Hv, Dv] delta-rule output, then gated-normed
  // Full attention.
  std::vector<float> qg;       // [Tm, H, 2, Dh] joint query + gate projection
  std::vector<float> q;        // [Tm, H, Dh] normed query rows of qg (the gate is read in place)
  std::vector<float> k;        // [Tm, Hkv, Dh]
  std::vector<float> v;        // [Tm, Hkv, Dh]
  std::vector<float> att;      // [Tm, H, Dh]
  // FFN (dense: F wide; MoE: reused for routed experts (Fe) and the shared expert (Fs)).
  std::vector<float> ff_gate;  // [Tm, max(F, Fe, Fs)]
  std::vector<float> ff_up;    // [Tm, max(F, Fe, Fs)]
  // MoE.
  std::vector<float> router;   // [Tm, X] logits, then probabilities
  std::vector<int32_t> ids;    // [Tm, k] selected experts per token, in selection order
  std::vector<float> weights;  // [Tm, k] their normalised weights
  std::vector<int32_t> slots;  // [Tm * k] (token, slot) pairs t*k+j grouped by expert
  std::vector<int32_t> expert_begin;  // [X + 1] offsets into `slots`
  std::vector<float> xe;       // [Tm, E] gathered inputs of one expert
  std::vector<float> ye;       // [Tm, E] that expert's outputs
  std::vector<float> yslot;    // [Tm, k, E] routed outputs per (token, slot), summed in slot order
  std::vector<float> shgate;   // [Tm] shared-expert gate logit
};

class ForwardContext {
 public:
  struct Options {
    int64_t max_ubatch = 512;  // Tm: larger inputs are run in pieces of this many tokens
    BackendOptions backend;
    bool cuda_graphs = false;  // kCuda: replay decode steps as one CUDA graph (CudaForward::Options)
  };
  // `model` must outlive the context. kCpu needs `pool` (which must outlive the context); kRef and
  // kCuda ignore it. kCuda runs the whole pass on the GPU (forward_cuda.h). Errors: InvalidArgument,
  // OutOfMemory; kCuda: Unsupported (no CUDA build or device), Device.
  static StatusOr<std::unique_ptr<ForwardContext>> Create(const Model& model, BackendKind kind,
                                                          ThreadPool* pool, const Options& options);
  static StatusOr<std::unique_ptr<ForwardContext>> Create(const Model& model, BackendKind kind,
                                                          ThreadPool* pool) {
    return Create(model, kind, pool, Options());
  }

  const Model& model() const { return model_; }
  BackendKind kind() const { return kind_; }
  int64_t max_ubatch() const { return max_ubatch_; }
  size_t bytes() const;  // scratch bytes held

 private:
  ForwardContext(const Model& model, BackendKind kind) : model_(model), kind_(kind) {}
  friend Status Forward(ForwardContext&, KvCache&, RecurrentState&, std::span<const int32_t>, bool, float*);

  const Model& model_;
  BackendKind kind_;
  int64_t max_ubatch_ = 0;
  std::unique_ptr<Backend> backend_;  // kRef, kCpu
  Activations act_;                   // kRef, kCpu
  std::unique_ptr<CudaForward> cuda_;  // kCuda
};

// Runs `tokens` at positions kv.size() .. kv.size()+T-1, advancing kv and rec.
// logits: [T, V] when all_logits, else [V] for the last token.
// Errors (kv and rec unchanged): InvalidArgument (empty input, token id outside [0, V), null logits,
// state not made for this model), ContextFull / OutOfMemory (KV cache cannot grow or copy a shared
// page), Unsupported (kCuda with a KV cache not stored in f32).
// One thread per (ctx, kv, rec) at a time; the Model may be shared.
Status Forward(ForwardContext& ctx, KvCache& kv, RecurrentState& rec, std::span<const int32_t> tokens,
               bool all_logits, float* logits);

}  // namespace qwenrt
