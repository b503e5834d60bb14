// The Qwen3.5 forward pass (docs/spec/qwen35-architecture.md §1, §7–§9, §11), one ubatch at a time.
// A ubatch holds the rows of one or more sequences (segments): row-wise ops run once over all rows,
// the ops that read a sequence's position or state (conv, delta rule, rope, KV, attention) once per
// segment. Read this file first: each
// layer kind is a short list of named backend ops (backend.h; docs/engine.md, "Op names"), the same
// names in the same order as the CUDA pass (forward_cuda.cpp); the ops live in src/ops/.
//
//   x = token_embd[tokens]
//   for each layer: x += GatedDeltaLayer or FullAttentionLayer (RMSNorm(x, attn_norm))
//                   x += Mlp or Moe (RMSNorm(x, post_attention_norm))
//   logits = output · RMSNorm(x, output_norm)
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <new>

#include "model/backend_choice.h"

namespace qwenrt {
namespace {

// What the layer functions of one ubatch share.
struct Step {
  const ModelConfig& c;
  Backend& be;
  Activations& a;
  int64_t T;                            // rows in this ubatch (all sequences)
  std::span<const UbatchSegment> seqs;  // each sequence's rows, in row order
};

// Copies segment q's GDN inputs of GDN layer `slot` into its step's capture (forward.h), at the
// tokens' indices in the step. The conv inputs (a.qkv) are still intact after GdnSplit.
void CaptureGdnInputs(const Step& s, GdnCapture& cap, const UbatchSegment& q, int64_t slot) {
  const Activations& a = s.a;
  const int64_t qk = cap.Hk * cap.Dk, vd = cap.Hv * cap.Dv, C = cap.C, Hv = cap.Hv;
  const int64_t r = q.row, t = q.first, n = q.T;
  if (t == 0) {  // the delta-rule state before the pass, read just before GatedDelta reads it
    const RecurrentState& rec = *q.step->rec;
    std::copy_n(rec.ssm(slot), cap.ssm_floats, cap.ssm_before(slot));
  }
  std::copy_n(a.qkv.data() + r * C, n * C, cap.conv_in(slot) + t * C);
  std::copy_n(a.gq.data() + r * qk, n * qk, cap.q(slot) + t * qk);
  std::copy_n(a.gk.data() + r * qk, n * qk, cap.k(slot) + t * qk);
  std::copy_n(a.gv.data() + r * vd, n * vd, cap.v(slot) + t * vd);
  std::copy_n(a.alpha.data() + r * Hv, n * Hv, cap.g(slot) + t * Hv);
  std::copy_n(a.beta.data() + r * Hv, n * Hv, cap.beta(slot) + t * Hv);
}

// Gated delta net (qwen35-architecture.md §7): xn -> mix, advancing this layer's conv window and
// delta-rule state. `slot` indexes the GDN layers of each sequence's recurrent state.
void GatedDeltaLayer(Step& s, const GatedDeltaWeights& w, int64_t slot) {
  const ModelConfig& c = s.c;
  Activations& a = s.a;
  const int64_t T = s.T, Hk = c.ssm_hk, Hv = c.ssm_hv, Dk = c.ssm_dk, Dv = c.ssm_dv,
                C = c.conv_channels();
  const WeightMatrix proj[] = {w.qkv, w.gate, w.beta, w.alpha};
  float* const proj_out[] = {a.qkv.data(),     // m: [T, C]
                             a.z.data(),       // z: [T, Hv*Dv]
                             a.beta.data(),    // b: [T, Hv]
                             a.alpha.data()};  // a: [T, Hv]
  s.be.MatMulMulti(proj, 4, a.xn.data(), proj_out, T);
  for (const UbatchSegment& q :
       s.seqs) {  // y = SiLU(conv(m)), each sequence's window [C, Kc-1] advanced
    if (q.step->capture != nullptr && q.first == 0) {  // a verify pass keeps the window before
      const RecurrentState& rec = *q.step->rec;
      std::copy_n(rec.conv(slot), q.step->capture->conv_floats, q.step->capture->conv_before(slot));
    }
    s.be.CausalConvSilu(CausalConvShape{q.T, C, c.conv_kernel}, a.qkv.data() + q.row * C, w.conv1d,
                        q.step->rec->conv(slot), a.conv.data() + q.row * C);
  }
  // q, k [T, Hk, Dk] L2-normed (q scaled by 1/sqrt(Dk)), v [T, Hv, Dv]; g, beta from a, b.
  s.be.GdnSplit(GatedDeltaShape{T, Hk, Hv, Dk, Dv}, a.conv.data(), c.eps,
                1.0f / std::sqrt(static_cast<float>(Dk)), a.gq.data(), a.gk.data(), a.gv.data(),
                a.alpha.data(), a.beta.data(), w.ssm_a, w.dt_bias);
  for (const UbatchSegment& q : s.seqs) {  // a verify pass keeps what the delta rule reads
    if (q.step->capture != nullptr) CaptureGdnInputs(s, *q.step->capture, q, slot);
  }
  // Value head h reads key head h % Hk (tiled order, qwen35-architecture.md §5.1). Each sequence
  // advances its own state [Hv, Dv, Dk].
  for (const UbatchSegment& q : s.seqs) {
    const int64_t qk = q.row * Hk * Dk, vo = q.row * Hv * Dv, h = q.row * Hv;
    s.be.GatedDelta(GatedDeltaShape{q.T, Hk, Hv, Dk, Dv}, a.gq.data() + qk, a.gk.data() + qk,
                    a.gv.data() + vo, a.alpha.data() + h, a.beta.data() + h, q.step->rec->ssm(slot),
                    a.go.data() + vo);
  }
  s.be.GatedRmsNorm(a.go.data(), w.norm, a.z.data(), a.go.data(), T * Hv, Dv,
                    c.eps);  // norm(o) * silu(z)
  s.be.MatMul(w.out, a.go.data(), a.mix.data(), T);
}

// Gated full attention (qwen35-architecture.md §8): xn -> mix; writes each sequence's K/V rows into
// attention layer `slot` of its cache (pages made writable by Reserve) and reads them back through
// the cache's page view.
void FullAttentionLayer(Step& s, const AttentionWeights& w, const RopeParams& rope, int64_t slot) {
  const ModelConfig& c = s.c;
  Activations& a = s.a;
  const int64_t T = s.T, H = c.n_head, Hkv = c.n_head_kv, Dh = c.head_dim;
  const WeightMatrix proj[] = {w.q, w.k, w.v};
  float* const proj_out[] = {a.qg.data(),  // [T, H, 2, Dh]: query, then gate, per head
                             a.k.data(),   // [T, Hkv, Dh]
                             a.v.data()};  // [T, Hkv, Dh]
  s.be.MatMulMulti(proj, 3, a.xn.data(), proj_out, T);
  s.be.RmsNormRows(a.qg.data(), 2 * Dh, w.q_norm, a.q.data(), T * H, Dh,
                   c.eps);  // query rows, read in place
  s.be.RmsNorm(a.k.data(), w.k_norm, a.k.data(), T * Hkv, Dh, c.eps);
  const int64_t row = Hkv * Dh;
  for (const UbatchSegment& q : s.seqs) {  // each sequence's rows at its own positions
    s.be.Rope(a.q.data() + q.row * H * Dh, q.T, H, Dh, q.n_past, rope);
    s.be.Rope(a.k.data() + q.row * row, q.T, Hkv, Dh, q.n_past, rope);
  }

  s.be.RoundAttentionInputs(a.q.data(), T * H * Dh, a.k.data(), a.v.data(), T * Hkv * Dh);
  for (const UbatchSegment& q : s.seqs) {  // K/V rows into the sequence's cache at n_past
    KvCache& kv = *q.step->kv;
    kv.WriteRows(slot, q.n_past, q.T, a.k.data() + q.row * row,
                 a.v.data() + q.row * row);  // its storage type
    s.be.Attention(AttentionShape{q.T, q.n_past, H, Hkv, Dh}, a.q.data() + q.row * H * Dh,
                   kv.KeyView(slot), kv.ValueView(slot), a.att.data() + q.row * H * Dh);
  }
  s.be.MulSigmoid(a.att.data(), a.qg.data() + Dh, T * H, Dh,
                  2 * Dh);  // output gate, read in place from qg
  s.be.MatMul(w.o, a.att.data(), a.mix.data(), T);
}

// y[n, E] = down · (silu(gate · x) * (up · x)) for n rows x[n, E], hidden width gate.rows.
void SwiGluFfn(Step& s, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
               const float* x, float* y, int64_t n) {
  const WeightMatrix proj[] = {gate, up};
  float* const proj_out[] = {s.a.ff_gate.data(), s.a.ff_up.data()};  // [n, F] each
  s.be.MatMulMulti(proj, 2, x, proj_out, n);
  s.be.SwiGlu(s.a.ff_gate.data(), s.a.ff_up.data(), n * gate.rows);
  s.be.MatMul(down, s.a.ff_up.data(), y, n);
}

// Dense SwiGLU FFN (qwen35-architecture.md §9.1): xn -> mix.
void Mlp(Step& s, const DenseFfnWeights& w) {
  SwiGluFfn(s, w.gate, w.up, w.down, s.a.xn.data(), s.a.mix.data(), s.T);
}

// Routed experts + sigmoid-gated shared expert (qwen35-architecture.md §9.2): xn -> mix. Tokens are
// grouped by expert so each expert runs one [n, E] matmul; results are summed per token in
// selection order.
void Moe(Step& s, const MoeWeights& w) {
  const ModelConfig& c = s.c;
  Activations& a = s.a;
  const int64_t T = s.T, E = c.n_embd, X = c.n_expert, K = c.n_expert_used;
  s.be.MatMul(w.router, a.xn.data(), a.router.data(), T);  // [T, X]
  s.be.MoeRoute(a.router.data(), T, X, K, a.ids.data(), a.weights.data());
  s.be.GroupByExpert(a.ids.data(), T * K, X, a.slots.data(), a.expert_begin.data());
  for (int64_t e = 0; e < X; ++e) {
    const int64_t b = a.expert_begin[e], n = a.expert_begin[e + 1] - b;
    if (n == 0) continue;
    s.be.MoeGather(a.xn.data(), a.slots.data() + b, n, K, E, a.xe.data());
    SwiGluFfn(s, w.gate.Expert(e), w.up.Expert(e), w.down.Expert(e), a.xe.data(), a.ye.data(), n);
    s.be.MoeScatter(a.ye.data(), a.slots.data() + b, n, E, a.yslot.data());  // to (token, slot)
  }
  s.be.MoeCombine(a.yslot.data(), a.weights.data(), T, K, E, a.mix.data());

  SwiGluFfn(s, w.shexp_gate, w.shexp_up, w.shexp_down, a.xn.data(), a.ye.data(), T);
  s.be.MatMul(w.shexp_gate_inp, a.xn.data(), a.shgate.data(), T);  // [T, 1]
  s.be.AddSigmoidGated(a.mix.data(), a.ye.data(), a.shgate.data(), T, E);
}

// logits[rows, V] = output · RMSNorm(x[first .. first+rows), output_norm)   (qwen35-architecture.md
// §11)
void Logits(Step& s, const Weights& w, int64_t first, int64_t rows, float* logits) {
  const int64_t E = s.c.n_embd;
  s.be.RmsNorm(s.a.x.data() + first * E, w.output_norm, s.a.xn.data(), rows, E, s.c.eps);
  s.be.MatMul(w.output, s.a.xn.data(), logits, rows);
}

// The rotary embedding of the model's full-attention layers (trunk and MTP blocks alike).
RopeParams RopeOf(const ModelConfig& c) {
  return RopeParams{.n_dims = c.rope_dims,
                    .base = c.rope_base,
                    .freq_scale = c.rope_freq_scale,
                    .pair_uses_pos = &c.rope_pair_uses_pos,
                    .yarn = c.rope_yarn};
}

// One ubatch of s.T <= max_ubatch rows (the segments' tokens, concatenated in row order); each
// sequence's capacity already reserved. `logits_scratch`: [segments, V] for the last-token logits
// of several sequences.
void RunUbatch(ForwardContext& ctx, Step& s, float* logits_scratch) {
  const ModelConfig& c = s.c;
  const Weights& w = ctx.model().weights();
  Backend& be = s.be;
  Activations& act = s.a;
  const RopeParams rope = RopeOf(c);
  const int64_t T = s.T, E = c.n_embd, V = c.n_vocab;

  for (const UbatchSegment& q : s.seqs) {
    be.Embed(w.token_embd, q.step->tokens.data() + q.first, q.T, act.x.data() + q.row * E);
  }
  // Each residual add is fused with the norm that follows it (x += mix; xn = RMSNorm(x)).
  be.RmsNorm(act.x.data(), w.layers[0].attn_norm, act.xn.data(), T, E, c.eps);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    const int64_t slot = c.kind_index[l];
    if (c.recurrent[l]) {
      GatedDeltaLayer(s, lw.gdn, slot);
    } else {
      FullAttentionLayer(s, lw.attn, rope, slot);
    }
    be.AddRmsNorm(act.x.data(), act.mix.data(), lw.post_attention_norm, act.xn.data(), T, E, c.eps);
    if (c.moe) {
      Moe(s, lw.moe);
    } else {
      Mlp(s, lw.ffn);
    }
    if (l + 1 < c.n_layer) {
      be.AddRmsNorm(act.x.data(), act.mix.data(), w.layers[l + 1].attn_norm, act.xn.data(), T, E,
                    c.eps);
    } else {
      be.Add(act.x.data(), act.mix.data(), T * E);
    }
  }
  for (const UbatchSegment& q : s.seqs) q.step->kv->Commit(q.n_past + q.T);
  for (const UbatchSegment& q : s.seqs) {  // the MTP head's input, only when asked for
    if (q.step->hidden != nullptr) {
      be.RmsNorm(act.x.data() + q.row * E, w.output_norm, q.step->hidden + q.first * E, q.T, E,
                 c.eps);
    }
  }

