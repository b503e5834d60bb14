// ModelConfig from GGUF metadata: exact value types as llama.cpp requires them, defaults from the
// docs/spec/qwen35-architecture.md §2.1, the consistency checks of §2.4 and the layer schedule of
// §3.
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "model/gguf_meta.h"
#include "ops/rope.h"

namespace qwenrt {
namespace {

using gguf::ValueType;

// Reads a per-layer key that may be a u32 scalar (applies to every block) or a u32 array of exactly
// `n_all` elements. All trunk layers must agree: the engine has one width per model.
Status GetPerLayerU32(const gguf::File& f, const std::string& key, bool required, uint32_t dflt,
                      int64_t n_all, int64_t n_trunk, int64_t* out) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) {
    if (required) return BadFormat("missing required key '{}'", key);
    *out = dflt;
    return OkStatus();
  }
  if (v->type() == ValueType::U32) {
    *out = v->AsU32();
    return OkStatus();
  }
  if (v->type() != ValueType::ARRAY || v->element_type() != ValueType::U32) {
    return BadFormat("key '{}' has type {}, expected u32 or array of u32", key, meta::Describe(*v));
  }
  if (static_cast<int64_t>(v->size()) != n_all) {
    return BadFormat("key '{}' is an array of {} elements, expected block_count = {}", key,
                     v->size(), n_all);
  }
  const int64_t first = meta::ArrayInt(*v, 0);
  for (int64_t i = 1; i < n_trunk; ++i) {
    if (meta::ArrayInt(*v, i) != first) {
      return Unsupported("key '{}' varies across layers ({} at layer 0, {} at layer {})", key,
                         first, meta::ArrayInt(*v, i), i);
    }
  }
  *out = first;
  return OkStatus();
}

Status CheckPositive(const char* what, const std::string& key, int64_t value) {
  if (value <= 0) return BadFormat("{} ('{}') must be > 0, got {}", what, key, value);
  return OkStatus();
}

// Plausibility caps on the dimensions, checked as each is read, before anything is sized by them
// (the rope tables, the weight shapes the binder compares, per-session state). Each is far above
// any Qwen3.5 model (widths <= 8k, 64 heads, head dim 256) yet keeps every product of two or three
// of them well inside int64, so no later shape arithmetic can overflow. Without them a 69 KB file
// with key_length = 2^32-2 spent seconds and hundreds of MB on a 2^31-entry rope table first.
constexpr int64_t kMaxWidth = int64_t{1} << 20;    // n_embd, FFN lengths, GDN inner size
constexpr int64_t kMaxHeads = int64_t{1} << 12;    // attention and GDN head counts
constexpr int64_t kMaxHeadDim = int64_t{1} << 14;  // key/value length, GDN state size
constexpr int64_t kMaxConvKernel = 64;

Status CheckDim(const char* what, const std::string& key, int64_t value, int64_t max) {
  if (value <= 0 || value > max) {
    return BadFormat("{} ('{}') must be in [1, {}], got {}", what, key, max, value);
  }
  return OkStatus();
}

