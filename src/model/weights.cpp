// Tensor catalogue of docs/spec/qwen35-architecture.md §4 → typed views, with the model-level
// checks of docs/spec/gguf-and-quants.md §5 items 22–25 and 29. Every tensor the file holds must be
// claimed by exactly one rule here (trunk, MTP block or global); whatever is left over is an error.
#include "model/weights.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_set>

namespace qwenrt {
namespace {

std::string ShapeString(const int64_t* ne, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return s + "}";
}

// Looks tensors up by name, checks them and remembers which ones were claimed.
class Binder {
 public:
  explicit Binder(const gguf::File& f) : f_(f) {}

  bool Has(const std::string& name) const { return f_.FindTensor(name) != nullptr; }

  // A tensor of `expected` shape (GGUF ne order). f32_only: role requires F32 (norms, conv, ssm
  // vectors, routers). Returns nullptr in *out when optional and absent.
  Status Get(const std::string& name, std::initializer_list<int64_t> expected, bool f32_only,
             bool optional, const gguf::TensorInfo** out) {
    *out = nullptr;
    const gguf::TensorInfo* t = f_.FindTensor(name);
    if (t == nullptr) {
      if (optional) return OkStatus();
      return BadFormat("missing tensor '{}' (expected shape {})", name,
                       ShapeString(expected.begin(), static_cast<int>(expected.size())));
    }
    int64_t want[4] = {1, 1, 1, 1};
    int i = 0;
    for (int64_t e : expected) want[i++] = e;
    bool match = t->n_dims <= 4;
    for (int d = 0; d < 4 && match; ++d) {
      const int64_t have = d < t->n_dims ? t->ne[d] : 1;
      match = have == want[d];
    }
    if (!match) {
      return BadFormat("tensor '{}' has shape {}, expected {}", name, ShapeString(t->ne, t->n_dims),
                       ShapeString(expected.begin(), static_cast<int>(expected.size())));
    }
    if (f32_only && t->type != gguf::Type::F32) {
      return BadFormat("tensor '{}' has type {} but its role requires F32", name,
                       gguf::TypeName(t->type));
    }
    if (!gguf::IsSupported(t->type)) {
      return Unsupported("tensor '{}' has type {}, which qwenrt does not implement", name,
                         gguf::TypeName(t->type));
    }
    if (t->type == gguf::Type::F32 && reinterpret_cast<uintptr_t>(t->data) % alignof(float) != 0) {
      return BadFormat("tensor '{}': F32 data is not 4-byte aligned", name);
    }
    used_.insert(name);
    *out = t;
    return OkStatus();
  }

  Status Vector(const std::string& name, int64_t n, const float** out) {
    const gguf::TensorInfo* t;
    QWENRT_RETURN_IF_ERROR(Get(name, {n}, true, false, &t));
    *out = reinterpret_cast<const float*>(t->data);
    return OkStatus();
  }

  // Matrix of `rows` rows x `cols` columns (ne = {cols, rows}).
  Status Matrix(const std::string& name, int64_t cols, int64_t rows, bool f32_only, bool optional,
                WeightMatrix* out) {
    const gguf::TensorInfo* t;
    QWENRT_RETURN_IF_ERROR(Get(name, {cols, rows}, f32_only, optional, &t));
    if (t != nullptr) *out = View(*t, cols, rows);
    return OkStatus();
  }

  Status Experts(const std::string& name, int64_t cols, int64_t rows, int64_t n_expert,
                 ExpertMatrices* out) {
    const gguf::TensorInfo* t;
    QWENRT_RETURN_IF_ERROR(Get(name, {cols, rows, n_expert}, false, false, &t));
    *out = ExpertSlabs(*t, cols, rows, n_expert);
    return OkStatus();
  }

  static WeightMatrix View(const gguf::TensorInfo& t, int64_t cols, int64_t rows) {
    const size_t row_bytes = static_cast<size_t>(cols / gguf::BlockSize(t.type)) *
                             static_cast<size_t>(gguf::TypeSize(t.type));
    return WeightMatrix{t.type, cols, rows, t.data, row_bytes};
  }
  static ExpertMatrices ExpertSlabs(const gguf::TensorInfo& t, int64_t cols, int64_t rows,
                                    int64_t n_expert) {
    const WeightMatrix m = View(t, cols, rows);
    return ExpertMatrices{
        t.type, cols, rows, n_expert, t.data, m.row_bytes, m.row_bytes * static_cast<size_t>(rows)};
  }

