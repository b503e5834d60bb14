// Synthetic model writer of synth_model.h. Tensor list, order (global tensors, then each layer's
// tensors sorted by name), types and metadata keys follow tests/data/tiny-s1-q4km.gguf, which the
// llama.cpp's converter + llama-quantize wrote; shapes follow docs/spec/qwen35-architecture.md §4 /
// §13.
//
// Values: a counter-based hash RNG (element index -> value), so the file does not depend on the
// thread count. Projections ~ N(0, 1/fan_in) (output projections further / sqrt(2L) so the residual
// stream stays O(1)), norms ~ 1, ssm_a in [-8, -1], dt bias = softplus^-1 of dt in [1e-3, 1e-1].
#include "testing/synth_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>
#include <vector>

#include "base/guard_alloc.h"
#include "ops/quant.h"
#include "qwenrt/gguf.hpp"
#include "qwenrt/gguf_writer.hpp"
#include "testing/quantize.h"

namespace qwenrt {
namespace {

constexpr int64_t kRealFirstSpecial = 248044;  // <|endoftext|> in the real Qwen3.5 vocabulary
constexpr int64_t kRealFirstUnused = 248077;   // converter padding "[PAD248077]" ... (UNUSED)
// Real added tokens after the 26 the fixture vocabulary carries (docs/spec/tokenizer-and-chat.md
// §2.2).
constexpr std::string_view kExtraSpecials[] = {
    "<|audio_start|>", "<|audio_end|>",         "<tts_pad>",    "<tts_text_bos>",
    "<tts_text_eod>",  "<tts_text_bos_single>", "<|audio_pad|>"};
constexpr int32_t kTypeNormal = 1, kTypeControl = 3, kTypeUnused = 5;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Approximately N(0, 1): Irwin-Hall sum of four 16-bit uniforms, rescaled (bounded at +-3.46).
float Normal(uint64_t key) {
  const uint64_t h = SplitMix64(key);
  float s = 0;
  for (int k = 0; k < 4; ++k) s += (static_cast<float>((h >> (16 * k)) & 0xFFFF) + 0.5f) / 65536.f;
  return (s - 2.f) * 1.7320508f;  // var(sum) = 4/12
}
float Uniform(uint64_t key) {
  return (static_cast<float>(SplitMix64(key) >> 40) + 0.5f) / 16777216.f;
}

enum class Init { kWeight, kNorm, kSsmA, kDtBias, kConv };

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;
  gguf::Type type;
  Init init;
  float scale = 1;  // std of kWeight
};

// llama-quantize's use_more_bits (docs/spec/gguf-and-quants.md §4.2).
bool UseMoreBits(int64_t i, int64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

std::vector<TensorSpec> TensorList(const SynthShape& s, bool mtp) {
  const int64_t D = s.n_embd, L = s.n_layer, Dh = s.head_dim, F = s.n_ff;
  const int64_t Cv = s.ssm_hv * s.ssm_dv, C = 2 * s.ssm_hk * s.ssm_dk + Cv;
  const float w_in = 1.f / std::sqrt(static_cast<float>(D));
  const float out_damp = 1.f / std::sqrt(2.f * static_cast<float>(L));
  auto w = [](int64_t fan_in) { return 1.f / std::sqrt(static_cast<float>(fan_in)); };
  std::vector<TensorSpec> list;
  list.push_back({"output_norm.weight", {D}, gguf::Type::F32, Init::kNorm});
  list.push_back(
      {"token_embd.weight", {D, s.n_vocab}, gguf::Type::Q6_K, Init::kWeight, w_in});  // tied
  for (int64_t i = 0; i < L + (mtp ? 1 : 0); ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const gguf::Type more = UseMoreBits(i, L) ? gguf::Type::Q6_K : gguf::Type::Q4_K;
    // The MTP block (i == L) is a full-attention layer whatever the interval says.
    const bool attention = i == L || (i + 1) % s.full_attention_interval == 0;
    std::vector<TensorSpec> layer;
    layer.push_back({p + "attn_norm.weight", {D}, gguf::Type::F32, Init::kNorm});
    layer.push_back({p + "post_attention_norm.weight", {D}, gguf::Type::F32, Init::kNorm});
    layer.push_back({p + "ffn_gate.weight", {D, F}, gguf::Type::Q4_K, Init::kWeight, w_in});
    layer.push_back({p + "ffn_up.weight", {D, F}, gguf::Type::Q4_K, Init::kWeight, w_in});
    layer.push_back({p + "ffn_down.weight", {F, D}, more, Init::kWeight, w(F) * out_damp});
    if (attention) {
      const int64_t H = s.n_head, Hkv = s.n_head_kv;
      layer.push_back(
          {p + "attn_q.weight", {D, 2 * H * Dh}, gguf::Type::Q4_K, Init::kWeight, w_in});
      layer.push_back({p + "attn_k.weight", {D, Hkv * Dh}, gguf::Type::Q4_K, Init::kWeight, w_in});
      layer.push_back({p + "attn_v.weight", {D, Hkv * Dh}, more, Init::kWeight, w_in});
      layer.push_back({p + "attn_output.weight",
                       {H * Dh, D},
                       gguf::Type::Q4_K,
                       Init::kWeight,
                       w(H * Dh) * out_damp});
      layer.push_back({p + "attn_q_norm.weight", {Dh}, gguf::Type::F32, Init::kNorm});
      layer.push_back({p + "attn_k_norm.weight", {Dh}, gguf::Type::F32, Init::kNorm});
    } else {
      layer.push_back({p + "attn_qkv.weight", {D, C}, more, Init::kWeight, w_in});
      layer.push_back({p + "attn_gate.weight", {D, Cv}, gguf::Type::Q4_K, Init::kWeight, w_in});
      layer.push_back(
          {p + "ssm_alpha.weight", {D, s.ssm_hv}, gguf::Type::Q4_K, Init::kWeight, w_in});
      layer.push_back(
          {p + "ssm_beta.weight", {D, s.ssm_hv}, gguf::Type::Q4_K, Init::kWeight, w_in});
      layer.push_back({p + "ssm_a", {s.ssm_hv}, gguf::Type::F32, Init::kSsmA});
      layer.push_back({p + "ssm_dt.bias", {s.ssm_hv}, gguf::Type::F32, Init::kDtBias});
      layer.push_back({p + "ssm_conv1d.weight", {s.conv_kernel, C}, gguf::Type::F32, Init::kConv});
      layer.push_back({p + "ssm_norm.weight", {s.ssm_dv}, gguf::Type::F32, Init::kNorm});
      layer.push_back(
          {p + "ssm_out.weight", {Cv, D}, gguf::Type::Q4_K, Init::kWeight, w(Cv) * out_damp});
    }
    if (i == L) {  // nextn.*: the fusion projection [D, 2D] and its three norms
      layer.push_back(
          {p + "nextn.eh_proj.weight", {2 * D, D}, gguf::Type::Q4_K, Init::kWeight, w(2 * D)});
      layer.push_back({p + "nextn.enorm.weight", {D}, gguf::Type::F32, Init::kNorm});
      layer.push_back({p + "nextn.hnorm.weight", {D}, gguf::Type::F32, Init::kNorm});
      layer.push_back({p + "nextn.shared_head_norm.weight", {D}, gguf::Type::F32, Init::kNorm});
    }
    std::sort(layer.begin(), layer.end(),
              [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
    for (auto& t : layer) list.push_back(std::move(t));
  }
  return list;
}

float InitValue(const TensorSpec& t, uint64_t key) {
  switch (t.init) {
    case Init::kWeight:
      return Normal(key) * t.scale;
    case Init::kNorm:
      return 1.f + 0.05f * Normal(key);
    case Init::kSsmA:
      return -(1.f + 7.f * Uniform(key));
    case Init::kDtBias: {
      const float dt =
          std::exp(std::log(1e-3f) + (std::log(1e-1f) - std::log(1e-3f)) * Uniform(key));
      return dt + std::log(-std::expm1(-dt));  // softplus^-1(dt)
    }
    case Init::kConv:
      return 0.5f * Normal(key);
  }
  return 0;
}

// Fills `out` (the tensor's bytes) row by row in parallel; element e of the tensor gets
// InitValue(key = hash(seed, tensor index) + e).
Status FillTensor(const TensorSpec& t, uint64_t base, std::vector<uint8_t>* out, ThreadPool& pool) {
  const int64_t cols = t.ne[0];
  int64_t rows = 1;
  for (size_t j = 1; j < t.ne.size(); ++j) rows *= t.ne[j];
  const int64_t row_bytes = RowBytes(t.type, cols);
  if (row_bytes < 0)
    return InvalidArgument("synth: {} has {} columns, not a multiple of its block", t.name, cols);
  QWENRT_RETURN_IF_ERROR(GuardAlloc([&] { out->assign(static_cast<size_t>(row_bytes * rows), 0); },
                                    "synth: cannot allocate {} bytes for {}", row_bytes * rows,
                                    t.name));
  uint8_t* dst = out->data();
  pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(cols));
    for (int64_t r = b; r < e; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        row[c] = InitValue(t, base + static_cast<uint64_t>(r * cols + c));
      QuantizeRow(t.type, row.data(), dst + r * row_bytes, cols);
    }
  });
  return OkStatus();
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  std::string chat_template;
  uint32_t eos = 0, pad = 0, bos = 0;
  bool has_bos = false;
};

// Copies the fixture tokenizer and, when n_vocab is larger, re-lays it out as the real vocabulary:
// regular tokens at their ids, filler "[PADi]" (NORMAL) up to 248043, the fixture's special tokens
// from 248044 on, the remaining real added tokens up to 248076, then "[PADi]" (UNUSED) to n_vocab.
Status LoadVocab(const std::string& path, int64_t n_vocab, Vocab* v) {
  gguf::Error err;
  std::optional<gguf::File> f = gguf::File::Open(path, &err);
  if (!f) return IoError("synth: cannot read the vocabulary from {}: {}", path, err.ToString());
  const gguf::Value* tokens = f->Find("tokenizer.ggml.tokens");
  const gguf::Value* types = f->Find("tokenizer.ggml.token_type");
  const gguf::Value* merges = f->Find("tokenizer.ggml.merges");
  const gguf::Value* tmpl = f->Find("tokenizer.chat_template");
  const gguf::Value* eos = f->Find("tokenizer.ggml.eos_token_id");
  const gguf::Value* pad = f->Find("tokenizer.ggml.padding_token_id");
  const gguf::Value* bos = f->Find("tokenizer.ggml.bos_token_id");
  if (!tokens || !types || !merges || !tmpl || !eos || !pad ||
      tokens->element_type() != gguf::ValueType::STRING ||
      types->element_type() != gguf::ValueType::I32 || types->size() != tokens->size() ||
      merges->element_type() != gguf::ValueType::STRING || !eos->Is<uint32_t>() ||
      !pad->Is<uint32_t>()) {
    return BadFormat(
        "synth: {} lacks a complete gpt2 tokenizer (tokens, token_type as i32, merges, "
        "chat_template, eos/padding ids as u32)",
        path);
  }
  const int64_t n0 = static_cast<int64_t>(tokens->size());
  int64_t s0 = n0;  // first of the trailing non-NORMAL (special) tokens
  while (s0 > 0 && types->At<int32_t>(static_cast<uint64_t>(s0 - 1)) != kTypeNormal) --s0;
  const bool extend = n_vocab > n0;
  if (!extend && n_vocab != n0) {
    return InvalidArgument("synth: vocabulary of {} has {} tokens, more than n_vocab {}", path, n0,
                           n_vocab);
  }
  if (extend && (s0 > kRealFirstSpecial || kRealFirstSpecial + (n0 - s0) > kRealFirstUnused ||
                 n_vocab < kRealFirstUnused)) {
    return InvalidArgument("synth: cannot lay out {} tokens ({} special) in a vocabulary of {}", n0,
                           n0 - s0, n_vocab);
  }
  auto new_id = [&](int64_t id) { return !extend || id < s0 ? id : kRealFirstSpecial + (id - s0); };
  const auto build_vocab = [&] {
    v->tokens.assign(static_cast<size_t>(n_vocab), std::string());
    v->types.assign(static_cast<size_t>(n_vocab), kTypeNormal);
    for (int64_t i = 0; i < n0; ++i) {
      v->tokens[new_id(i)] = std::string(tokens->StringAt(static_cast<uint64_t>(i)));
      v->types[new_id(i)] = types->At<int32_t>(static_cast<uint64_t>(i));
    }
    if (extend) {
      for (int64_t i = s0; i < kRealFirstSpecial; ++i)
        v->tokens[i] = "[PAD" + std::to_string(i) + "]";
      int64_t extra = 0;
      const int64_t first_extra = kRealFirstSpecial + (n0 - s0);
      const bool real_extras =
          kRealFirstUnused - first_extra == static_cast<int64_t>(std::size(kExtraSpecials));
      for (int64_t i = first_extra; i < kRealFirstUnused; ++i, ++extra) {
        v->tokens[i] =
            real_extras ? std::string(kExtraSpecials[extra]) : "[SPECIAL" + std::to_string(i) + "]";
        v->types[i] = kTypeControl;
      }
      for (int64_t i = kRealFirstUnused; i < n_vocab; ++i) {
        v->tokens[i] = "[PAD" + std::to_string(i) + "]";
        v->types[i] = kTypeUnused;
      }
    }
    for (std::string_view m : merges->strings()) v->merges.emplace_back(m);
    v->chat_template = std::string(tmpl->AsString());
  };
  QWENRT_RETURN_IF_ERROR(GuardAlloc(build_vocab, "synth: out of memory building the vocabulary"));
  v->eos = static_cast<uint32_t>(new_id(eos->AsU32()));
  v->pad = static_cast<uint32_t>(new_id(pad->AsU32()));
  v->has_bos = bos != nullptr && bos->Is<uint32_t>();
  if (v->has_bos) v->bos = static_cast<uint32_t>(new_id(bos->AsU32()));
  return OkStatus();
}

}  // namespace