// Layer schedule (qwen35-architecture.md §3): `attention.recurrent_layers` (bool/i32/u32 scalar or
// array[L_all]) overrides `full_attention_interval` (default 4).
Status ReadSchedule(const gguf::File& f, const std::string& p, ModelConfig* c) {
  c->recurrent.assign(c->n_layer, false);
  const std::string rkey = p + "attention.recurrent_layers";
  if (const gguf::Value* v = f.Find(rkey)) {
    std::vector<int64_t> flags;
    const ValueType t = v->type();
    auto int_ok = [](ValueType et) {
      return et == ValueType::BOOL || et == ValueType::I32 || et == ValueType::U32;
    };
    if (int_ok(t)) {
      flags.assign(c->n_layer_all, meta::ScalarInt(*v));
    } else if (t == ValueType::ARRAY && int_ok(v->element_type())) {
      if (static_cast<int64_t>(v->size()) != c->n_layer_all) {
        return BadFormat("key '{}' is an array of {} elements, expected block_count = {}", rkey,
                         v->size(), c->n_layer_all);
      }
      for (int64_t i = 0; i < c->n_layer_all; ++i) flags.push_back(meta::ArrayInt(*v, i));
    } else {
      return BadFormat("key '{}' has type {}, expected bool/i32/u32 scalar or array", rkey,
                       meta::Describe(*v));
    }
    for (int64_t i = 0; i < c->n_layer_all; ++i) {
      if (i >= c->n_layer && flags[i] != 0) {
        return BadFormat("key '{}': MTP block {} is marked recurrent", rkey, i);
      }
      if (i < c->n_layer) c->recurrent[i] = flags[i] != 0;
    }
  } else {
    uint32_t interval = 4;
    QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "full_attention_interval", false, 4, &interval));
    if (interval == 0) return BadFormat("key '{}full_attention_interval' must be > 0", p);
    for (int64_t i = 0; i < c->n_layer; ++i) c->recurrent[i] = (i + 1) % interval != 0;
  }
  c->kind_index.resize(c->n_layer);
  int n_gdn = 0, n_attn = 0;
  for (int64_t i = 0; i < c->n_layer; ++i) c->kind_index[i] = c->recurrent[i] ? n_gdn++ : n_attn++;
  return OkStatus();
}

// Rope keys: dims, base, IMROPE sections, scaling type (YaRN is rejected).

// rope.scaling.type "yarn": the keys llama.cpp's converter writes from the HF rope parameters
// (factor, original_max_position_embeddings, and when given extrapolation_factor, attention_factor,
// beta_fast, beta_slow), with transformers' defaults: beta 32 / 1, extrapolation 1, and the
// attention factor 0.1 ln(factor) + 1 unless the file names one (then that one alone, as
// transformers applies it). The DeepSeek-style log multiplier has no Qwen3.5 meaning: refused.
Status ReadYarn(const gguf::File& f, const std::string& p, float factor, ModelConfig* c) {
  if (!(factor >= 1.0f)) {
    return BadFormat("'{}rope.scaling.factor' = {}: YaRN needs a factor >= 1", p, factor);
  }
  uint32_t n_orig = static_cast<uint32_t>(c->n_ctx_train);
  QWENRT_RETURN_IF_ERROR(
      meta::GetU32(f, p + "rope.scaling.original_context_length", false, n_orig, &n_orig));
  float ext = 1.0f, attn = 0.0f, beta_fast = 32.0f, beta_slow = 1.0f, log_mul = 0.0f;
  QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "rope.scaling.yarn_ext_factor", false, 1.0f, &ext));
  QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "rope.scaling.yarn_attn_factor", false, 0.0f, &attn));
  QWENRT_RETURN_IF_ERROR(
      meta::GetF32(f, p + "rope.scaling.yarn_beta_fast", false, 32.0f, &beta_fast));
  QWENRT_RETURN_IF_ERROR(
      meta::GetF32(f, p + "rope.scaling.yarn_beta_slow", false, 1.0f, &beta_slow));
  QWENRT_RETURN_IF_ERROR(
      meta::GetF32(f, p + "rope.scaling.yarn_log_multiplier", false, 0.0f, &log_mul));
  if (n_orig == 0) {
    return BadFormat("'{}rope.scaling.original_context_length' = 0 is invalid", p);
  }
  if (!std::isfinite(ext) || ext <= 0.0f || ext > 1.0f) {
    return BadFormat("'{}rope.scaling.yarn_ext_factor' = {} must be in (0, 1]", p, ext);
  }
  if (!std::isfinite(attn) || attn < 0.0f) {
    return BadFormat("'{}rope.scaling.yarn_attn_factor' = {} is invalid", p, attn);
  }
  if (!std::isfinite(beta_fast) || !std::isfinite(beta_slow) || !(beta_slow > 0.0f) ||
      !(beta_fast > beta_slow)) {
    return BadFormat(
        "'{}rope.scaling.yarn_beta_fast' = {} / yarn_beta_slow = {}: need fast > slow > 0", p,
        beta_fast, beta_slow);
  }
  if (log_mul != 0.0f) {
    return Unsupported("'{}rope.scaling.yarn_log_multiplier' = {} is not supported", p, log_mul);
  }
  c->rope_freq_scale = 1.0f / factor;
  c->rope_yarn =
      YarnFor(c->rope_dims, c->rope_base, factor, n_orig, beta_fast, beta_slow, attn, ext);
  return OkStatus();
}