  // Logits: all rows of the sequences that want them, straight into their buffers; the last rows of
  // the others gathered into one LM-head matmul (the largest weight), then copied out.
  int64_t n_last = 0;
  const UbatchSegment* only = nullptr;
  for (const UbatchSegment& q : s.seqs) {
    SequenceStep& st = *q.step;
    if (st.all_logits) {
      Logits(s, w, q.row, q.T, st.logits + q.first * V);
    } else if (q.first + q.T == static_cast<int64_t>(st.tokens.size())) {
      ++n_last;
      only = &q;
    }
  }
  if (n_last == 1) {
    Logits(s, w, only->row + only->T - 1, 1, only->step->logits);
  } else if (n_last > 1) {
    int64_t j = 0;
    for (const UbatchSegment& q : s.seqs) {
      if (q.step->all_logits || q.first + q.T != static_cast<int64_t>(q.step->tokens.size()))
        continue;
      be.RmsNorm(act.x.data() + (q.row + q.T - 1) * E, w.output_norm, act.xn.data() + j * E, 1, E,
                 c.eps);
      ++j;
    }
    be.MatMul(w.output, act.xn.data(), logits_scratch, n_last);  // [n_last, V]
    j = 0;
    for (const UbatchSegment& q : s.seqs) {
      if (q.step->all_logits || q.first + q.T != static_cast<int64_t>(q.step->tokens.size()))
        continue;
      std::copy_n(logits_scratch + j * V, V, q.step->logits);
      ++j;
    }
  }
}

// Forward's checks for one step; nothing is changed unless it returns OK (then the cache holds room
// for the step's tokens and the recurrent state is on the host).
Status CheckStep(const ModelConfig& c, SequenceStep& st) {
  const int64_t T = static_cast<int64_t>(st.tokens.size());
  if (st.kv == nullptr || st.rec == nullptr)
    return InvalidArgument("Forward: null KV cache or recurrent state");
  if (T == 0) return InvalidArgument("Forward: no tokens");
  if (st.logits == nullptr) return InvalidArgument("Forward: logits buffer is null");
  for (int64_t i = 0; i < T; ++i) {
    if (st.tokens[i] < 0 || st.tokens[i] >= c.n_vocab) {
      return InvalidArgument("token id {} at index {} is outside the vocabulary [0, {})",
                             st.tokens[i], i, c.n_vocab);
    }
  }
  const KvCache& kv = *st.kv;
  const RecurrentState& rec = *st.rec;
  if (kv.trunk_layers() != c.n_attn_layers() || kv.n_layers() > c.n_attn_layers() + c.n_nextn ||
      kv.row_floats() != c.n_head_kv * c.head_dim) {
    return InvalidArgument("Forward: the KV cache was not created for this model");
  }
  if (rec.n_layers() != c.n_gdn_layers() ||
      rec.conv_floats() != c.conv_channels() * (c.conv_kernel - 1) ||
      rec.ssm_floats() != c.ssm_hv * c.ssm_dv * c.ssm_dk) {
    return InvalidArgument("Forward: the recurrent state was not created for this model");
  }
  return st.kv->Reserve(kv.size() + T);
}

// Floats of the batching logits: several sequences' last-token rows [min(Tm, Sm), V] (a single
// sequence's row is written straight to its caller's buffer: none).
size_t BatchLogitsFloats(const ModelConfig& c, const ForwardContext::Options& options) {
  if (options.max_sequences <= 1) return 0;
  return static_cast<size_t>(std::min(options.max_ubatch, options.max_sequences) * c.n_vocab);
}

}  // namespace

