// The MTP (next-n) draft head (docs/mtp.md): the block run by ForwardMtp against a plain scalar
// reference written from the formulas, the head's KV after incremental catch-up against one pass
// over the whole history (bit for bit), drafting, and its state carried by fork, save/load and
// prefix resume; files with broken MTP tensors are refused by name. The model is written here
// with odd sizes (E = 40, head size 24, FFN 72) and F32 weights, so every op's tail paths run.
#include "model/mtp.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "model/forward.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "quick_mode.h"
#include "qwenrt/gguf_writer.hpp"
#include "session/memory_estimate.h"
#include "session/mtp_draft.h"
#include "session/session.h"
#include "test_util.h"
#include "testing/synth_model.h"

namespace qwenrt::test {
namespace {

using gguf::Type;

// Odd sizes: E, H, Hkv, Dh, F; GDN Hk, Hv, Dk, Dv. Trunk: 3 layers (GDN, attention, GDN) + blk.3.
constexpr int64_t E = 40, H = 3, Hkv = 1, Dh = 24, F = 72, Hk = 2, Hv = 4, Dk = 16, Dv = 16, L = 3,
                  Kc = 4;

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
float Rand(uint64_t key) {  // uniform in [-1, 1)
  return static_cast<float>(Mix(key) >> 40) / 8388608.0f - 1.0f;
}

struct ModelEdit {
  std::set<std::string> drop;                                    // tensors left out
  std::function<void(std::string*, std::vector<int64_t>*)> fix;  // rename / reshape a tensor
  bool shared_head_norm = true;
  bool mtp = true;
  bool mtp_only = false;     // llama.cpp's converter --mtp: no trunk layers
  int64_t extra_blocks = 0;  // block_count off by this much (a wrong layer index)
  bool other_token = false;  // one token string changed
};

// A complete qwen35 file: the micro fixture's tokenizer and chat template, the sizes above.
std::vector<uint8_t> WriteModel(const ModelEdit& edit = {}) {
  auto micro = gguf::File::Open(DataPath("micro-s1-f32.gguf"), nullptr);
  REQUIRE(micro.has_value());
  const int64_t V = static_cast<int64_t>(micro->Find("tokenizer.ggml.tokens")->size());
  gguf::Writer w;
  const std::string a = "qwen35.";
  w.AddString("general.architecture", "qwen35");
  w.AddU32(a + "context_length", 4096);
  w.AddU32(a + "embedding_length", E);
  w.AddU32(a + "block_count", L + (edit.mtp ? 1 : 0) + edit.extra_blocks);
  if (edit.mtp) w.AddU32(a + "nextn_predict_layers", 1);
  w.AddU32(a + "feed_forward_length", F);
  w.AddU32(a + "attention.head_count", H);
  w.AddU32(a + "attention.head_count_kv", Hkv);
  w.AddU32(a + "attention.key_length", Dh);
  w.AddU32(a + "attention.value_length", Dh);
  w.AddF32(a + "rope.freq_base", 1e6f);
  w.AddU32(a + "rope.dimension_count", 8);
  w.AddI32Array(a + "rope.dimension_sections", std::vector<int32_t>{1, 1, 2, 0});
  w.AddF32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.AddU32(a + "ssm.conv_kernel", Kc);
  w.AddU32(a + "ssm.state_size", Dk);
  w.AddU32(a + "ssm.group_count", Hk);
  w.AddU32(a + "ssm.time_step_rank", Hv);
  w.AddU32(a + "ssm.inner_size", Hv * Dv);
  w.AddU32(a + "full_attention_interval", 2);
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template"})
    w.AddString(key, std::string(micro->Find(key)->AsString()));
  std::vector<std::string> tokens(micro->Find("tokenizer.ggml.tokens")->strings().begin(),
                                  micro->Find("tokenizer.ggml.tokens")->strings().end());
  std::vector<std::string> merges(micro->Find("tokenizer.ggml.merges")->strings().begin(),
                                  micro->Find("tokenizer.ggml.merges")->strings().end());
  if (edit.other_token) tokens[5] = "[changed]";
  std::vector<int32_t> types;
  for (uint64_t i = 0; i < tokens.size(); ++i)
    types.push_back(micro->Find("tokenizer.ggml.token_type")->At<int32_t>(i));
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddI32Array("tokenizer.ggml.token_type", types);
  w.AddStringArray("tokenizer.ggml.merges", merges);
  w.AddU32("tokenizer.ggml.eos_token_id", micro->Find("tokenizer.ggml.eos_token_id")->AsU32());
  w.AddU32("tokenizer.ggml.padding_token_id",
           micro->Find("tokenizer.ggml.padding_token_id")->AsU32());

  static std::vector<std::vector<float>> store;  // the writer keeps views
  store.clear();
  store.reserve(128);
  uint64_t tensor = 0;
  enum Kind { kW, kNorm, kA, kDt, kConv };
  const auto add = [&](std::string name, std::vector<int64_t> ne, Kind kind) {
    ++tensor;
    if (edit.drop.count(name)) return;
    if (edit.mtp_only && name.rfind("blk.", 0) == 0 && name.rfind("blk.3.", 0) != 0) return;
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    const float scale = kind == kW ? 1.0f / std::sqrt(static_cast<float>(ne[0])) : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float r = Rand(tensor << 32 | static_cast<uint64_t>(i));
      v[i] = kind == kW      ? 1.7f * scale * r
             : kind == kNorm ? 1.0f + 0.2f * r
             : kind == kA    ? -(4.5f + 3.5f * r)
             : kind == kDt   ? -3.0f + r
                             : 0.5f * r;
    }
    if (edit.fix) edit.fix(&name, &ne);
    store.push_back(std::move(v));
    w.AddTensor(name, Type::F32, ne, store.back().data(), store.back().size() * 4);
  };
  add("token_embd.weight", {E, V}, kW);
  add("output_norm.weight", {E}, kNorm);
  add("output.weight", {E, V}, kW);
  const int64_t C = 2 * Hk * Dk + Hv * Dv;
  for (int64_t l = 0; l < L + (edit.mtp ? 1 : 0); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {E}, kNorm);
    add(p + "post_attention_norm.weight", {E}, kNorm);
    if (l == 1 || l == L) {
      add(p + "attn_q.weight", {E, 2 * H * Dh}, kW);
      add(p + "attn_k.weight", {E, Hkv * Dh}, kW);
      add(p + "attn_v.weight", {E, Hkv * Dh}, kW);
      add(p + "attn_output.weight", {H * Dh, E}, kW);
      add(p + "attn_q_norm.weight", {Dh}, kNorm);
      add(p + "attn_k_norm.weight", {Dh}, kNorm);
    } else {
      add(p + "attn_qkv.weight", {E, C}, kW);
      add(p + "attn_gate.weight", {E, Hv * Dv}, kW);
      add(p + "ssm_conv1d.weight", {Kc, C}, kConv);
      add(p + "ssm_dt.bias", {Hv}, kDt);
      add(p + "ssm_a", {Hv}, kA);
      add(p + "ssm_beta.weight", {E, Hv}, kW);
      add(p + "ssm_alpha.weight", {E, Hv}, kW);
      add(p + "ssm_norm.weight", {Dv}, kNorm);
      add(p + "ssm_out.weight", {Hv * Dv, E}, kW);
    }
    add(p + "ffn_gate.weight", {E, F}, kW);
    add(p + "ffn_up.weight", {E, F}, kW);
    add(p + "ffn_down.weight", {F, E}, kW);
    if (l == L) {
      add(p + "nextn.eh_proj.weight", {2 * E, E}, kW);
      add(p + "nextn.enorm.weight", {E}, kNorm);
      add(p + "nextn.hnorm.weight", {E}, kNorm);
      if (edit.shared_head_norm) add(p + "nextn.shared_head_norm.weight", {E}, kNorm);
    }
  }
  std::vector<uint8_t> bytes;
  gguf::Error err;
  REQUIRE(w.WriteToBuffer(&bytes, &err));
  return bytes;
}