Status ReadRope(const gguf::File& f, const std::string& p, ModelConfig* c) {
  uint32_t u = 0;
  QWENRT_RETURN_IF_ERROR(
      meta::GetU32(f, p + "rope.dimension_count", false, static_cast<uint32_t>(c->head_dim), &u));
  c->rope_dims = u;
  if (c->rope_dims <= 0 || c->rope_dims % 2 != 0 || c->rope_dims > c->head_dim) {
    return BadFormat("'{}rope.dimension_count' = {} must be even, > 0 and <= key_length = {}", p,
                     c->rope_dims, c->head_dim);
  }
  QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "rope.freq_base", false, 10000.0f, &c->rope_base));
  if (!(c->rope_base > 0.0f) || !std::isfinite(c->rope_base)) {
    return BadFormat("'{}rope.freq_base' = {} must be a positive number", p, c->rope_base);
  }

  const std::string skey = p + "rope.dimension_sections";
  const gguf::Value* v = f.Find(skey);
  if (v == nullptr) return BadFormat("missing required key '{}'", skey);
  if (v->type() == ValueType::I32 || v->type() == ValueType::U32) {
    for (int i = 0; i < 4; ++i) c->rope_sections[i] = static_cast<int32_t>(meta::ScalarInt(*v));
  } else if (v->type() == ValueType::ARRAY &&
             (v->element_type() == ValueType::I32 || v->element_type() == ValueType::U32)) {
    if (v->size() != 4) {
      return BadFormat("key '{}' has {} elements, expected exactly 4", skey, v->size());
    }
    for (int i = 0; i < 4; ++i) c->rope_sections[i] = static_cast<int32_t>(meta::ArrayInt(*v, i));
  } else {
    return BadFormat("key '{}' has type {}, expected an i32/u32 array of 4", skey,
                     meta::Describe(*v));
  }
  int64_t sect_sum = 0;
  for (int i = 0; i < 4; ++i) {
    if (c->rope_sections[i] < 0) return BadFormat("key '{}' has a negative section", skey);
    sect_sum += c->rope_sections[i];
  }
  if (sect_sum <= 0 || sect_sum > c->rope_dims / 2) {
    return BadFormat("key '{}': sections sum to {}, must be in [1, rope dims / 2 = {}]", skey,
                     sect_sum, c->rope_dims / 2);
  }
  // IMROPE sector rule (qwen35-architecture.md §8.1) with text positions (p, p, p, 0).
  const int32_t* s = c->rope_sections;
  c->rope_pair_uses_pos.resize(c->rope_dims / 2);
  for (int64_t i = 0; i < c->rope_dims / 2; ++i) {
    const int64_t sector = i % sect_sum;
    const bool h = sector % 3 == 1 && sector < 3 * s[1];
    const bool w = sector % 3 == 2 && sector < 3 * s[2];
    const bool t = sector % 3 == 0 && sector < 3 * s[0];
    c->rope_pair_uses_pos[i] = h || w || t;
  }

  std::string scaling = "linear";
  QWENRT_RETURN_IF_ERROR(meta::GetString(f, p + "rope.scaling.type", false, "linear", &scaling));
  if (scaling != "linear" && scaling != "none" && scaling != "yarn") {
    return Unsupported("'{}rope.scaling.type' = {} is not supported", p, gguf::QuoteBytes(scaling));
  }
  float factor = 0.0f;
  if (f.Find(p + "rope.scaling.factor") != nullptr) {
    QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "rope.scaling.factor", false, 0.0f, &factor));
  } else {
    QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "rope.scale_linear", false, 0.0f, &factor));
  }
  if (!std::isfinite(factor) || factor < 0.0f) {
    return BadFormat("'{}rope.scaling.factor' = {} is invalid", p, factor);
  }
  if (scaling == "yarn") return ReadYarn(f, p, factor, c);
  c->rope_freq_scale = (scaling == "none" || factor == 0.0f) ? 1.0f : 1.0f / factor;
  return OkStatus();
}