StatusOr<std::unique_ptr<ForwardContext>> ForwardContext::Create(const Model& model,
                                                                 BackendKind kind, ThreadPool* pool,
                                                                 const Options& options) {
  if (options.max_ubatch < 1)
    return InvalidArgument("max_ubatch must be >= 1, got {}", options.max_ubatch);
  if (options.max_sequences < 1) {
    return InvalidArgument("max_sequences must be >= 1, got {}", options.max_sequences);
  }
  std::unique_ptr<ForwardContext> ctx(new ForwardContext(model, kind));
  ctx->max_ubatch_ = options.max_ubatch;
  ctx->max_sequences_ = options.max_sequences;
  try {
    ctx->segments_.resize(static_cast<size_t>(options.max_sequences));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory allocating forward bookkeeping for {} sequences",
                       options.max_sequences);
  }
  if (kind == BackendKind::kCuda) {  // device-resident: no host backend or scratch
    CudaForward::Options cuda;
    cuda.max_ubatch = options.max_ubatch;
    cuda.graphs = options.cuda_graphs;
    QWENRT_ASSIGN_OR_RETURN(ctx->cuda_, CudaForward::Create(model, cuda));
    return ctx;
  }
  QWENRT_ASSIGN_OR_RETURN(ctx->backend_, MakeBackend(kind, pool, options.backend));
  const ModelConfig& c = model.config();
  const int64_t Tm = options.max_ubatch;
  Activations& a = ctx->act_;
  try {
    ForEachActivation(a, c, Tm,
                      [](auto& buffer, int64_t n) { buffer.resize(static_cast<size_t>(n)); });
    a.logits.resize(BatchLogitsFloats(c, options));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory allocating forward scratch for ubatches of {} tokens", Tm);
  }
  return ctx;
}

