// The forward pass: runs the tokens of one or several sequences through the model, advancing each
// one's KV cache and recurrent state, and produces logits. ForwardContext holds the scratch (sized
// for the largest ubatch and the most sequences per step, so no allocation per step) and the
// backend. Forward (one sequence) is ForwardBatch with one step: one code path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/activations.h"
#include "model/backend.h"
#include "model/forward_cuda.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"

namespace qwenrt {

// Scratch activations of the host backends (kRef, kCpu): the buffers of activations.h, plus the
// batching buffer.
struct Activations : ActivationSet<std::vector<float>, std::vector<int32_t>> {
  std::vector<float> logits;  // [Sm, V] last-token logits of several sequences, before the copy out
};

// What a speculative verify pass (session/speculative.cpp) keeps of every GDN layer so that the
// recurrent state can be moved to the end of any position of the window afterwards without running
// the trunk again: the state before the pass, and per token the raw conv inputs and the delta-rule
// inputs. RestoreCaptured puts the state before the pass back and ReplayRecurrent rebuilds the
// state after any prefix of the window from these alone (a window shift for the conv, the
// recurrence for the delta rule). Much smaller than one recurrent state per position: one state,
// plus per token and layer C + 2*Hk*Dk + Hv*Dv + 2*Hv floats against C*(Kc-1) + Hv*Dv*Dk. Each
// layer's state is copied inside the pass just before the layer's conv / delta rule reads it, so
// the copy's reads hit the cache the op then reads from, instead of a separate pass over the whole
// state beforehand.
struct GdnCapture {
  // Room for `max_tokens` tokens of every GDN layer of `config`. Error: OutOfMemory.
  Status Init(const ModelConfig& config, int64_t max_tokens);
  size_t bytes() const {
    return (data.capacity() + out.capacity() + before.capacity()) * sizeof(float);
  }

  // Layer l's arrays, token-major as the ops read them: conv inputs [Tm, C]; q, k [Tm, Hk, Dk]
  // (L2-normed, q scaled); v [Tm, Hv, Dv]; g, beta [Tm, Hv] (gated: what GatedDelta reads).
  float* conv_in(int64_t l) { return data.data() + l * layer_floats; }
  float* q(int64_t l) { return conv_in(l) + max_tokens * C; }
  float* k(int64_t l) { return q(l) + max_tokens * Hk * Dk; }
  float* v(int64_t l) { return k(l) + max_tokens * Hk * Dk; }
  float* g(int64_t l) { return v(l) + max_tokens * Hv * Dv; }
  float* beta(int64_t l) { return g(l) + max_tokens * Hv; }
  // Layer l's state before the pass: conv window [C, Kc-1], then delta rule [Hv, Dv, Dk].
  float* conv_before(int64_t l) { return before.data() + l * (conv_floats + ssm_floats); }
  float* ssm_before(int64_t l) { return conv_before(l) + conv_floats; }