  // Claims every tensor whose name starts with one of `prefixes` (present, never used); returns
  // how many and adds their bytes to *bytes.
  int64_t ClaimPrefixed(std::initializer_list<std::string_view> prefixes, uint64_t* bytes) {
    int64_t n = 0;
    for (const gguf::TensorInfo& t : f_.tensors()) {
      for (std::string_view p : prefixes) {
        if (std::string_view(t.name).substr(0, p.size()) == p && !used_.count(t.name)) {
          used_.insert(t.name);
          *bytes += t.nbytes;
          ++n;
          break;
        }
      }
    }
    return n;
  }

  // The first tensor of the file nobody claimed, or OK.
  Status CheckAllUsed() const {
    for (const gguf::TensorInfo& t : f_.tensors()) {
      if (!used_.count(t.name)) {
        return BadFormat("unexpected tensor {} (shape {}) is not part of the {} architecture",
                         gguf::QuoteBytes(t.name), ShapeString(t.ne, t.n_dims), arch_);
      }
    }
    return OkStatus();
  }
  void set_arch(const std::string& arch) { arch_ = arch; }

 private:
  const gguf::File& f_;
  std::unordered_set<std::string> used_;
  std::string arch_;
};

Status BindGatedDelta(Binder& b, const std::string& p, const ModelConfig& c, GatedDeltaWeights* w) {
  const int64_t E = c.n_embd, C = c.conv_channels(), Cv = c.ssm_hv * c.ssm_dv, Hv = c.ssm_hv;
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_qkv.weight", E, C, false, false, &w->qkv));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_gate.weight", E, Cv, false, false, &w->gate));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ssm_alpha.weight", E, Hv, false, false, &w->alpha));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ssm_beta.weight", E, Hv, false, false, &w->beta));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ssm_out.weight", Cv, E, false, false, &w->out));
  WeightMatrix conv;
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ssm_conv1d.weight", c.conv_kernel, C, true, false, &conv));
  w->conv1d = reinterpret_cast<const float*>(conv.data);
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "ssm_dt.bias", Hv, &w->dt_bias));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "ssm_a", Hv, &w->ssm_a));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "ssm_norm.weight", c.ssm_dv, &w->norm));
  return OkStatus();
}

Status BindAttention(Binder& b, const std::string& p, const ModelConfig& c, AttentionWeights* w) {
  const int64_t E = c.n_embd, Dh = c.head_dim;
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_q.weight", E, 2 * c.n_head * Dh, false, false, &w->q));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_k.weight", E, c.n_head_kv * Dh, false, false, &w->k));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_v.weight", E, c.n_head_kv * Dh, false, false, &w->v));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "attn_output.weight", c.n_head * Dh, E, false, false, &w->o));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "attn_q_norm.weight", Dh, &w->q_norm));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "attn_k_norm.weight", Dh, &w->k_norm));
  return OkStatus();
}

Status BindDense(Binder& b, const std::string& p, const ModelConfig& c, DenseFfnWeights* w) {
  const int64_t E = c.n_embd, F = c.n_ff;
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate.weight", E, F, false, false, &w->gate));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ffn_up.weight", E, F, false, false, &w->up));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ffn_down.weight", F, E, false, false, &w->down));
  return OkStatus();
}