Status ReadTokenizerChecks(const gguf::File& f, ModelConfig* c) {
  std::string model, pre;
  QWENRT_RETURN_IF_ERROR(meta::GetString(f, "tokenizer.ggml.model", true, "", &model));
  if (model != "gpt2") {
    return Unsupported("'tokenizer.ggml.model' = {}: only \"gpt2\" (byte-level BPE) is supported",
                       gguf::QuoteBytes(model));
  }
  QWENRT_RETURN_IF_ERROR(meta::GetString(f, "tokenizer.ggml.pre", true, "", &pre));
  if (pre != "qwen35") {
    return BadFormat("unknown pre-tokenizer 'tokenizer.ggml.pre' = {} (expected \"qwen35\")",
                     gguf::QuoteBytes(pre));
  }
  const gguf::Value* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens == nullptr) return BadFormat("missing required key 'tokenizer.ggml.tokens'");
  if (tokens->type() != ValueType::ARRAY || tokens->element_type() != ValueType::STRING) {
    return BadFormat("key 'tokenizer.ggml.tokens' has type {}, expected array of string",
                     meta::Describe(*tokens));
  }
  c->n_vocab = static_cast<int64_t>(tokens->size());
  if (c->n_vocab <= 0) return BadFormat("'tokenizer.ggml.tokens' is empty");
  if (c->n_vocab > INT32_MAX) return BadFormat("vocabulary of {} tokens is too large", c->n_vocab);

  if (const gguf::Value* tt = f.Find("tokenizer.ggml.token_type")) {
    if (tt->type() != ValueType::ARRAY || tt->element_type() != ValueType::I32) {
      return BadFormat("key 'tokenizer.ggml.token_type' has type {}, expected array of i32",
                       meta::Describe(*tt));
    }
    if (static_cast<int64_t>(tt->size()) != c->n_vocab) {
      return BadFormat("'tokenizer.ggml.token_type' has {} entries but there are {} tokens",
                       tt->size(), c->n_vocab);
    }
  }
  const gguf::Value* merges = f.Find("tokenizer.ggml.merges");
  if (merges == nullptr)
    return BadFormat("missing key 'tokenizer.ggml.merges' (required for gpt2)");
  if (merges->type() != ValueType::ARRAY || merges->element_type() != ValueType::STRING) {
    return BadFormat("key 'tokenizer.ggml.merges' has type {}, expected array of string",
                     meta::Describe(*merges));
  }
  // Parsed by the chat layer, but a present template of another type must not pass for "none".
  if (const gguf::Value* t = f.Find("tokenizer.chat_template");
      t != nullptr && t->type() != ValueType::STRING) {
    return BadFormat("key 'tokenizer.chat_template' has type {}, expected string",
                     meta::Describe(*t));
  }
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eot_token_id"}) {
    if (f.Find(key) == nullptr) continue;
    uint32_t id = 0;
    QWENRT_RETURN_IF_ERROR(meta::GetU32(f, key, false, 0, &id));
    if (id >= c->n_vocab) {
      return BadFormat("'{}' = {} is not a token id (vocabulary has {} tokens)", key, id,
                       c->n_vocab);
    }
  }
  return OkStatus();
}

}  // namespace

int64_t ModelConfig::n_gdn_layers() const {
  return std::count(recurrent.begin(), recurrent.end(), true);
}