  int64_t max_tokens = 0;  // Tm
  int64_t n_layers = 0;
  int64_t C = 0, Kc = 0, Hk = 0, Hv = 0, Dk = 0, Dv = 0;
  int64_t layer_floats = 0;                 // Tm * (C + 2*Hk*Dk + Hv*Dv + 2*Hv)
  int64_t conv_floats = 0, ssm_floats = 0;  // per layer, as RecurrentState
  std::vector<float> data;                  // [n_layers, layer_floats]
  std::vector<float> before;                // [n_layers, conv_floats + ssm_floats]
  std::vector<float> out;  // [Tm, Hv*Dv]: the replay's delta-rule outputs (discarded)
};

// One sequence's part of a ForwardBatch step: `tokens` run at positions kv->size() .. +T-1.
struct SequenceStep {
  KvCache* kv = nullptr;
  RecurrentState* rec = nullptr;
  std::span<const int32_t> tokens;
  bool all_logits = false;  // logits: [T, V] when true, else [V] for the last token
  float* logits = nullptr;
  Status status;  // out: this sequence's result (kv and rec unchanged unless OK)
  // Optional [T, E]: the final hidden rows after output_norm (what the LM head reads), which the
  // MTP draft head consumes (model/mtp.h). Null (the default) costs nothing.
  float* hidden = nullptr;
  // Host backends only: records the GDN inputs of the step's tokens (at most capture->max_tokens;
  // InvalidArgument otherwise, and for kCuda, which has no host activations to read them from).
  GdnCapture* capture = nullptr;
};

// One run of an MTP (next-n) block (model/mtp.h, docs/mtp.md): rows t = 0 .. T-1 at positions
// pos + t, each fusing the trunk's post-norm hidden state hidden[t] with the embedding of
// tokens[t] (the token after that hidden state's position), through the MTP block's attention
// (its own slot of `kv`, KvCache::mtp_slot()) and FFN, then its head norm and the LM head.
struct MtpStep {
  KvCache* kv = nullptr;            // with an MTP slot; rows [0, pos) of that slot are read
  int64_t pos = 0;                  // position of row 0 (rows before it written, e.g. pos <= size)
  std::span<const int32_t> tokens;  // [T]
  const float* hidden = nullptr;    // [T, E] post-norm trunk hidden rows (or previous MTP outputs)
  float* out_hidden = nullptr;      // optional [T, E]: head-normed rows m_t (the next draft's h)
  float* logits = nullptr;          // optional: [T, V] when all_logits, else [V] of the last row
  bool all_logits = false;
  int64_t block = 0;  // which MTP block (0 .. n_nextn-1)
};

// One sequence's rows of a ubatch (ForwardBatch's bookkeeping, held in the context's scratch).
struct UbatchSegment {
  int64_t row = 0;     // first row of the ubatch
  int64_t T = 0;       // rows (tokens of this sequence in the ubatch)
  int64_t n_past = 0;  // position of the first
  int64_t first = 0;   // index of the first in the step's tokens
  SequenceStep* step = nullptr;
};

class ForwardContext {
 public:
  struct Options {
    int64_t max_ubatch =
        512;  // Tm: larger inputs are run in pieces of this many tokens (all sequences)
    int64_t max_sequences = 1;  // Sm: most sequences in one ForwardBatch
    BackendOptions backend;
    bool cuda_graphs =
        false;  // kCuda: replay decode steps as one CUDA graph (CudaForward::Options)
  };
  // `model` must outlive the context. kCpu needs `pool` (which must outlive the context); kRef and
  // kCuda ignore it. kCuda runs the whole pass on the GPU (forward_cuda.h). Errors:
  // InvalidArgument, OutOfMemory; kCuda: Unsupported (no CUDA build or device), Device.
  static StatusOr<std::unique_ptr<ForwardContext>> Create(const Model& model, BackendKind kind,
                                                          ThreadPool* pool, const Options& options);
  static StatusOr<std::unique_ptr<ForwardContext>> Create(const Model& model, BackendKind kind,
                                                          ThreadPool* pool) {
    return Create(model, kind, pool, Options());
  }

  const Model& model() const { return model_; }
  BackendKind kind() const { return kind_; }
  int64_t max_ubatch() const { return max_ubatch_; }
  int64_t max_sequences() const { return max_sequences_; }
  // Host scratch bytes held: the activations, the batching logits and the backend's attention
  // scratch (0 for kCuda, whose buffers are on the device).
  size_t bytes() const;
  // What bytes() reports for a context of `kind` made with `options` on a pool of `threads`, once
  // its attention has run over caches of up to `n_kv` positions: Create and ForwardBatch allocate
  // by the same functions (ForEachActivation, BatchLogitsFloats, BackendScratchFloats), so the
  // memory estimate (session/memory_estimate.h) cannot drift from them.
  static size_t BytesFor(const ModelConfig& config, BackendKind kind, const Options& options,
                         int threads, int64_t n_kv);
  // Grows the attention scratch for caches of up to `n_kv` positions now, as a forward pass over
  // such a cache would (Session::Reserve). No-op for kCuda. Error: OutOfMemory.
  Status ReserveAttention(int64_t n_kv);