ModelEdit NoSharedHeadNorm() {
  ModelEdit e;
  e.shared_head_norm = false;
  return e;
}

std::shared_ptr<const Model> LoadModel(const ModelEdit& edit = {}) {
  const auto bytes = WriteModel(edit);
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

// ---- The scalar reference, from the formulas of docs/mtp.md, reading tensors by name ----

std::vector<float> Tensor(const Model& m, const std::string& name) {
  const gguf::TensorInfo* t = m.gguf().FindTensor(name);
  REQUIRE(t != nullptr);
  REQUIRE(t->type == Type::F32);
  std::vector<float> v(t->nelements());
  std::memcpy(v.data(), t->data, v.size() * 4);
  return v;
}

// y[rows] = W[rows, cols] x[cols], double accumulation.
std::vector<float> MatVec(const std::vector<float>& w, const float* x, int64_t rows, int64_t cols) {
  std::vector<float> y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += double(w[r * cols + c]) * x[c];
    y[r] = static_cast<float>(s);
  }
  return y;
}

std::vector<float> Norm(const float* x, const float* w, int64_t n, float eps) {
  std::vector<float> y(n);
  ref::RmsNorm(x, w, y.data(), 1, n, eps);
  return y;
}

float Sig(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// MTP rows t = 0..T-1 at positions pos0 + t (attention over rows 0..t: the history starts at 0):
// m: [T, E] head-normed rows, logits: [T, V].
void ReferenceMtp(const Model& model, const std::vector<float>& hidden,
                  const std::vector<int32_t>& next, std::vector<float>* m_out,
                  std::vector<float>* logits) {
  const ModelConfig& c = model.config();
  const int64_t T = static_cast<int64_t>(next.size()), V = c.n_vocab;
  const std::string p = "blk." + std::to_string(c.n_layer) + ".";
  const auto embd = Tensor(model, "token_embd.weight"), out = Tensor(model, "output.weight");
  const auto enorm = Tensor(model, p + "nextn.enorm.weight"),
             hnorm = Tensor(model, p + "nextn.hnorm.weight"),
             eh = Tensor(model, p + "nextn.eh_proj.weight");
  const gguf::TensorInfo* sh = model.gguf().FindTensor(p + "nextn.shared_head_norm.weight");
  const auto head_norm =
      Tensor(model, sh ? p + "nextn.shared_head_norm.weight" : std::string("output_norm.weight"));
  const auto attn_norm = Tensor(model, p + "attn_norm.weight"),
             post_norm = Tensor(model, p + "post_attention_norm.weight");
  const auto wq = Tensor(model, p + "attn_q.weight"), wk = Tensor(model, p + "attn_k.weight"),
             wv = Tensor(model, p + "attn_v.weight"), wo = Tensor(model, p + "attn_output.weight"),
             qn = Tensor(model, p + "attn_q_norm.weight"),
             kn = Tensor(model, p + "attn_k_norm.weight");
  const auto wg = Tensor(model, p + "ffn_gate.weight"), wu = Tensor(model, p + "ffn_up.weight"),
             wd = Tensor(model, p + "ffn_down.weight");
  const RopeParams rope{.n_dims = c.rope_dims,
                        .base = c.rope_base,
                        .freq_scale = c.rope_freq_scale,
                        .pair_uses_pos = &c.rope_pair_uses_pos,
                        .yarn = c.rope_yarn};
  std::vector<std::vector<float>> keys, values;  // [t][Hkv * Dh]
  m_out->assign(T * E, 0.0f);
  logits->assign(T * V, 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    // u = eh_proj · [enorm(embed(x)) ; hnorm(h)]
    std::vector<float> cat = Norm(embd.data() + next[t] * E, enorm.data(), E, c.eps);
    const auto hn = Norm(hidden.data() + t * E, hnorm.data(), E, c.eps);
    cat.insert(cat.end(), hn.begin(), hn.end());
    std::vector<float> u = MatVec(eh, cat.data(), E, 2 * E);
    // Gated attention: per head Dh query rows then Dh gate rows; q/k norms, rope at the position.
    const auto xn = Norm(u.data(), attn_norm.data(), E, c.eps);
    const auto qg = MatVec(wq, xn.data(), 2 * H * Dh, E);
    auto k = MatVec(wk, xn.data(), Hkv * Dh, E);
    const auto v = MatVec(wv, xn.data(), Hkv * Dh, E);
    std::vector<float> q(H * Dh);
    for (int64_t h = 0; h < H; ++h) {
      const auto qh = Norm(qg.data() + h * 2 * Dh, qn.data(), Dh, c.eps);
      std::copy(qh.begin(), qh.end(), q.begin() + h * Dh);
    }
    for (int64_t h = 0; h < Hkv; ++h) {
      const auto kh = Norm(k.data() + h * Dh, kn.data(), Dh, c.eps);
      std::copy(kh.begin(), kh.end(), k.begin() + h * Dh);
    }
    ref::Rope(q.data(), 1, H, Dh, t, rope);
    ref::Rope(k.data(), 1, Hkv, Dh, t, rope);
    keys.push_back(k);
    values.push_back(v);
    std::vector<float> att(H * Dh, 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      std::vector<double> s(t + 1);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j <= t; ++j) {
        double d = 0;
        for (int64_t i = 0; i < Dh; ++i) d += double(q[h * Dh + i]) * keys[j][g * Dh + i];
        s[j] = d / std::sqrt(double(Dh));
        mx = std::max(mx, s[j]);
      }
      for (int64_t j = 0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int64_t i = 0; i < Dh; ++i) {
        double o = 0;
        for (int64_t j = 0; j <= t; ++j) o += s[j] / sum * values[j][g * Dh + i];
        att[h * Dh + i] = static_cast<float>(o) * Sig(qg[h * 2 * Dh + Dh + i]);
      }
    }
    const auto o = MatVec(wo, att.data(), E, H * Dh);
    for (int64_t i = 0; i < E; ++i) u[i] += o[i];
    // FFN: down(silu(gate x) * up x), residual.
    const auto fx = Norm(u.data(), post_norm.data(), E, c.eps);
    const auto gate = MatVec(wg, fx.data(), F, E);
    auto up = MatVec(wu, fx.data(), F, E);
    for (int64_t i = 0; i < F; ++i) up[i] *= gate[i] * Sig(gate[i]);
    const auto down = MatVec(wd, up.data(), E, F);
    for (int64_t i = 0; i < E; ++i) u[i] += down[i];
    const auto mt = Norm(u.data(), head_norm.data(), E, c.eps);
    std::copy(mt.begin(), mt.end(), m_out->begin() + t * E);
    const auto lt = MatVec(out, mt.data(), V, E);
    std::copy(lt.begin(), lt.end(), logits->begin() + t * V);
  }
}

