// Writes the binary seeds of the fuzz corpora (tests/fuzz/corpus/<target>/): small GGUF files for
// gguf_fuzz, a "nano" qwen35 model (D = 32, 4 layers, Q8_0, the micro fixture's vocabulary;
// ~60 KB) for model_load_fuzz, and saved sessions of the micro fixture for session_load_fuzz.
// Text seeds (tokenizer, chat templates) are committed as they are. Usage:
//   make_corpus <corpus dir>     (run by hand when the formats change; the output is committed)
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"
#include "qwenrt/gguf.hpp"
#include "qwenrt/gguf_writer.hpp"
#include "session/session.h"
#include "testing/quantize.h"

using namespace qwenrt;  // NOLINT: tool

namespace {

const std::string kData = QWENRT_TEST_DATA;

bool Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

bool Write(const std::string& path, const gguf::Writer& w) {
  std::vector<uint8_t> bytes;
  gguf::Error err;
  if (!w.WriteToBuffer(&bytes, &err)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), err.ToString().c_str());
    return false;
  }
  return Write(path, bytes);
}

// Every value type, arrays of each, and tensors of several types with a non-default alignment.
gguf::Writer AllTypes() {
  gguf::Writer w;
  w.AddU32("general.alignment", 64);
  w.AddU8("u8", 1);
  w.AddI8("i8", -1);
  w.AddU16("u16", 2);
  w.AddI16("i16", -2);
  w.AddU32("u32", 3);
  w.AddI32("i32", -3);
  w.AddF32("f32", 1.5f);
  w.AddBool("bool", true);
  w.AddString("str", "h\xC3\xA9llo");
  w.AddU64("u64", 4);
  w.AddI64("i64", -4);
  w.AddF64("f64", 2.5);
  w.AddI32Array("ai32", {1, -2, 3});
  w.AddF32Array("af32", {0.5f, -1.0f});
  w.AddBoolArray("abool", {true, false});
  w.AddStringArray("astr", {"a", "", "bc"});
  static const std::vector<float> f32(64, 0.25f);
  static const std::vector<uint16_t> f16(32, 0x3C00);
  std::vector<uint8_t> q8(34 * 2, 0);
  static std::vector<uint8_t> q8_keep = q8;
  w.AddTensor("t.f32", gguf::Type::F32, {16, 4}, f32.data(), f32.size() * 4);
  w.AddTensor("t.f16", gguf::Type::F16, {32}, f16.data(), f16.size() * 2);
  w.AddTensor("t.q8_0", gguf::Type::Q8_0, {32, 2}, q8_keep.data(), q8_keep.size());
  return w;
}