 private:
  ForwardContext(const Model& model, BackendKind kind) : model_(model), kind_(kind) {}
  friend Status ForwardBatch(ForwardContext&, std::span<SequenceStep>);
  friend Status ForwardMtp(ForwardContext&, const MtpStep&);
  friend Status ReplayRecurrent(ForwardContext&, GdnCapture&, int64_t, int64_t, RecurrentState&);

  const Model& model_;
  BackendKind kind_;
  int64_t max_ubatch_ = 0;
  int64_t max_sequences_ = 1;
  std::vector<UbatchSegment> segments_;  // [Sm] of the ubatch being run
  std::unique_ptr<Backend> backend_;     // kRef, kCpu
  Activations act_;                      // kRef, kCpu
  std::unique_ptr<CudaForward> cuda_;    // kCuda
};

// Runs `tokens` at positions kv.size() .. kv.size()+T-1, advancing kv and rec.
// logits: [T, V] when all_logits, else [V] for the last token.
// Errors (kv and rec unchanged): InvalidArgument (empty input, token id outside [0, V), null
// logits, state not made for this model), ContextFull / OutOfMemory (KV cache cannot grow or copy a
// shared page), Unsupported (kCuda with a KV cache not stored in f32). One thread per (ctx, kv,
// rec) at a time; the Model may be shared. The same as ForwardBatch with this one step.
Status Forward(ForwardContext& ctx, KvCache& kv, RecurrentState& rec,
               std::span<const int32_t> tokens, bool all_logits, float* logits);

// Runs several sequences in one pass: the matmuls, norms, FFN/MoE and the LM head run once over the
// rows of all sequences (each weight is read once per ubatch, not once per sequence), the causal
// conv, delta rule, rope, KV writes and attention per sequence with its own position and state.
// Every op is row-independent, so each sequence's logits are bit-identical to running it alone
// (Forward), whatever the other sequences and its position in `steps`. Inputs larger than
// max_ubatch rows in total are run in ubatches of at most that many rows, filled in step order.
// Each step is validated on its own (Forward's errors, and InvalidArgument when two steps share a
// KV cache or a recurrent state): a step that fails gets its status and is left out, the others
// run. Whole-batch errors: InvalidArgument (more than max_sequences steps), OutOfMemory (backend
// scratch), Unsupported (more than one step on a backend CheckBatching refuses: kCuda, whose pass
// runs one sequence; model/backend_choice.h), set on every step. Returns OK when every step
// succeeded, else the first failed step's status.
Status ForwardBatch(ForwardContext& ctx, std::span<SequenceStep> steps);

// Runs an MTP block over step.tokens (split into max_ubatch pieces), writing K/V rows
// [pos, pos + T) of the cache's MTP slot (copy-on-write like a trunk pass; the trunk's size() is
// not changed, so rows past it are scratch until the trunk gets there). The attention layer, FFN
// and norms are the trunk's own layer functions. Errors (nothing written): InvalidArgument (no MTP
// block or slot, bad ids, null buffers, pos < 0), Unsupported (kCuda), ContextFull /
// OutOfMemory (KV pages).
Status ForwardMtp(ForwardContext& ctx, const MtpStep& step);
// Advances `rec` over tokens [from, to) of a pass recorded in `capture`: `rec` must hold the state
// before token `from` (the state before the pass, for from == 0). The conv windows shift in the
// recorded inputs, and the delta rule runs over the recorded q, k, v, g, beta with ctx's backend,
// the same call the pass made, so the result is bit for bit the state the pass had after token
// to-1 (the recurrent form of the delta rule is the same whether it runs T tokens at once or one at
// a time: docs/gated-delta.md). Errors: InvalidArgument (range, shapes, or a kCuda context).
Status ReplayRecurrent(ForwardContext& ctx, GdnCapture& capture, int64_t from, int64_t to,
                       RecurrentState& rec);
// Puts the state the captured pass started from back into `rec`. Error: InvalidArgument (shapes).
Status RestoreCaptured(GdnCapture& capture, RecurrentState& rec);

}  // namespace qwenrt