double MaxRel(const std::vector<float>& a, const std::vector<float>& e) {
  REQUIRE(a.size() == e.size());
  double mx = 0, md = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    mx = std::max(mx, std::abs(double(e[i])));
    md = std::max(md, std::abs(double(a[i]) - e[i]));
  }
  return md / mx;
}

std::vector<int32_t> Tokens(int64_t n, uint64_t seed, int64_t V) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(Mix(seed * 1000 + i) % V);
  return t;
}

// One trunk pass from position 0 over `tokens` with the hidden rows handed out: [T, E].
struct Trunk {
  std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(2);
  std::unique_ptr<ForwardContext> ctx;
  std::optional<KvCache> kv;
  std::optional<RecurrentState> rec;
  Trunk(const Model& m, BackendKind kind, KvType kv_type = KvType::kF32) {
    ForwardContext::Options o;
    o.backend.gdn_chunk_min_tokens = INT64_MAX;
    ctx = std::move(ForwardContext::Create(m, kind, pool.get(), o).value());
    KvCacheOptions ko;
    ko.type = kv_type;
    ko.mtp = true;
    kv.emplace(std::move(KvCache::Create(m.config(), 0, 0, ko).value()));
    rec.emplace(std::move(RecurrentState::Create(m.config(), true).value()));
  }
  void Run(const std::vector<int32_t>& tokens, std::vector<float>* hidden,
           std::vector<float>* logits) {
    const ModelConfig& c = ctx->model().config();
    const int64_t T = static_cast<int64_t>(tokens.size());
    hidden->assign(T * c.n_embd, 0.0f);
    logits->assign(T * c.n_vocab, 0.0f);
    SequenceStep st{&*kv, &*rec, tokens, true, logits->data(), OkStatus(), hidden->data()};
    REQUIRE(ForwardBatch(*ctx, std::span<SequenceStep>(&st, 1)).ok());
  }
  // One MTP pass over the whole history: rows 0..T-2 from (h_i, x_{i+1}).
  void Mtp(const std::vector<int32_t>& tokens, const std::vector<float>& hidden,
           std::vector<float>* m, std::vector<float>* logits) {
    const ModelConfig& c = ctx->model().config();
    const int64_t T = static_cast<int64_t>(tokens.size()) - 1;
    m->assign(T * c.n_embd, 0.0f);
    logits->assign(T * c.n_vocab, 0.0f);
    MtpStep st;
    st.kv = &*kv;
    st.pos = 0;
    st.tokens = std::span<const int32_t>(tokens).subspan(1);
    st.hidden = hidden.data();
    st.out_hidden = m->data();
    st.logits = logits->data();
    st.all_logits = true;
    const Status s = ForwardMtp(*ctx, st);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  // The trunk over `tokens` and then the head over the whole history, from a fresh cache.
  struct Outputs {
    std::vector<float> hidden, logits, mrows, mlogits;
  };
  Outputs RunWithHead(const std::vector<int32_t>& tokens) {
    Outputs o;
    Run(tokens, &o.hidden, &o.logits);
    Mtp(tokens, o.hidden, &o.mrows, &o.mlogits);
    return o;
  }
};

std::vector<float> MtpRows(const KvCache& kv, int64_t n) {
  std::vector<float> k(n * kv.row_floats()), v(k.size());
  if (n > 0) kv.ReadRows(kv.mtp_slot(), 0, n, k.data(), v.data());
  k.insert(k.end(), v.begin(), v.end());
  return k;
}

TEST_CASE("MTP: weights bind, and the trunk hands out what its LM head reads", "[mtp]") {
  auto m = LoadModel();
  const ModelConfig& c = m->config();
  CHECK(c.n_layer == L);
  CHECK(c.n_nextn == 1);
  REQUIRE(m->weights().mtp.size() == 1);
  CHECK(m->weights().mtp[0].eh_proj.cols == 2 * E);
  CHECK(m->weights().mtp[0].head_norm != m->weights().output_norm);
  auto fallback = LoadModel(NoSharedHeadNorm());
  CHECK(fallback->weights().mtp[0].head_norm == fallback->weights().output_norm);
  const auto tokens = Tokens(9, 1, c.n_vocab);
  for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
    Trunk with(*m, kind), without(*m, kind);
    std::vector<float> hidden, logits, logits_plain, unused;
    with.Run(tokens, &hidden, &logits);
    without.Run(tokens, &unused, &logits_plain);
    CHECK(logits == logits_plain);
    if (kind == BackendKind::kRef) {  // logits = output · hidden, exactly (the same ref ops)
      std::vector<float> again(logits.size());
      ref::MatMul(m->weights().output, hidden.data(), again.data(), 9);
      CHECK(again == logits);
    }
  }
}