size_t ForwardContext::bytes() const {
  size_t n = act_.logits.capacity() * sizeof(float);
  ForEachActivation(act_, model_.config(), max_ubatch_, [&](const auto& buffer, int64_t) {
    n += buffer.capacity() * sizeof(buffer[0]);
  });
  if (backend_ != nullptr) n += backend_->scratch_bytes();
  return n;
}

Status ForwardContext::ReserveAttention(int64_t n_kv) {
  if (backend_ == nullptr || n_kv <= 0) return OkStatus();
  const ModelConfig& c = model_.config();
  return backend_->Reserve(n_kv, AttentionGroup(c), c.head_dim);
}

size_t ForwardContext::BytesFor(const ModelConfig& c, BackendKind kind, const Options& options,
                                int threads, int64_t n_kv) {
  if (kind == BackendKind::kCuda) return 0;
  const Activations none;  // only the element types are read
  size_t n = BatchLogitsFloats(c, options) * sizeof(float);
  ForEachActivation(none, c, options.max_ubatch, [&](const auto& buffer, int64_t elements) {
    n += static_cast<size_t>(elements) * sizeof(buffer[0]);
  });
  if (n_kv > 0)  // as ForwardBatch: Reserve runs once some cache has positions
    n += static_cast<size_t>(
             BackendScratchFloats(kind, n_kv, AttentionGroup(c), c.head_dim, threads)) *
         sizeof(float);
  return n;
}