Status BindMoe(Binder& b, const std::string& p, const ModelConfig& c, MoeWeights* w) {
  const int64_t E = c.n_embd, X = c.n_expert, Fe = c.n_ff_exp, Fs = c.n_ff_shexp;
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ffn_gate_inp.weight", E, X, true, false, &w->router));
  if (b.Has(p + "ffn_gate_up_exps.weight")) {
    // Fused form: per expert, rows [0, Fe) = gate, rows [Fe, 2Fe) = up.
    ExpertMatrices fused;
    QWENRT_RETURN_IF_ERROR(b.Experts(p + "ffn_gate_up_exps.weight", E, 2 * Fe, X, &fused));
    w->gate = fused;
    w->gate.rows = Fe;
    w->up = w->gate;
    w->up.data = fused.data + static_cast<size_t>(Fe) * fused.row_bytes;
  } else {
    QWENRT_RETURN_IF_ERROR(b.Experts(p + "ffn_gate_exps.weight", E, Fe, X, &w->gate));
    QWENRT_RETURN_IF_ERROR(b.Experts(p + "ffn_up_exps.weight", E, Fe, X, &w->up));
  }
  QWENRT_RETURN_IF_ERROR(b.Experts(p + "ffn_down_exps.weight", Fe, E, X, &w->down));
  QWENRT_RETURN_IF_ERROR(
      b.Matrix(p + "ffn_gate_inp_shexp.weight", E, 1, true, false, &w->shexp_gate_inp));
  QWENRT_RETURN_IF_ERROR(
      b.Matrix(p + "ffn_gate_shexp.weight", E, Fs, false, false, &w->shexp_gate));
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "ffn_up_shexp.weight", E, Fs, false, false, &w->shexp_up));
  QWENRT_RETURN_IF_ERROR(
      b.Matrix(p + "ffn_down_shexp.weight", Fs, E, false, false, &w->shexp_down));
  return OkStatus();
}

// An MTP block (qwen35-architecture.md §4.7): attention block + FFN + nextn.* tensors, bound with
// the trunk's own binders (one layer recipe). The head falls back to the trunk's tensors where the
// converter leaves the nextn copies out (they are the same weights in the checkpoint).
Status BindMtpBlock(Binder& b, const std::string& p, const ModelConfig& c, const Weights& trunk,
                    MtpWeights* m) {
  LayerWeights& lw = m->layer;
  const int64_t E = c.n_embd;
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "attn_norm.weight", E, &lw.attn_norm));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "post_attention_norm.weight", E, &lw.post_attention_norm));
  QWENRT_RETURN_IF_ERROR(BindAttention(b, p, c, &lw.attn));
  if (c.moe) {
    QWENRT_RETURN_IF_ERROR(BindMoe(b, p, c, &lw.moe));
  } else {
    QWENRT_RETURN_IF_ERROR(BindDense(b, p, c, &lw.ffn));
  }
  QWENRT_RETURN_IF_ERROR(b.Matrix(p + "nextn.eh_proj.weight", 2 * E, E, false, false, &m->eh_proj));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "nextn.enorm.weight", E, &m->enorm));
  QWENRT_RETURN_IF_ERROR(b.Vector(p + "nextn.hnorm.weight", E, &m->hnorm));
  const gguf::TensorInfo* t;
  QWENRT_RETURN_IF_ERROR(b.Get(p + "nextn.shared_head_norm.weight", {E}, true, true, &t));
  m->head_norm = t != nullptr ? reinterpret_cast<const float*>(t->data) : trunk.output_norm;
  m->embed = trunk.token_embd;
  QWENRT_RETURN_IF_ERROR(
      b.Matrix(p + "nextn.embed_tokens.weight", E, c.n_vocab, false, true, &m->embed));
  m->head = trunk.output;
  QWENRT_RETURN_IF_ERROR(
      b.Matrix(p + "nextn.shared_head_head.weight", E, c.n_vocab, false, true, &m->head));
  return OkStatus();
}

}  // namespace