TEST_CASE("MTP: the block matches a scalar reference of the formulas", "[mtp]") {
  for (bool shared : {true, false}) {
    auto m = LoadModel(shared ? ModelEdit() : NoSharedHeadNorm());
    const int64_t V = m->config().n_vocab;
    const auto tokens = Tokens(testing::QuickMode() ? 7 : 13, 2, V);
    std::vector<float> h_ref, unused;
    Trunk(*m, BackendKind::kRef).Run(tokens, &h_ref, &unused);
    std::vector<float> m_want, l_want;
    ReferenceMtp(*m, h_ref, std::vector<int32_t>(tokens.begin() + 1, tokens.end()), &m_want,
                 &l_want);
    for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
      Trunk t(*m, kind, kind == BackendKind::kCpu ? KvType::kF16 : KvType::kF32);
      std::vector<float> hidden, logits, m_got, l_got;
      t.Run(tokens, &hidden, &logits);
      t.Mtp(tokens, h_ref, &m_got, &l_got);  // the reference's hidden rows: the block alone
      INFO("backend " << BackendName(kind) << " shared_head_norm " << shared);
      const double tol = kind == BackendKind::kRef ? 2e-5 : 3e-3;  // kCpu: f16 q/k/v
      const double dm = MaxRel(m_got, m_want), dl = MaxRel(l_got, l_want);
      CHECK(dm < tol);
      CHECK(dl < tol);
      if (std::getenv("QWENRT_MTP_TEST_PRINT"))
        std::printf("%s shared_head_norm=%d: max rel m %.3g logits %.3g\n", BackendName(kind),
                    shared, dm, dl);
      CHECK(t.kv->size() == static_cast<int64_t>(tokens.size()));  // the trunk's size is its own
    }
  }
}

TEST_CASE("MTP: catch-up piece by piece equals one pass over the history, bit for bit", "[mtp]") {
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  const auto tokens = Tokens(testing::QuickMode() ? 12 : 23, 3, V);
  const int64_t N = static_cast<int64_t>(tokens.size());
  Trunk whole(*m, BackendKind::kCpu, KvType::kF16);
  const auto [hidden, logits, mrows, mlogits] = whole.RunWithHead(tokens);

  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto s = Session::Create(m, sp).value();
  CHECK(s->mtp_ready());
  // Prefill in pieces (ubatch 4 splits the feed itself), then decode steps.
  SessionParams small = sp;
  small.ubatch = 4;
  auto p = Session::Create(m, small).value();
  const int64_t fed = N - 5;
  REQUIRE(p->Feed(std::span(tokens).first(fed), {}, nullptr).ok());
  for (int64_t i = fed; i < N; ++i) REQUIRE(p->DecodeStep(tokens[i]).ok());
  REQUIRE(s->Feed(tokens, {}, nullptr).ok());
  for (Session* x : {s.get(), p.get()}) {
    CHECK(MtpRows(x->kv_cache(), N - 1) == MtpRows(*whole.kv, N - 1));
    const float* carried = x->recurrent_state().mtp_hidden();
    CHECK(std::vector<float>(carried, carried + E) ==
          std::vector<float>(hidden.end() - E, hidden.end()));
  }
}

TEST_CASE("MTP: after a verification pass, keeping a prefix needs only the carried row", "[mtp]") {
  // The contract of MtpKeepPrefix for the speculative loop: run 1 + k tokens with the hidden rows,
  // catch up over all of them, cut the KV to the kept ones; the head then equals one fed only the
  // kept tokens.
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  const auto prefix = Tokens(9, 11, V), window = Tokens(5, 12, V);
  for (int64_t kept = 1; kept <= 5; ++kept) {
    Trunk t(*m, BackendKind::kCpu, KvType::kF16);
    std::vector<float> h0, l0;
    t.Run(prefix, &h0, &l0);
    std::vector<float> rows0((prefix.size() + 1) * E);
    std::copy(h0.begin(), h0.end(), rows0.begin() + E);
    REQUIRE(MtpCatchUp(*t.ctx, *t.kv, *t.rec, prefix, 0, rows0.data()).ok());
    const int64_t n = t.kv->size();
    std::vector<float> rows((window.size() + 1) * E), logits(window.size() * V);
    SequenceStep st{&*t.kv, &*t.rec, window, true, logits.data(), OkStatus(), rows.data() + E};
    REQUIRE(ForwardBatch(*t.ctx, std::span<SequenceStep>(&st, 1)).ok());
    REQUIRE(MtpCatchUp(*t.ctx, *t.kv, *t.rec, window, n, rows.data()).ok());
    t.kv->Truncate(n + kept);
    MtpKeepPrefix(*t.rec, rows.data(), kept);

    std::vector<int32_t> all = prefix;
    all.insert(all.end(), window.begin(), window.begin() + kept);
    Trunk ref(*m, BackendKind::kCpu, KvType::kF16);
    std::vector<float> h, l, mr, ml;
    ref.Run(all, &h, &l);
    ref.Mtp(all, h, &mr, &ml);
    const int64_t size = static_cast<int64_t>(all.size());
    CHECK(MtpRows(*t.kv, size - 1) == MtpRows(*ref.kv, size - 1));
    CHECK(std::vector<float>(t.rec->mtp_hidden(), t.rec->mtp_hidden() + E) ==
          std::vector<float>(h.end() - E, h.end()));
  }
}