Status Forward(ForwardContext& ctx, KvCache& kv, RecurrentState& rec,
               std::span<const int32_t> tokens, bool all_logits, float* logits) {
  SequenceStep step{&kv, &rec, tokens, all_logits, logits, OkStatus()};
  return ForwardBatch(ctx, std::span<SequenceStep>(&step, 1));
}

Status ForwardBatch(ForwardContext& ctx, std::span<SequenceStep> steps) {
  const ModelConfig& c = ctx.model().config();
  const auto fail_all = [&](const Status& st) {
    for (SequenceStep& step : steps) step.status = st;
    return st;
  };
  if (static_cast<int64_t>(steps.size()) > ctx.max_sequences_) {
    return fail_all(
        InvalidArgument("ForwardBatch: {} sequences, the context was made for at most {}",
                        steps.size(), ctx.max_sequences_));
  }
  if (steps.size() > 1) {
    if (Status b = CheckBatching(ctx.kind_); !b.ok()) return fail_all(b);
  }
  int64_t n_kv = 0;  // the longest cache attention will read
  for (size_t i = 0; i < steps.size(); ++i) {
    SequenceStep& st = steps[i];
    st.status = OkStatus();
    for (size_t j = 0; j < i && st.status.ok(); ++j) {
      if (st.kv == steps[j].kv || st.rec == steps[j].rec) {
        st.status = InvalidArgument(
            "ForwardBatch: steps {} and {} share a KV cache or a recurrent state", j, i);
      }
    }
    if (st.status.ok()) st.status = CheckStep(c, st);
    if (st.status.ok() && ctx.cuda_ != nullptr && (st.hidden != nullptr || st.kv->has_mtp())) {
      st.status = Unsupported("the CUDA backend does not run the MTP draft head");
    }
    if (st.status.ok() && ctx.cuda_ != nullptr &&
        st.kv->type() != KvType::kF32) {  // its device cache is f32
      st.status = Unsupported("the CUDA backend keeps its KV cache in f32, not {}",
                              KvTypeName(st.kv->type()));
    }
    if (st.status.ok() && st.capture != nullptr &&
        (ctx.cuda_ != nullptr || static_cast<int64_t>(st.tokens.size()) > st.capture->max_tokens ||
         st.capture->n_layers != c.n_gdn_layers() || st.capture->C != c.conv_channels())) {
      st.status = InvalidArgument(
          "ForwardBatch: a GDN capture needs a host backend, a capture made for this model and "
          "room for the step's {} tokens",
          st.tokens.size());
    }
    if (st.status.ok() && ctx.cuda_ != nullptr) {
      st.status = ctx.cuda_->Run(*st.kv, *st.rec, st.tokens, st.all_logits, st.logits);
      return st.status;
    }
    if (st.status.ok())
      st.status = st.rec->Fetch();  // a state a CUDA context still holds is brought back first
    if (st.status.ok()) n_kv = std::max(n_kv, st.kv->capacity());
  }
  if (n_kv > 0) {
    const Status reserved = ctx.ReserveAttention(n_kv);  // grows with the caches only
    if (!reserved.ok()) {
      for (SequenceStep& st : steps) {
        if (st.status.ok()) st.status = reserved;
      }
    }
  }
  // Nothing below can fail: the states are only touched from here on. Ubatches of up to Tm rows are
  // filled with the steps' tokens in order; a step may continue in the next ubatch.
  const int64_t Tm = ctx.max_ubatch_;
  size_t i = 0;
  int64_t done = 0;  // tokens of steps[i] already run
  const auto skip_failed = [&] {
    while (i < steps.size() && !steps[i].status.ok()) ++i;
  };
  skip_failed();
  while (i < steps.size()) {
    int64_t rows = 0, n = 0;
    for (size_t k = i; k < steps.size() && rows < Tm; ++k) {
      SequenceStep& st = steps[k];
      if (!st.status.ok()) continue;
      const int64_t first = k == i ? done : 0;
      const int64_t take = std::min(Tm - rows, static_cast<int64_t>(st.tokens.size()) - first);
      ctx.segments_[n++] = UbatchSegment{rows, take, st.kv->size(), first, &st};
      rows += take;
    }
    Step s{c, *ctx.backend_, ctx.act_, rows,
           std::span<const UbatchSegment>(ctx.segments_.data(), n)};
    RunUbatch(ctx, s, ctx.act_.logits.data());
    // Advance past the steps this ubatch finished.
    const UbatchSegment& last = ctx.segments_[n - 1];
    if (last.first + last.T == static_cast<int64_t>(last.step->tokens.size())) {
      i = static_cast<size_t>(last.step - steps.data()) + 1;
      done = 0;
    } else {
      i = static_cast<size_t>(last.step - steps.data());
      done = last.first + last.T;
    }
    skip_failed();
  }
  for (const SequenceStep& st : steps) {
    if (!st.status.ok()) return st.status;
  }
  return OkStatus();
}