bool FindSynthShape(const std::string& name, SynthShape* shape) {
  // name, D, L, H, Hkv, Dh, Hk, Hv, Dk, Dv, Kc, F, V, rope dims, sections, interval
  static const SynthShape kShapes[] = {
      {"tiny", 256, 8, 4, 2, 64, 2, 4, 64, 64, 4, 512, 512, 16, {3, 3, 2, 0}, 4},
      {"0.8b", 1024, 24, 8, 2, 256, 16, 16, 128, 128, 4, 3584, 248320, 64, {11, 11, 10, 0}, 4},
      {"4b", 2560, 32, 16, 4, 256, 16, 32, 128, 128, 4, 9216, 248320, 64, {11, 11, 10, 0}, 4},
  };
  for (const SynthShape& s : kShapes) {
    if (s.name == name) {
      *shape = s;
      return true;
    }
  }
  return false;
}

Status WriteSynthModel(const SynthOptions& options, const std::string& path, ThreadPool& pool) {
  const SynthShape& s = options.shape;
  if (s.n_layer < 1 || s.n_embd % kQK_K != 0 || s.n_ff % kQK_K != 0 ||
      s.n_head % s.n_head_kv != 0 || s.ssm_hv % s.ssm_hk != 0 || s.full_attention_interval < 1) {
    return InvalidArgument("synth: invalid shape '{}'", s.name);
  }
  Vocab vocab;
  QWENRT_RETURN_IF_ERROR(LoadVocab(options.vocab_from, s.n_vocab, &vocab));

  gguf::Writer w;
  const std::string a = "qwen35.";
  w.AddString("general.architecture", "qwen35");
  w.AddString("general.name", "qwenrt-synth-" + s.name + "-s" + std::to_string(options.seed));
  w.AddU32(a + "context_length", 262144);
  w.AddU32(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
  w.AddU32(a + "block_count", static_cast<uint32_t>(s.n_layer + (options.mtp ? 1 : 0)));
  if (options.mtp) w.AddU32(a + "nextn_predict_layers", 1);
  w.AddU32(a + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.AddU32(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
  w.AddU32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  w.AddU32(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.AddU32(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.AddF32(a + "rope.freq_base", 1e7f);
  w.AddU32(a + "rope.dimension_count", static_cast<uint32_t>(s.rope_dims));
  w.AddI32Array(a + "rope.dimension_sections",
                std::vector<int32_t>(s.rope_sections, s.rope_sections + 4));
  w.AddF32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.AddU32(a + "ssm.conv_kernel", static_cast<uint32_t>(s.conv_kernel));
  w.AddU32(a + "ssm.state_size", static_cast<uint32_t>(s.ssm_dk));
  w.AddU32(a + "ssm.group_count", static_cast<uint32_t>(s.ssm_hk));
  w.AddU32(a + "ssm.time_step_rank", static_cast<uint32_t>(s.ssm_hv));
  w.AddU32(a + "ssm.inner_size", static_cast<uint32_t>(s.ssm_hv * s.ssm_dv));
  w.AddU32(a + "full_attention_interval", static_cast<uint32_t>(s.full_attention_interval));
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", "qwen35");
  w.AddStringArray("tokenizer.ggml.tokens", vocab.tokens);
  w.AddI32Array("tokenizer.ggml.token_type", vocab.types);
  w.AddStringArray("tokenizer.ggml.merges", vocab.merges);
  w.AddU32("tokenizer.ggml.eos_token_id", vocab.eos);
  w.AddU32("tokenizer.ggml.padding_token_id", vocab.pad);
  if (vocab.has_bos) w.AddU32("tokenizer.ggml.bos_token_id", vocab.bos);
  w.AddBool("tokenizer.ggml.add_bos_token", false);
  w.AddString("tokenizer.chat_template", vocab.chat_template);
  w.AddU32("general.quantization_version", 2);
  w.AddU32("general.file_type", 15);  // MOSTLY_Q4_K_M

  const std::vector<TensorSpec> list = TensorList(s, options.mtp);
  std::vector<std::vector<uint8_t>> data(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const uint64_t base = SplitMix64(options.seed * 0x100000001B3ull + i) & ~0xFFFFFFFFFull;
    QWENRT_RETURN_IF_ERROR(FillTensor(list[i], base, &data[i], pool));
    w.AddTensorView(list[i].name, list[i].type, list[i].ne, data[i].data(), data[i].size());
  }
  gguf::Error err;
  if (!w.WriteToFile(path, &err)) return IoError("synth: {}", err.ToString());
  return OkStatus();
}

}  // namespace qwenrt