TEST_CASE("MTP: greedy drafts follow the head and leave the session as it was", "[mtp]") {
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  const auto tokens = Tokens(10, 4, V);
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto s = Session::Create(m, sp).value();
  REQUIRE(s->Feed(tokens, {}, nullptr).ok());
  auto plain = s->Fork().value();
  const int32_t next = 77;
  std::vector<int32_t> drafts;
  MtpDraftSource source;
  REQUIRE(source.Draft(*s, next, 4, &drafts).ok());
  REQUIRE(drafts.size() == 4);

  // The same chain by hand: step 1 fuses h_{n-1} with `next`, later steps the previous m.
  Trunk t(*m, BackendKind::kCpu, KvType::kF16);
  const auto [hidden, logits, mrows, mlogits] = t.RunWithHead(tokens);
  std::vector<float> h(hidden.end() - E, hidden.end()), out(E), l(V);
  int32_t tok = next;
  for (int s_ = 0; s_ < 4; ++s_) {
    MtpStep st;
    st.kv = &*t.kv;
    st.pos = static_cast<int64_t>(tokens.size()) - 1 + s_;
    st.tokens = std::span<const int32_t>(&tok, 1);
    st.hidden = h.data();
    st.out_hidden = out.data();
    st.logits = l.data();
    REQUIRE(ForwardMtp(*t.ctx, st).ok());
    tok = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    CHECK(drafts[s_] == tok);
    h = out;
  }
  // Nothing the session reports changed; the next step's logits and MTP rows are as without it.
  CHECK(s->size() == plain->size());
  REQUIRE(s->DecodeStep(next).ok());
  REQUIRE(plain->DecodeStep(next).ok());
  CHECK(std::vector<float>(s->last_logits().begin(), s->last_logits().end()) ==
        std::vector<float>(plain->last_logits().begin(), plain->last_logits().end()));
  CHECK(MtpRows(s->kv_cache(), s->size() - 1) == MtpRows(plain->kv_cache(), plain->size() - 1));
  // Limits: k = 0 drafts nothing; a session without the head drafts nothing through the source.
  REQUIRE(source.Draft(*s, next, 0, &drafts).ok());
  CHECK(drafts.empty());
  SessionParams off;
  off.n_threads = 2;
  auto no_mtp = Session::Create(m, off).value();
  REQUIRE(no_mtp->Feed(tokens, {}, nullptr).ok());
  CHECK_FALSE(no_mtp->mtp_ready());
  REQUIRE(source.Draft(*no_mtp, next, 3, &drafts).ok());
  CHECK(drafts.empty());
  CHECK(no_mtp->DraftMtp(next, 3, &drafts).code() == StatusCode::kInvalidArgument);
  CHECK(no_mtp->kv_cache().n_layers() == m->config().n_attn_layers());  // pays nothing
  // The head's memory: one more attention slot of KV and the carried row, as estimated.
  CHECK(s->kv_bytes() ==
        no_mtp->kv_bytes() / m->config().n_attn_layers() * (m->config().n_attn_layers() + 1));
  CHECK(s->state_bytes() == no_mtp->state_bytes() + E * sizeof(float));
  MemoryEstimateParams ep;
  ep.context = 1024;
  const auto base = EstimateMemory(*m, ep).value();
  ep.mtp = true;
  const auto with = EstimateMemory(*m, ep).value();
  CHECK(with.kv_per_session ==
        base.kv_per_session / m->config().n_attn_layers() * (m->config().n_attn_layers() + 1));
  CHECK(with.state_per_session == base.state_per_session + E * sizeof(float));
}

TEST_CASE("MTP: fork, save/load and prefix resume carry the head's state", "[mtp]") {
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  sp.checkpoint_every = 4;
  const auto a = Tokens(14, 5, V);
  auto s = Session::Create(m, sp).value();
  REQUIRE(s->Feed(a, {}, nullptr).ok());
  for (int32_t t : {5, 6, 7}) REQUIRE(s->DecodeStep(t).ok());
  std::vector<int32_t> want, got;
  REQUIRE(s->DraftMtp(11, 3, &want).ok());
  const auto rows = MtpRows(s->kv_cache(), s->size() - 1);

  auto f = s->Fork().value();
  REQUIRE(f->DraftMtp(11, 3, &got).ok());
  CHECK(got == want);
  CHECK(MtpRows(f->kv_cache(), f->size() - 1) == rows);

  const auto bytes = s->SaveToMemory().value();
  auto l = Session::Create(m, sp).value();
  REQUIRE(l->LoadFromMemory(bytes).ok());
  CHECK(l->mtp_ready());
  CHECK(MtpRows(l->kv_cache(), l->size() - 1) == rows);
  REQUIRE(l->DraftMtp(11, 3, &got).ok());
  CHECK(got == want);

  // Resume: a new sequence that leaves the transcript at position 9 restores the checkpoint at 8
  // (its carried row included) and refeeds; the head ends as in a session fed it from scratch.
  std::vector<int32_t> b(s->transcript().begin(), s->transcript().begin() + 9);
  for (int32_t t : Tokens(6, 6, V)) b.push_back(t);
  FeedReport r;
  REQUIRE(l->Feed(b, {}, &r).ok());
  CHECK(r.checkpoint_pos == 8);
  auto fresh = Session::Create(m, sp).value();
  REQUIRE(fresh->Feed(b, {}, nullptr).ok());
  CHECK(MtpRows(l->kv_cache(), l->size() - 1) == MtpRows(fresh->kv_cache(), fresh->size() - 1));
  REQUIRE(l->DraftMtp(3, 3, &got).ok());
  REQUIRE(fresh->DraftMtp(3, 3, &want).ok());
  CHECK(got == want);

  // Files without the head's state (version 1) load into a head session, which then does not
  // draft until it is reset; a session without the head loads a head file and skips its rows.
  SessionParams off = sp;
  off.mtp = false;
  auto plain = Session::Create(m, off).value();
  REQUIRE(plain->Feed(a, {}, nullptr).ok());
  const auto v1 = plain->SaveToMemory().value();
  CHECK(v1[8] == 1);
  CHECK(bytes[8] == 2);
  auto h = Session::Create(m, sp).value();
  REQUIRE(h->LoadFromMemory(v1).ok());
  CHECK(h->transcript() == plain->transcript());
  CHECK_FALSE(h->mtp_ready());
  MtpDraftSource source;
  REQUIRE(source.Draft(*h, 3, 3, &got).ok());
  CHECK(got.empty());
  h->Reset();
  CHECK(h->mtp_ready());
  REQUIRE(plain->LoadFromMemory(bytes).ok());
  CHECK(plain->transcript() == s->transcript());
  CHECK(plain->last_logits().size() == static_cast<size_t>(V));
}