StatusOr<Weights> WeightsFromGguf(const gguf::File& file, const ModelConfig& c) {
  Binder b(file);
  b.set_arch(c.arch);
  if (c.n_nextn > 0 && !b.Has("blk.0.attn_norm.weight")) {
    return Unsupported(
        "this file holds only the MTP (NextN) head (no 'blk.0.attn_norm.weight'): it "
        "cannot be used for normal inference; load it beside its trunk "
        "(ModelLoadOptions::mtp_path)");
  }
  Weights w;
  const int64_t E = c.n_embd, V = c.n_vocab;
  if (const gguf::TensorInfo* te = file.FindTensor("token_embd.weight");
      te != nullptr && te->n_dims >= 2 && te->ne[0] == E && te->ne[1] != V) {
    return BadFormat("tensor 'token_embd.weight' has {} rows but the tokenizer has {} tokens",
                     te->ne[1], V);
  }
  QWENRT_RETURN_IF_ERROR(b.Matrix("token_embd.weight", E, V, false, false, &w.token_embd));
  QWENRT_RETURN_IF_ERROR(b.Vector("output_norm.weight", E, &w.output_norm));
  w.tied = !b.Has("output.weight");
  if (w.tied) {
    w.output = w.token_embd;
  } else {
    QWENRT_RETURN_IF_ERROR(b.Matrix("output.weight", E, V, false, false, &w.output));
  }

  w.layers.resize(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LayerWeights& lw = w.layers[l];
    QWENRT_RETURN_IF_ERROR(b.Vector(p + "attn_norm.weight", E, &lw.attn_norm));
    QWENRT_RETURN_IF_ERROR(b.Vector(p + "post_attention_norm.weight", E, &lw.post_attention_norm));
    if (c.recurrent[l]) {
      QWENRT_RETURN_IF_ERROR(BindGatedDelta(b, p, c, &lw.gdn));
    } else {
      QWENRT_RETURN_IF_ERROR(BindAttention(b, p, c, &lw.attn));
    }
    if (c.moe) {
      QWENRT_RETURN_IF_ERROR(BindMoe(b, p, c, &lw.moe));
    } else {
      QWENRT_RETURN_IF_ERROR(BindDense(b, p, c, &lw.ffn));
    }
  }
  w.mtp.resize(c.n_nextn);
  for (int64_t l = c.n_layer; l < c.n_layer_all; ++l) {
    QWENRT_RETURN_IF_ERROR(BindMtpBlock(b, fmt::format("blk.{}.", l), c, w, &w.mtp[l - c.n_layer]));
  }
  // The MTP blocks' tensors were checked above; the trunk never reads them: count them (and their
  // bytes) as unused by the text forward.
  UnusedTensors& u = w.unused;
  for (const gguf::TensorInfo& t : file.tensors()) {
    for (int64_t l = c.n_layer; l < c.n_layer_all; ++l) {
      if (t.name.rfind(fmt::format("blk.{}.", l), 0) == 0) {
        ++u.mtp_tensors;
        u.bytes += t.nbytes;
        break;
      }
    }
  }
  u.vision_tensors = b.ClaimPrefixed({"v.", "mm."}, &u.bytes);
  if (u.mtp_tensors > 0) {
    u.summary = fmt::format("MTP head: {} tensors ({} layer{})", u.mtp_tensors, c.n_nextn,
                            c.n_nextn == 1 ? "" : "s");
  }
  if (u.vision_tensors > 0) {
    u.summary +=
        fmt::format("{}vision tower: {} tensors", u.summary.empty() ? "" : "; ", u.vision_tensors);
  }
  QWENRT_RETURN_IF_ERROR(b.CheckAllUsed());
  return w;
}