// The nano model: the micro fixture's keys and vocabulary, smaller widths, Q8_0 matrices.
bool WriteNano(const std::string& path) {
  gguf::Error err;
  auto micro = gguf::File::Open(kData + "/micro-s1-f32.gguf", &err);
  if (!micro) return false;
  constexpr int64_t D = 32, L = 4, H = 2, Hkv = 1, Dh = 16, F = 32, Hk = 1, Hv = 2, Dk = 16,
                    Dv = 16, Kc = 4, C = 2 * Hk * Dk + Hv * Dv;
  const int64_t V = static_cast<int64_t>(micro->Find("tokenizer.ggml.tokens")->size());
  gguf::Writer w;
  w.AddString("general.architecture", "qwen35");
  w.AddString("general.name", "qwenrt-fuzz-nano");
  w.AddU32("qwen35.context_length", 4096);
  w.AddU32("qwen35.embedding_length", D);
  w.AddU32("qwen35.block_count", L);
  w.AddU32("qwen35.feed_forward_length", F);
  w.AddU32("qwen35.attention.head_count", H);
  w.AddU32("qwen35.attention.head_count_kv", Hkv);
  w.AddU32("qwen35.attention.key_length", Dh);
  w.AddU32("qwen35.attention.value_length", Dh);
  w.AddF32("qwen35.rope.freq_base", 1e7f);
  w.AddU32("qwen35.rope.dimension_count", 8);
  w.AddI32Array("qwen35.rope.dimension_sections", {1, 1, 1, 0});
  w.AddF32("qwen35.attention.layer_norm_rms_epsilon", 1e-6f);
  w.AddU32("qwen35.ssm.conv_kernel", Kc);
  w.AddU32("qwen35.ssm.state_size", Dk);
  w.AddU32("qwen35.ssm.group_count", Hk);
  w.AddU32("qwen35.ssm.time_step_rank", Hv);
  w.AddU32("qwen35.ssm.inner_size", Hv * Dv);
  w.AddU32("qwen35.full_attention_interval", 4);
  for (const auto& [key, value] : micro->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0 || key == "tokenizer.chat_template") continue;
    if (value.type() == gguf::ValueType::STRING) {
      w.AddString(key, value.AsString());
    } else if (value.is_array() && value.element_type() == gguf::ValueType::STRING) {
      w.AddStringArray(key, value.strings());
    } else if (value.is_array()) {
      std::vector<int32_t> v;
      if (!micro->GetI32Array(key, &v, &err)) return false;
      w.AddI32Array(key, v);
    } else if (value.type() == gguf::ValueType::U32) {
      w.AddU32(key, value.AsU32());
    } else if (value.type() == gguf::ValueType::BOOL) {
      w.AddBool(key, value.AsBool());
    }
  }
  w.AddString(
      "tokenizer.chat_template",
      "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
      "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}");
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 0.1f);
  std::vector<std::vector<uint8_t>> keep;
  const auto tensor = [&](const std::string& name, int64_t cols, int64_t rows, bool f32) {
    std::vector<float> x(static_cast<size_t>(cols * rows));
    for (float& v : x) v = f32 && rows == 1 ? 1.0f + nd(rng) : nd(rng);
    if (name.find("ssm_a") != std::string::npos)
      for (float& v : x) v = -std::fabs(v) - 0.5f;
    std::vector<uint8_t> bytes;
    if (f32 || cols % 32 != 0) {
      bytes.resize(x.size() * 4);
      std::memcpy(bytes.data(), x.data(), bytes.size());
      keep.push_back(std::move(bytes));
      w.AddTensor(name, gguf::Type::F32,
                  rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows},
                  keep.back().data(), keep.back().size());
    } else {
      bytes.resize(static_cast<size_t>(rows * (cols / 32) * 34));
      for (int64_t r = 0; r < rows; ++r) {
        QuantizeRow(gguf::Type::Q8_0, x.data() + r * cols, bytes.data() + r * (cols / 32) * 34,
                    cols);
      }
      keep.push_back(std::move(bytes));
      w.AddTensor(name, gguf::Type::Q8_0, {cols, rows}, keep.back().data(), keep.back().size());
    }
  };
  keep.reserve(128);
  tensor("token_embd.weight", D, V, false);
  tensor("output_norm.weight", D, 1, true);
  for (int l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensor(p + "attn_norm.weight", D, 1, true);
    tensor(p + "post_attention_norm.weight", D, 1, true);
    if ((l + 1) % 4 != 0) {
      tensor(p + "attn_qkv.weight", D, C, false);
      tensor(p + "attn_gate.weight", D, Hv * Dv, false);
      tensor(p + "ssm_conv1d.weight", Kc, C, true);
      tensor(p + "ssm_dt.bias", Hv, 1, true);
      tensor(p + "ssm_a", Hv, 1, true);
      tensor(p + "ssm_beta.weight", D, Hv, false);
      tensor(p + "ssm_alpha.weight", D, Hv, false);
      tensor(p + "ssm_norm.weight", Dv, 1, true);
      tensor(p + "ssm_out.weight", Hv * Dv, D, false);
    } else {
      tensor(p + "attn_q.weight", D, 2 * H * Dh, false);
      tensor(p + "attn_k.weight", D, Hkv * Dh, false);
      tensor(p + "attn_v.weight", D, Hkv * Dh, false);
      tensor(p + "attn_output.weight", H * Dh, D, false);
      tensor(p + "attn_q_norm.weight", Dh, 1, true);
      tensor(p + "attn_k_norm.weight", Dh, 1, true);
    }
    tensor(p + "ffn_gate.weight", D, F, false);
    tensor(p + "ffn_up.weight", D, F, false);
    tensor(p + "ffn_down.weight", F, D, false);
  }
  if (!Write(path, w)) return false;
  auto m = Model::Load(path);  // the seed must load, or it seeds nothing
  if (!m.ok()) {
    std::fprintf(stderr, "nano model does not load: %s\n", m.status().ToString().c_str());
    return false;
  }
  return true;
}

// Saved sessions of the micro fixture (the model session_load_fuzz uses).
bool WriteSessions(const std::string& dir) {
  auto model = Model::Load(kData + "/micro-s1-f32.gguf");
  if (!model.ok()) return false;
  SessionParams p;
  p.n_threads = 1;
  p.max_context = 64;
  p.initial_capacity = 8;
  auto s = Session::Create(*model, p);
  if (!s.ok()) return false;
  auto empty = (*s)->SaveToMemory();
  if (!empty.ok() || !Write(dir + "/empty.qws", *empty)) return false;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7};
  FeedReport report;
  const int64_t cps[] = {3};
  FeedOptions fo;
  fo.checkpoint_positions = cps;
  if (!(*s)->Feed(prompt, fo, &report).ok()) return false;
  const uint8_t sampler[] = {1, 2, 3, 4};
  auto fed = (*s)->SaveToMemory(sampler);
  return fed.ok() && Write(dir + "/fed7_checkpoint3.qws", *fed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus <corpus dir>\n");
    return 2;
  }
  const std::string dir = argv[1];
  gguf::Writer vocab_only;
  vocab_only.AddString("tokenizer.ggml.model", "gpt2");
  vocab_only.AddStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  const bool ok = Write(dir + "/gguf/all_types.gguf", AllTypes()) &&
                  Write(dir + "/gguf/vocab_only.gguf", vocab_only) &&
                  WriteNano(dir + "/model_load/nano.gguf") && WriteSessions(dir + "/session_load");
  if (!ok) std::fprintf(stderr, "make_corpus failed\n");
  return ok ? 0 : 1;
}