TEST_CASE("MTP: broken MTP tensors are refused by name", "[mtp]") {
  const auto expect = [](const ModelEdit& e, std::initializer_list<const char*> words) {
    const auto bytes = WriteModel(e);
    auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
    REQUIRE_FALSE(m.ok());
    INFO(m.status().ToString());
    CHECK(m.status().code() == StatusCode::kBadFormat);
    for (const char* w : words) CHECK(m.status().message().find(w) != std::string::npos);
  };
  ModelEdit eh;  // the fusion projection [E, E] instead of [E, 2E]
  eh.fix = [](std::string* name, std::vector<int64_t>* ne) {
    if (*name == "blk.3.nextn.eh_proj.weight") *ne = {E, 2 * E};
  };
  // (the bytes are the same count, so only the shape check can catch it)
  expect(eh, {"blk.3.nextn.eh_proj.weight", "{40, 80}", "{80, 40}"});
  ModelEdit q;
  q.fix = [](std::string* name, std::vector<int64_t>* ne) {
    if (*name == "blk.3.attn_q.weight") *ne = {2 * H * Dh, E};
  };
  expect(q, {"blk.3.attn_q.weight", "expected"});
  ModelEdit drop;
  drop.drop = {"blk.3.nextn.hnorm.weight"};
  expect(drop, {"missing", "blk.3.nextn.hnorm.weight"});
  SessionParams sp;
  sp.mtp = true;
  ModelEdit no_mtp;
  no_mtp.mtp = false;
  CHECK(Session::Create(LoadModel(no_mtp), sp).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("MTP: qwenrt-cli synth --mtp writes a head that loads and drafts", "[mtp]") {
  SynthOptions o;
  REQUIRE(FindSynthShape("tiny", &o.shape));
  o.shape.n_layer = 4;
  o.mtp = true;
  o.vocab_from = DataPath("tiny-s1-q4km.gguf");
  const std::string path = "/tmp/qwenrt_mtp_test_" + std::to_string(getpid()) + ".gguf";
  ThreadPool pool(2);
  REQUIRE(WriteSynthModel(o, path, pool).ok());
  auto m = Model::Load(path);
  std::remove(path.c_str());
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK((*m)->config().n_layer_all == 5);
  CHECK((*m)->config().n_nextn == 1);
  CHECK((*m)->gguf().FindTensor("blk.4.nextn.eh_proj.weight")->ne[0] == 2 * o.shape.n_embd);
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto s = Session::Create(*m, sp).value();
  REQUIRE(s->Feed(Tokens(6, 7, (*m)->config().n_vocab), {}, nullptr).ok());
  std::vector<int32_t> drafts;
  REQUIRE(s->DraftMtp(1, 3, &drafts).ok());
  CHECK(drafts.size() == 3);
}

TEST_CASE("MTP: a separate MTP-only file beside its trunk, checked against it", "[mtp]") {
  ModelEdit trunk_only, mtp_only;
  trunk_only.mtp = false;
  mtp_only.mtp_only = true;
  const auto trunk = WriteModel(trunk_only);
  const auto draft = WriteModel(mtp_only);
  // Alone, the MTP-only file is refused, pointing at the way to load it.
  auto alone = Model::LoadFromMemory(draft.data(), draft.size());
  CHECK(alone.status().code() == StatusCode::kUnsupported);
  CHECK(alone.status().message().find("mtp_path") != std::string::npos);
  ModelLoadOptions o;
  o.mtp_image = draft;
  auto m = Model::LoadFromMemory(trunk.data(), trunk.size(), o);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK((*m)->config().n_nextn == 1);
  CHECK((*m)->weights().mtp.size() == 1);
  CHECK((*m)->fingerprint() == LoadModel(trunk_only)->fingerprint());  // sessions: the trunk's
  // The same head as the one-file model, bit for bit.
  auto one = LoadModel();
  const auto tokens = Tokens(11, 8, one->config().n_vocab);
  std::vector<float> l1, l2;
  for (const auto& [model, out] : {std::pair{one, &l1}, std::pair{*m, &l2}}) {
    Trunk t(*model, BackendKind::kCpu, KvType::kF16);
    std::vector<float> hidden, logits, mrows;
    t.Run(tokens, &hidden, &logits);
    t.Mtp(tokens, hidden, &mrows, out);
  }
  CHECK(l1 == l2);
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto s = Session::Create(*m, sp).value();
  REQUIRE(s->Feed(tokens, {}, nullptr).ok());
  std::vector<int32_t> drafts;
  REQUIRE(s->DraftMtp(9, 2, &drafts).ok());
  CHECK(drafts.size() == 2);

  // Mismatches name what differs.
  const auto refuse = [&](const std::vector<uint8_t>& t, const std::vector<uint8_t>& d,
                          std::initializer_list<const char*> words) {
    ModelLoadOptions bad;
    bad.mtp_image = d;
    auto r = Model::LoadFromMemory(t.data(), t.size(), bad);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().ToString());
    for (const char* w : words) CHECK(r.status().message().find(w) != std::string::npos);
  };
  ModelEdit shifted = mtp_only;
  shifted.extra_blocks = 1;
  refuse(trunk, WriteModel(shifted), {"layer index", "4 in the MTP file, 3 in the trunk"});
  ModelEdit vocab = mtp_only;
  vocab.other_token = true;
  refuse(trunk, WriteModel(vocab), {"token 5", "[changed]"});
  ModelEdit eh = mtp_only;
  eh.fix = [](std::string* name, std::vector<int64_t>* ne) {
    if (*name == "blk.3.nextn.eh_proj.weight") *ne = {E, 2 * E};
  };
  refuse(trunk, WriteModel(eh), {"MTP image", "blk.3.nextn.eh_proj.weight", "{80, 40}"});
  refuse(WriteModel(), draft, {"already carries"});  // the trunk has its own head
  refuse(trunk, WriteModel(), {"trunk layers"});     // not an MTP-only file
}

// The MoE fixture with an MTP block appended (blk.4: a copy of its attention layer 3, experts and
// shared expert included, plus nextn tensors): the MoE head keeps in step bit for bit and drafts.
// (Its numbers against transformers' MoE decoder layer: docs/mtp.md.)
std::vector<uint8_t> MoeWithMtp() {
  auto f = gguf::File::Open(DataPath("tinymoe-s1-q4km.gguf"), nullptr);
  REQUIRE(f.has_value());
  gguf::Writer w;
  using VT = gguf::ValueType;
  for (const auto& [key, v] : f->metadata()) {
    if (key == "general.alignment") continue;
    if (key == "qwen35moe.block_count") {
      w.AddU32(key, v.AsU32() + 1);
      w.AddU32("qwen35moe.nextn_predict_layers", 1);
    } else if (v.type() == VT::U32) {
      w.AddU32(key, v.AsU32());
    } else if (v.type() == VT::I32) {
      w.AddI32(key, v.AsI32());
    } else if (v.type() == VT::F32) {
      w.AddF32(key, v.AsF32());
    } else if (v.type() == VT::BOOL) {
      w.AddBool(key, v.AsBool());
    } else if (v.type() == VT::STRING) {
      w.AddString(key, v.AsString());
    } else if (v.is_array() && v.element_type() == VT::STRING) {
      w.AddStringArray(key, v.strings());
    } else if (v.is_array() && v.element_type() == VT::I32) {
      std::vector<int32_t> a;
      for (uint64_t i = 0; i < v.size(); ++i) a.push_back(v.At<int32_t>(i));
      w.AddI32Array(key, a);
    } else {
      FAIL("metadata key " << key << " of a type this copier does not handle");
    }
  }
  for (const gguf::TensorInfo& t : f->tensors())
    w.AddTensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes);
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.name.rfind("blk.3.", 0) != 0) continue;
    w.AddTensor("blk.4." + t.name.substr(6), t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                t.data, t.nbytes);
  }
  const int64_t D = f->FindTensor("output_norm.weight")->ne[0];
  static std::vector<float> eh, norm;
  eh.resize(2 * D * D);
  norm.resize(D);
  for (size_t i = 0; i < eh.size(); ++i) eh[i] = Rand(900000 + i) / std::sqrt(float(D));
  for (size_t i = 0; i < norm.size(); ++i) norm[i] = 1.0f + 0.1f * Rand(990000 + i);
  w.AddTensor("blk.4.nextn.eh_proj.weight", Type::F32, {2 * D, D}, eh.data(), eh.size() * 4);
  for (const char* n : {"enorm", "hnorm", "shared_head_norm"})
    w.AddTensor(std::string("blk.4.nextn.") + n + ".weight", Type::F32, {D}, norm.data(),
                norm.size() * 4);
  std::vector<uint8_t> bytes;
  gguf::Error err;
  REQUIRE(w.WriteToBuffer(&bytes, &err));
  return bytes;
}