// The MTP block (docs/mtp.md): u = eh_proj · [enorm(embed(x)) ; hnorm(h)], then the block's
// full-attention layer and FFN with residuals exactly as a trunk layer runs them (the same
// functions), then m = head_norm(u) and logits = head · m.
Status ForwardMtp(ForwardContext& ctx, const MtpStep& st) {
  const Model& model = ctx.model();
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  const int64_t T = static_cast<int64_t>(st.tokens.size()), E = c.n_embd, V = c.n_vocab;
  if (ctx.cuda_ != nullptr) return Unsupported("the CUDA backend does not run the MTP draft head");
  if (st.block < 0 || st.block >= static_cast<int64_t>(w.mtp.size()))
    return InvalidArgument("ForwardMtp: the model has no MTP block {}", st.block);
  if (st.kv == nullptr || !st.kv->has_mtp() || st.kv->trunk_layers() != c.n_attn_layers() ||
      st.kv->n_layers() <= st.kv->mtp_slot(st.block) ||
      st.kv->row_floats() != c.n_head_kv * c.head_dim)
    return InvalidArgument("ForwardMtp: the KV cache has no MTP slot for this model");
  if (T == 0) return InvalidArgument("ForwardMtp: no tokens");
  if (st.hidden == nullptr) return InvalidArgument("ForwardMtp: hidden rows are null");
  for (int64_t i = 0; i < T; ++i) {
    if (st.tokens[i] < 0 || st.tokens[i] >= V) {
      return InvalidArgument("token id {} at index {} is outside the vocabulary [0, {})",
                             st.tokens[i], i, V);
    }
  }
  KvCache& kv = *st.kv;
  if (st.pos < 0) return InvalidArgument("ForwardMtp: negative position {}", st.pos);
  // Rows at and past the trunk's size are written too (draft steps): make them writable, copying a
  // page a fork shares first.
  QWENRT_RETURN_IF_ERROR(kv.Reserve(st.pos + T, st.pos));
  QWENRT_RETURN_IF_ERROR(ctx.ReserveAttention(kv.capacity()));

  const MtpWeights& mw = w.mtp[static_cast<size_t>(st.block)];
  const LayerWeights& lw = mw.layer;
  const int64_t slot = kv.mtp_slot(st.block);
  Backend& be = *ctx.backend_;
  Activations& act = ctx.act_;
  const RopeParams rope = RopeOf(c);
  // FullAttentionLayer reads a sequence's cache and position through its segment.
  SequenceStep seq;
  seq.kv = &kv;
  for (int64_t done = 0; done < T;) {
    const int64_t n = std::min(ctx.max_ubatch_, T - done);
    const UbatchSegment seg{0, n, st.pos + done, done, &seq};
    Step s{c, be, act, n, std::span<const UbatchSegment>(&seg, 1)};
    be.Embed(mw.embed, st.tokens.data() + done, n, act.x.data());
    be.RmsNorm(act.x.data(), mw.enorm, act.xn.data(), n, E, c.eps);
    be.RmsNorm(st.hidden + done * E, mw.hnorm, act.mix.data(), n, E, c.eps);
    for (int64_t t = 0; t < n; ++t) {  // [enorm(e_t) ; hnorm(h_t)]: embedding half first
      std::copy_n(act.xn.data() + t * E, E, act.eh.data() + t * 2 * E);
      std::copy_n(act.mix.data() + t * E, E, act.eh.data() + t * 2 * E + E);
    }
    be.MatMul(mw.eh_proj, act.eh.data(), act.x.data(), n);  // u: the block's residual stream
    be.RmsNorm(act.x.data(), lw.attn_norm, act.xn.data(), n, E, c.eps);
    FullAttentionLayer(s, lw.attn, rope, slot);
    be.AddRmsNorm(act.x.data(), act.mix.data(), lw.post_attention_norm, act.xn.data(), n, E, c.eps);
    if (c.moe) {
      Moe(s, lw.moe);
    } else {
      Mlp(s, lw.ffn);
    }
    be.Add(act.x.data(), act.mix.data(), n * E);
    // m = head_norm(u); the logits read it. Rows go straight to the caller's buffer when kept.
    float* m = st.out_hidden != nullptr ? st.out_hidden + done * E : act.xn.data();
    be.RmsNorm(act.x.data(), mw.head_norm, m, n, E, c.eps);
    if (st.logits != nullptr && st.all_logits) {
      be.MatMul(mw.head, m, st.logits + done * V, n);
    } else if (st.logits != nullptr && done + n == T) {
      be.MatMul(mw.head, m + (n - 1) * E, st.logits, 1);
    }
    done += n;
  }
  return OkStatus();
}