StatusOr<ModelConfig> ConfigFromGguf(const gguf::File& f) {
  ModelConfig c;
  QWENRT_RETURN_IF_ERROR(meta::GetString(f, "general.architecture", true, "", &c.arch));
  if (c.arch != "qwen35" && c.arch != "qwen35moe") {
    return Unsupported(
        "unknown architecture 'general.architecture' = {} (expected qwen35 or "
        "qwen35moe)",
        gguf::QuoteBytes(c.arch));
  }
  c.moe = c.arch == "qwen35moe";
  if (const gguf::Value* v = f.Find("split.count")) {
    if (v->type() != ValueType::U16 && v->type() != ValueType::U32) {
      return BadFormat("key 'split.count' has type {}, expected u16", meta::Describe(*v));
    }
    // gguf::File::Open merges the parts of a split file; a first part parsed on its own (no parts
    // loaded) has no tensors of the others and cannot be used.
    if (meta::ScalarInt(*v) > 1 && meta::ScalarInt(*v) != f.split_count()) {
      return Unsupported(
          "split GGUF part opened on its own (split.count = {}): open the first part by path",
          meta::ScalarInt(*v));
    }
    if (meta::ScalarInt(*v) > 1 && f.split_parts().size() + 1 != f.split_count()) {
      return Unsupported(
          "split GGUF (split.count = {}) without its other parts: open the first part by path",
          meta::ScalarInt(*v));
    }
  }
  const std::string p = c.arch + ".";
  uint32_t u = 0;

  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "context_length", true, 0, &u));
  c.n_ctx_train = u;
  QWENRT_RETURN_IF_ERROR(CheckPositive("context length", p + "context_length", c.n_ctx_train));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "embedding_length", true, 0, &u));
  c.n_embd = u;
  QWENRT_RETURN_IF_ERROR(CheckDim("embedding length", p + "embedding_length", c.n_embd, kMaxWidth));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "block_count", true, 0, &u));
  c.n_layer_all = u;
  if (c.n_layer_all < 1 || c.n_layer_all > 512) {
    return BadFormat("'{}block_count' = {} must be in [1, 512]", p, c.n_layer_all);
  }
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "nextn_predict_layers", false, 0, &u));
  c.n_nextn = u;
  if (c.n_nextn >= c.n_layer_all) {
    return BadFormat("'{}nextn_predict_layers' = {} must be < block_count = {}", p, c.n_nextn,
                     c.n_layer_all);
  }
  c.n_layer = c.n_layer_all - c.n_nextn;

  const int64_t La = c.n_layer_all, L = c.n_layer;
  QWENRT_RETURN_IF_ERROR(GetPerLayerU32(f, p + "attention.head_count", false, 0, La, L, &c.n_head));
  QWENRT_RETURN_IF_ERROR(CheckDim("head count", p + "attention.head_count", c.n_head, kMaxHeads));
  QWENRT_RETURN_IF_ERROR(GetPerLayerU32(f, p + "attention.head_count_kv", false,
                                        static_cast<uint32_t>(c.n_head), La, L, &c.n_head_kv));
  QWENRT_RETURN_IF_ERROR(
      CheckDim("KV head count", p + "attention.head_count_kv", c.n_head_kv, kMaxHeads));
  if (c.n_head % c.n_head_kv != 0) {
    return BadFormat("'{}attention.head_count' = {} is not a multiple of head_count_kv = {}", p,
                     c.n_head, c.n_head_kv);
  }
  uint32_t key_len = 0, val_len = 0;
  const uint32_t dflt_dh = static_cast<uint32_t>(c.n_embd / c.n_head);
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "attention.key_length", false, dflt_dh, &key_len));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "attention.value_length", false, dflt_dh, &val_len));
  if (key_len != val_len) {
    return BadFormat("'{}attention.key_length' = {} differs from value_length = {}", p, key_len,
                     val_len);
  }
  c.head_dim = key_len;
  QWENRT_RETURN_IF_ERROR(CheckDim("head dim", p + "attention.key_length", c.head_dim, kMaxHeadDim));
  QWENRT_RETURN_IF_ERROR(meta::GetF32(f, p + "attention.layer_norm_rms_epsilon", true, 0, &c.eps));
  if (!(c.eps > 0.0f) || !std::isfinite(c.eps)) {
    return BadFormat("'{}attention.layer_norm_rms_epsilon' = {} must be > 0", p, c.eps);
  }
  bool causal = true;
  QWENRT_RETURN_IF_ERROR(meta::GetBool(f, p + "attention.causal", false, true, &causal));
  if (!causal) return Unsupported("'{}attention.causal' = false is not supported", p);
  QWENRT_RETURN_IF_ERROR(ReadRope(f, p, &c));

  // Gated delta net.
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "ssm.conv_kernel", true, 0, &u));
  c.conv_kernel = u;
  if (c.conv_kernel < 2 || c.conv_kernel > kMaxConvKernel) {
    return BadFormat("'{}ssm.conv_kernel' = {} must be in [2, {}]", p, c.conv_kernel,
                     kMaxConvKernel);
  }
  uint32_t inner = 0, state = 0, rank = 0, groups = 0;
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "ssm.inner_size", true, 0, &inner));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "ssm.state_size", true, 0, &state));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "ssm.time_step_rank", true, 0, &rank));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "ssm.group_count", true, 0, &groups));
  QWENRT_RETURN_IF_ERROR(CheckDim("GDN inner size", p + "ssm.inner_size", inner, kMaxWidth));
  QWENRT_RETURN_IF_ERROR(CheckDim("GDN state size", p + "ssm.state_size", state, kMaxHeadDim));
  QWENRT_RETURN_IF_ERROR(CheckDim("GDN value heads", p + "ssm.time_step_rank", rank, kMaxHeads));
  QWENRT_RETURN_IF_ERROR(CheckDim("GDN key heads", p + "ssm.group_count", groups, kMaxHeads));
  if (rank % groups != 0) {
    return BadFormat("'{}ssm.time_step_rank' = {} is not a multiple of ssm.group_count = {}", p,
                     rank, groups);
  }
  if (inner % rank != 0 || inner / rank != state) {
    return BadFormat(
        "'{}ssm.inner_size' = {} must equal ssm.time_step_rank ({}) x ssm.state_size ({})", p,
        inner, rank, state);
  }
  c.ssm_hk = groups;
  c.ssm_hv = rank;
  c.ssm_dk = state;
  c.ssm_dv = inner / rank;

  // FFN.
  QWENRT_RETURN_IF_ERROR(GetPerLayerU32(f, p + "feed_forward_length", false, 0, La, L, &c.n_ff));
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "expert_count", false, 0, &u));
  c.n_expert = u;
  QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "expert_used_count", false, 0, &u));
  c.n_expert_used = u;
  for (const char* k : {"expert_group_count", "expert_group_used_count"}) {
    QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + k, false, 0, &u));
    if (u != 0) return Unsupported("'{}{}' = {}: grouped expert routing is not supported", p, k, u);
  }
  if (c.moe) {
    if (f.Find(p + "expert_count") == nullptr)
      return BadFormat("missing required key '{}expert_count'", p);
    if (f.Find(p + "expert_used_count") == nullptr) {
      return BadFormat("missing required key '{}expert_used_count'", p);
    }
    if (c.n_expert <= 0 || c.n_expert > 512) {
      return BadFormat("'{}expert_count' = {} must be in [1, 512]", p, c.n_expert);
    }
    if (c.n_expert_used <= 0 || c.n_expert_used > c.n_expert) {
      return BadFormat("'{}expert_used_count' = {} must be in [1, expert_count = {}]", p,
                       c.n_expert_used, c.n_expert);
    }
    QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "expert_feed_forward_length", false, 0, &u));
    c.n_ff_exp = u != 0 ? u : c.n_ff / c.n_expert_used;
    QWENRT_RETURN_IF_ERROR(meta::GetU32(f, p + "expert_shared_feed_forward_length", false, 0, &u));
    c.n_ff_shexp = u != 0 ? u : c.n_ff;
    QWENRT_RETURN_IF_ERROR(
        CheckDim("expert FFN length", p + "expert_feed_forward_length", c.n_ff_exp, kMaxWidth));
    QWENRT_RETURN_IF_ERROR(CheckDim("shared expert FFN length",
                                    p + "expert_shared_feed_forward_length", c.n_ff_shexp,
                                    kMaxWidth));
  } else {
    if (c.n_expert != 0) {
      return BadFormat("'{}expert_count' = {} but a dense qwen35 model has no experts", p,
                       c.n_expert);
    }
    QWENRT_RETURN_IF_ERROR(CheckDim("FFN length", p + "feed_forward_length", c.n_ff, kMaxWidth));
  }

  QWENRT_RETURN_IF_ERROR(ReadSchedule(f, p, &c));
  QWENRT_RETURN_IF_ERROR(ReadTokenizerChecks(f, &c));
  return c;
}

}  // namespace qwenrt