TEST_CASE("MTP: a MoE head keeps in step bit for bit and drafts", "[mtp]") {
  const auto bytes = MoeWithMtp();
  auto loaded = Model::LoadFromMemory(bytes.data(), bytes.size());
  INFO(loaded.status().ToString());
  REQUIRE(loaded.ok());
  auto m = *loaded;
  REQUIRE(m->config().moe);
  REQUIRE(m->weights().mtp.size() == 1);
  const auto tokens = Tokens(testing::QuickMode() ? 9 : 17, 10, m->config().n_vocab);
  const int64_t N = static_cast<int64_t>(tokens.size()), D = m->config().n_embd;
  Trunk whole(*m, BackendKind::kCpu, KvType::kF16);
  const auto [hidden, logits, mrows, mlogits] = whole.RunWithHead(tokens);
  CHECK(std::all_of(mlogits.begin(), mlogits.end(), [](float x) { return std::isfinite(x); }));
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  sp.ubatch = 5;
  auto s = Session::Create(m, sp).value();
  REQUIRE(s->Feed(std::span(tokens).first(N - 3), {}, nullptr).ok());
  for (int64_t i = N - 3; i < N; ++i) REQUIRE(s->DecodeStep(tokens[i]).ok());
  CHECK(MtpRows(s->kv_cache(), N - 1) == MtpRows(*whole.kv, N - 1));
  const float* carried = s->recurrent_state().mtp_hidden();
  CHECK(std::vector<float>(carried, carried + D) ==
        std::vector<float>(hidden.end() - D, hidden.end()));
  std::vector<int32_t> drafts;
  REQUIRE(s->DraftMtp(tokens[0], 3, &drafts).ok());
  CHECK(drafts.size() == 3);
}

// Hidden (run by hand, docs/mtp.md): the MTP logits of a converter-made file for comparison with
// transformers. QWENRT_MTP_HF_GGUF = the file, QWENRT_MTP_HF_TOKENS = token ids (text, one per
// whitespace), QWENRT_MTP_HF_MTP (optional) = a separate MTP-only file for it, QWENRT_MTP_HF_OUT =
// where the [N-1, V] f32 logits of MTP rows 0..N-2 go (kRef).
TEST_CASE("MTP: logits of a converter-made file, for an outside reference", "[.hf]") {
  const char* path = std::getenv("QWENRT_MTP_HF_GGUF");
  const char* toks = std::getenv("QWENRT_MTP_HF_TOKENS");
  const char* out = std::getenv("QWENRT_MTP_HF_OUT");
  REQUIRE((path && toks && out));
  ModelLoadOptions lo;  // QWENRT_MTP_HF_MTP: the head from a separate MTP-only file
  if (const char* mtp = std::getenv("QWENRT_MTP_HF_MTP")) lo.mtp_path = mtp;
  auto m = Model::Load(path, lo);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  std::vector<int32_t> tokens;
  std::ifstream tf(toks);
  for (int64_t x; tf >> x;) tokens.push_back(static_cast<int32_t>(x));
  REQUIRE(tokens.size() >= 2);
  Trunk t(**m, BackendKind::kRef);
  const auto [hidden, logits, mrows, mlogits] = t.RunWithHead(tokens);
  std::ofstream of(out, std::ios::binary);
  of.write(reinterpret_cast<const char*>(mlogits.data()),
           static_cast<std::streamsize>(mlogits.size() * 4));
  // Drafting runs on it too.
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto s = Session::Create(*m, sp).value();
  REQUIRE(s->Feed(tokens, {}, nullptr).ok());
  std::vector<int32_t> drafts;
  REQUIRE(s->DraftMtp(tokens[0], 3, &drafts).ok());
  CHECK(drafts.size() == 3);
}

// Hidden (run by hand): what the head costs next to a decode step. QWENRT_MTP_BENCH_GGUF = a file
// with an MTP block (e.g. qwenrt-cli synth --shape 0.8b --mtp); 2 threads, kCpu.
TEST_CASE("MTP: cost of catch-up and drafting next to a decode step", "[.bench]") {
  const char* path = std::getenv("QWENRT_MTP_BENCH_GGUF");
  REQUIRE(path != nullptr);
  auto m = Model::Load(path).value();
  const auto prompt = Tokens(64, 9, m->config().n_vocab);
  const int steps = 24;
  const auto ms = [](auto t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (bool mtp : {false, true}) {
    SessionParams sp;
    sp.n_threads = 2;
    sp.mtp = mtp;
    auto s = Session::Create(m, sp).value();
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(s->Feed(prompt, {}, nullptr).ok());
    const double prefill = ms(t0);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) REQUIRE(s->DecodeStep(prompt[i]).ok());
    const double decode = ms(t0) / steps;
    std::printf("%s: prefill 64 tokens %.1f ms, decode step %.2f ms", mtp ? "mtp" : "plain",
                prefill, decode);
    if (mtp) {
      std::vector<int32_t> d;
      for (int k : {1, 3}) {
        t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < steps; ++i) REQUIRE(s->DraftMtp(prompt[i], k, &d).ok());
        std::printf(", draft k=%d %.2f ms", k, ms(t0) / steps);
      }
    }
    std::printf("\n");
  }
}