Status GdnCapture::Init(const ModelConfig& c, int64_t max_tokens_in) {
  if (max_tokens_in < 1) return InvalidArgument("GdnCapture: max_tokens must be >= 1");
  max_tokens = max_tokens_in;
  n_layers = c.n_gdn_layers();
  C = c.conv_channels();
  Kc = c.conv_kernel;
  Hk = c.ssm_hk;
  Hv = c.ssm_hv;
  Dk = c.ssm_dk;
  Dv = c.ssm_dv;
  layer_floats = max_tokens * (C + 2 * Hk * Dk + Hv * Dv + 2 * Hv);
  conv_floats = RecurrentState::ConvFloats(c);
  ssm_floats = RecurrentState::SsmFloats(c);
  try {
    data.assign(static_cast<size_t>(n_layers * layer_floats), 0.0f);
    before.assign(static_cast<size_t>(n_layers * (conv_floats + ssm_floats)), 0.0f);
    out.assign(static_cast<size_t>(max_tokens * Hv * Dv), 0.0f);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("GdnCapture: cannot allocate the inputs of {} tokens", max_tokens);
  }
  return OkStatus();
}

Status RestoreCaptured(GdnCapture& cap, RecurrentState& rec) {
  if (rec.n_layers() != cap.n_layers || rec.conv_floats() != cap.conv_floats ||
      rec.ssm_floats() != cap.ssm_floats)
    return InvalidArgument("RestoreCaptured: the state does not match the capture");
  QWENRT_RETURN_IF_ERROR(rec.Fetch());
  for (int64_t l = 0; l < cap.n_layers; ++l) {
    std::copy_n(cap.conv_before(l), cap.conv_floats, rec.conv(l));
    std::copy_n(cap.ssm_before(l), cap.ssm_floats, rec.ssm(l));
  }
  return OkStatus();
}