StatusOr<std::vector<MtpWeights>> MtpWeightsFromGguf(const gguf::File& f, const ModelConfig& d,
                                                     const gguf::File& trunk_file,
                                                     const ModelConfig& t, const Weights& trunk) {
  if (t.n_nextn > 0) {
    return InvalidArgument(
        "MTP file: the trunk file already carries {} MTP block(s); load it without a separate "
        "MTP file",
        t.n_nextn);
  }
  if (d.n_nextn == 0)
    return InvalidArgument("MTP file: it has no MTP block (nextn_predict_layers is 0)");
  if (f.FindTensor("blk.0.attn_norm.weight") != nullptr)
    return InvalidArgument(
        "MTP file: it holds trunk layers (blk.0.attn_norm.weight); expected an "
        "MTP-only file (llama.cpp's converter with --mtp)");
  const auto mismatch = [](const char* what, auto in_mtp, auto in_trunk) {
    return InvalidArgument(
        "MTP file does not match its trunk: {} is {} in the MTP file, {} in the "
        "trunk",
        what, in_mtp, in_trunk);
  };
  if (d.arch != t.arch) return mismatch("the architecture", d.arch, t.arch);
  if (d.n_layer != t.n_layer)  // blk.L must follow the trunk's last layer
    return mismatch("the MTP block's layer index (trunk layers)", d.n_layer, t.n_layer);
  if (d.n_vocab != t.n_vocab) return mismatch("the vocabulary size", d.n_vocab, t.n_vocab);
  const std::pair<const char*, std::pair<int64_t, int64_t>> dims[] = {
      {"embedding_length", {d.n_embd, t.n_embd}},
      {"attention.head_count", {d.n_head, t.n_head}},
      {"attention.head_count_kv", {d.n_head_kv, t.n_head_kv}},
      {"attention.key_length", {d.head_dim, t.head_dim}},
      {"rope.dimension_count", {d.rope_dims, t.rope_dims}},
      {"feed_forward_length", {d.n_ff, t.n_ff}},
      {"expert_count", {d.n_expert, t.n_expert}},
      {"expert_used_count", {d.n_expert_used, t.n_expert_used}},
      {"expert_feed_forward_length", {d.n_ff_exp, t.n_ff_exp}},
      {"expert_shared_feed_forward_length", {d.n_ff_shexp, t.n_ff_shexp}},
      {"context_length", {d.n_ctx_train, t.n_ctx_train}}};
  for (const auto& [name, v] : dims)
    if (v.first != v.second) return mismatch(name, v.first, v.second);
  for (int i = 0; i < 4; ++i)
    if (d.rope_sections[i] != t.rope_sections[i])
      return mismatch("a rope.dimension_sections entry", d.rope_sections[i], t.rope_sections[i]);
  if (d.rope_base != t.rope_base) return mismatch("rope.freq_base", d.rope_base, t.rope_base);
  if (d.eps != t.eps) return mismatch("the RMSNorm epsilon", d.eps, t.eps);
  // The same tokens, not just as many: drafts are token ids of the trunk's vocabulary.
  const gguf::Value* dt = f.Find("tokenizer.ggml.tokens");
  const gguf::Value* tt = trunk_file.Find("tokenizer.ggml.tokens");
  if (dt == nullptr || tt == nullptr || dt->size() != tt->size())
    return InvalidArgument("MTP file does not match its trunk: the vocabularies differ");
  for (uint64_t i = 0; i < dt->size(); ++i) {
    if (dt->StringAt(i) != tt->StringAt(i)) {
      return InvalidArgument(
          "MTP file does not match its trunk: token {} is {} in the MTP file, {} in the trunk", i,
          gguf::QuoteBytes(dt->StringAt(i)), gguf::QuoteBytes(tt->StringAt(i)));
    }
  }

  Binder b(f);
  b.set_arch(d.arch + " MTP-only file");
  // The converter copies the trunk's embedding and head into the MTP file; the head reads those.
  Weights head;
  QWENRT_RETURN_IF_ERROR(
      b.Matrix("token_embd.weight", d.n_embd, d.n_vocab, false, true, &head.token_embd));
  if (head.token_embd.data == nullptr) head.token_embd = trunk.token_embd;
  const gguf::TensorInfo* on;
  QWENRT_RETURN_IF_ERROR(b.Get("output_norm.weight", {d.n_embd}, true, true, &on));
  head.output_norm = on != nullptr ? reinterpret_cast<const float*>(on->data) : trunk.output_norm;
  head.output = trunk.output;  // (token_embd when the trunk is tied)
  QWENRT_RETURN_IF_ERROR(b.Matrix("output.weight", d.n_embd, d.n_vocab, false, true, &head.output));
  std::vector<MtpWeights> mtp(static_cast<size_t>(d.n_nextn));
  for (int64_t l = d.n_layer; l < d.n_layer_all; ++l) {
    QWENRT_RETURN_IF_ERROR(
        BindMtpBlock(b, fmt::format("blk.{}.", l), d, head, &mtp[l - d.n_layer]));
  }
  QWENRT_RETURN_IF_ERROR(b.CheckAllUsed());
  return mtp;
}

}  // namespace qwenrt