// The head in the speculative loop (docs/speculative.md, docs/mtp.md): greedy output, and the whole
// session afterwards (SaveToMemory: transcript, KV with the head's slot, state with its carried
// row, checkpoints), equal decoding without speculation bit for bit, and drafts are accepted.
TEST_CASE("MTP: speculative greedy with the head equals plain greedy, head state included",
          "[mtp]") {
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  for (int64_t every : {int64_t{0}, int64_t{3}}) {
    for (int64_t k : {int64_t{1}, int64_t{3}}) {
      INFO("checkpoint_every " << every << " max_draft " << k);
      SessionParams sp;
      sp.n_threads = 2;
      sp.mtp = true;
      sp.checkpoint_every = every;
      auto s = Session::Create(m, sp).value();
      REQUIRE(s->Feed(Tokens(12, 5, V), {}, nullptr).ok());
      auto spec = s->Fork().value();
      GenerateOptions o;
      o.max_tokens = 20;
      o.sampler = [](const float* l, int64_t n) {
        return static_cast<int32_t>(std::max_element(l, l + n) - l);
      };
      std::vector<int32_t> plain_out, spec_out;
      REQUIRE(s->Generate(o, &plain_out, nullptr).ok());
      MtpDraftSource source;
      o.max_draft = k;
      o.draft = &source;
      GenerateReport r;
      REQUIRE(spec->Generate(o, &spec_out, &r).ok());
      CHECK(spec_out == plain_out);
      CHECK(r.drafted > 0);
      CHECK(spec->SaveToMemory().value() == s->SaveToMemory().value());
      // The head keeps drafting from the right state: one more draft agrees with the plain one.
      std::vector<int32_t> a, b;
      REQUIRE(source.Draft(*s, plain_out.back(), 2, &a).ok());
      REQUIRE(source.Draft(*spec, plain_out.back(), 2, &b).ok());
      CHECK(a == b);
    }
  }
}

// Softmax sampling at temperature `temp` from a seeded generator (inverse CDF on one uniform).
SamplerFn TemperatureSampler(uint32_t seed, double temp) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng, temp](const float* l, int64_t n) {
    const float mx = *std::max_element(l, l + n);
    std::vector<double> p(static_cast<size_t>(n));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += p[i] = std::exp((l[i] - mx) / temp);
    double u = std::uniform_real_distribution<double>(0.0, sum)(*rng);
    for (int64_t i = 0; i < n; ++i)
      if ((u -= p[i]) < 0) return static_cast<int32_t>(i);
    return static_cast<int32_t>(n - 1);
  };
}

// Drafts one fixed token after a fixed first token, nothing otherwise.
class FixedDraft : public DraftSource {
 public:
  FixedDraft(int32_t after, int32_t draft) : after_(after), draft_(draft) {}
  Status Draft(const Session&, int32_t next_token, int64_t k,
               std::vector<int32_t>* drafts) override {
    drafts->clear();
    if (next_token == after_ && k > 0 && !used_) drafts->push_back(draft_);
    used_ = true;
    return OkStatus();
  }

 private:
  int32_t after_, draft_;
  bool used_ = false;
};

// Temperature > 0. A draft source that proposes one token d (the MTP head drafts greedily: its
// draft distribution q is one-hot at d) makes standard speculative rejection sampling accept d
// with probability min(1, p(d) / q(d)) = p(d) and, on a rejection, sample from
// norm(max(0, p - q)) = p without d. Verify's rule (the sampler draws from p once per emitted
// token; the draft is kept when the draw equals it) is that same procedure, so (a) the tokens are
// those of plain sampling with the same generator, seed for seed (with the real head and with a
// fixed draft), and (b) a draft is accepted with probability p(d): counted here over many seeds
// against the expected count, within 4 standard deviations, with d the target's own likeliest
// token so that p(d) is far from 0 and 1 on this random model.
TEST_CASE("MTP: temperature sampling with speculation is rejection sampling of one-hot drafts",
          "[mtp]") {
  auto m = LoadModel();
  const int64_t V = m->config().n_vocab;
  const double temp = 0.2;
  SessionParams sp;
  sp.n_threads = 2;
  sp.mtp = true;
  auto base = Session::Create(m, sp).value();
  REQUIRE(base->Feed(Tokens(9, 11, V), {}, nullptr).ok());
  const int runs = testing::QuickMode() ? 120 : 400;
  double expected = 0, variance = 0;
  int64_t accepted = 0, head_drafted = 0;
  MtpDraftSource head;
  for (int run = 0; run < runs; ++run) {
    INFO("seed " << run);
    const auto seed = static_cast<uint32_t>(run);
    GenerateOptions o;
    o.max_tokens = 3;
    o.sampler = TemperatureSampler(seed, temp);
    std::vector<int32_t> plain_out;
    auto plain = base->Fork().value();
    REQUIRE(plain->Generate(o, &plain_out, nullptr).ok());
    // The target's distribution after the first token, and its likeliest token d.
    auto probe = base->Fork().value();
    REQUIRE(probe->DecodeStep(plain_out[0]).ok());
    const auto l = probe->last_logits();
    const auto top = std::max_element(l.begin(), l.end());
    double sum = 0;
    for (float x : l) sum += std::exp((x - *top) / temp);
    const double pd = 1.0 / sum;
    const auto d = static_cast<int32_t>(top - l.begin());
    FixedDraft fixed(plain_out[0], d);
    for (DraftSource* source :
         {static_cast<DraftSource*>(&head), static_cast<DraftSource*>(&fixed)}) {
      auto spec = base->Fork().value();
      o.sampler = TemperatureSampler(seed, temp);
      o.max_draft = source == &head ? 2 : 1;
      o.draft = source;
      GenerateReport r;
      std::vector<int32_t> spec_out;
      REQUIRE(spec->Generate(o, &spec_out, &r).ok());
      REQUIRE(spec_out == plain_out);
      CHECK(spec->SaveToMemory().value() == plain->SaveToMemory().value());
      if (source == &head) head_drafted += r.drafted;
      if (source == &fixed) accepted += r.accepted;
    }
    expected += pd;
    variance += pd * (1 - pd);
  }
  INFO("drafts accepted " << accepted << " of " << runs << ", expected " << expected << " +- "
                          << std::sqrt(variance));
  CHECK(head_drafted >= runs);
  CHECK(variance > 0.1 * runs);  // the count can tell: p(d) is neither near 0 nor near 1
  CHECK(std::abs(static_cast<double>(accepted) - expected) <= 4 * std::sqrt(variance));
}
}  // namespace
}  // namespace qwenrt::test