Status ReplayRecurrent(ForwardContext& ctx, GdnCapture& cap, int64_t from, int64_t to,
                       RecurrentState& rec) {
  if (ctx.backend_ == nullptr) return InvalidArgument("ReplayRecurrent: needs a host backend");
  if (from < 0 || to > cap.max_tokens || from > to)
    return InvalidArgument("ReplayRecurrent: range [{}, {}) outside the capture", from, to);
  if (rec.n_layers() != cap.n_layers || rec.conv_floats() != cap.C * (cap.Kc - 1) ||
      rec.ssm_floats() != cap.Hv * cap.Dv * cap.Dk)
    return InvalidArgument("ReplayRecurrent: the state does not match the capture");
  QWENRT_RETURN_IF_ERROR(rec.Fetch());
  const int64_t n = to - from, K1 = cap.Kc - 1, C = cap.C;
  if (n == 0) return OkStatus();
  const int64_t qk = cap.Hk * cap.Dk, vd = cap.Hv * cap.Dv;
  for (int64_t l = 0; l < cap.n_layers; ++l) {
    // Conv window [C, Kc-1], oldest first: the last Kc-1 raw inputs, which after n new tokens are
    // the old window's last Kc-1-n entries followed by the new inputs (the conv op's own rule; it
    // is data movement only, so exact).
    float* w = rec.conv(l);
    const float* x = cap.conv_in(l) + from * C;  // [n, C]
    for (int64_t ch = 0; ch < C; ++ch) {
      float* wc = w + ch * K1;
      for (int64_t j = 0; j < K1; ++j) {
        const int64_t src = j + n;  // index into [old window (K1 entries), new inputs (n)]
        wc[j] = src < K1 ? wc[src] : x[(src - K1) * C + ch];
      }
    }
    ctx.backend_->GatedDelta(GatedDeltaShape{n, cap.Hk, cap.Hv, cap.Dk, cap.Dv},
                             cap.q(l) + from * qk, cap.k(l) + from * qk, cap.v(l) + from * vd,
                             cap.g(l) + from * cap.Hv, cap.beta(l) + from * cap.Hv, rec.ssm(l),
                             cap.out.data());
  }
  return OkStatus();
}

}  // namespace qwenrt
