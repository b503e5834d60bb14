// Model loading: the three fixtures load with the expected configuration, and broken variants of
// them (written with gguf_writer.hpp) are refused with the specific error of the spec's checklist
// (docs/spec/gguf-and-quants.md §5 items 11–13, 22–25, 29; docs/spec/qwen35-architecture.md §2.4).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "model_test_util.h"
#include "qwenrt/gguf_writer.hpp"

namespace qwenrt::test {
namespace {

using gguf::Type;
using gguf::ValueType;

void PutU64(std::vector<uint8_t>* b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutStr(std::vector<uint8_t>* b, std::string_view s) {
  PutU64(b, s.size());
  b->insert(b->end(), s.begin(), s.end());
}

// The encoded payload of a metadata value (what follows its type id), for Writer::AddRaw.
std::vector<uint8_t> Encode(const gguf::Value& v) {
  std::vector<uint8_t> b;
  if (v.type() == ValueType::STRING) {
    PutStr(&b, v.AsString());
  } else if (v.type() == ValueType::ARRAY) {
    const uint32_t et = static_cast<uint32_t>(v.element_type());
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(et >> (8 * i)));
    PutU64(&b, v.size());
    if (v.element_type() == ValueType::STRING) {
      for (std::string_view s : v.strings()) PutStr(&b, s);
    } else {
      const uint8_t* p = v.array_data();
      b.insert(b.end(), p, p + v.size() * gguf::ValueTypeSize(v.element_type()));
    }
  } else {
    uint8_t raw[8] = {};
    switch (gguf::ValueTypeSize(v.type())) {
      case 1:
        raw[0] =
            v.type() == ValueType::BOOL ? v.AsBool() : static_cast<uint8_t>(v.AsU8() | v.AsI8());
        break;
      case 2: {
        uint16_t x = v.type() == ValueType::U16 ? v.AsU16() : static_cast<uint16_t>(v.AsI16());
        std::memcpy(raw, &x, 2);
        break;
      }
      case 4: {
        uint32_t x = v.type() == ValueType::U32   ? v.AsU32()
                     : v.type() == ValueType::I32 ? static_cast<uint32_t>(v.AsI32())
                                                  : 0;
        if (v.type() == ValueType::F32) {
          float f = v.AsF32();
          std::memcpy(&x, &f, 4);
        }
        std::memcpy(raw, &x, 4);
        break;
      }
      case 8: {
        uint64_t x = v.type() == ValueType::U64 ? v.AsU64() : static_cast<uint64_t>(v.AsI64());
        if (v.type() == ValueType::F64) {
          double d = v.AsF64();
          std::memcpy(&x, &d, 8);
        }
        std::memcpy(raw, &x, 8);
        break;
      }
    }
    b.insert(b.end(), raw, raw + gguf::ValueTypeSize(v.type()));
  }
  return b;
}

// A copy of a fixture with edits: keys/tensors dropped or replaced, extra ones appended.
struct Edit {
  std::set<std::string> drop_keys, drop_tensors;
  std::function<void(gguf::Writer&)> add;  // new/replacement keys (replaced keys must be dropped)
  std::function<void(gguf::Writer&)> add_tensors;
};

std::vector<uint8_t> Rewrite(const std::string& fixture, const Edit& e) {
  auto f = gguf::File::Open(DataPath(fixture + ".gguf"), nullptr);
  REQUIRE(f.has_value());
  gguf::Writer w;
  for (const auto& [key, value] : f->metadata()) {
    if (key == "general.alignment" || e.drop_keys.count(key)) continue;
    w.AddRaw(key, static_cast<uint32_t>(value.type()), Encode(value));
  }
  if (e.add) e.add(w);
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (e.drop_tensors.count(t.name)) continue;
    w.AddTensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes);
  }
  if (e.add_tensors) e.add_tensors(w);
  std::vector<uint8_t> bytes;
  gguf::Error err;
  REQUIRE(w.WriteToBuffer(&bytes, &err));
  return bytes;
}

Status LoadEdited(const std::string& fixture, const Edit& e) {
  const auto bytes = Rewrite(fixture, e);
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  return m.ok() ? OkStatus() : m.status();
}

void ExpectError(const std::string& fixture, const Edit& e, StatusCode code,
                 std::initializer_list<const char*> words) {
  const Status st = LoadEdited(fixture, e);
  INFO(st.ToString());
  CHECK(st.code() == code);
  for (const char* w : words) CHECK(st.message().find(w) != std::string::npos);
}

TEST_CASE("fixtures load with the expected configuration", "[ref]") {
  auto micro = LoadFixture("micro-s1-f32");
  const ModelConfig& c = micro->config();
  CHECK(c.arch == "qwen35");
  CHECK_FALSE(c.moe);
  CHECK(c.n_embd == 64);
  CHECK(c.n_layer == 4);
  CHECK(c.n_layer_all == 4);
  CHECK(c.n_head == 4);
  CHECK(c.n_head_kv == 2);
  CHECK(c.head_dim == 32);
  CHECK(c.ssm_hk == 2);
  CHECK(c.ssm_hv == 4);
  CHECK(c.ssm_dk == 32);
  CHECK(c.ssm_dv == 32);
  CHECK(c.conv_kernel == 4);
  CHECK(c.conv_channels() == 2 * 2 * 32 + 4 * 32);
  CHECK(c.n_ff == 128);
  CHECK(c.n_vocab == 512);
  CHECK(c.recurrent == std::vector<bool>{true, true, true, false});
  CHECK(c.kind_index == std::vector<int>{0, 1, 2, 0});
  CHECK(c.n_gdn_layers() == 3);
  CHECK(c.n_attn_layers() == 1);
  CHECK(c.eps > 0.0f);
  CHECK_FALSE(micro->weights().tied);
  CHECK(micro->weights().output.data != micro->weights().token_embd.data);

  auto tiny = LoadFixture("tiny-s1-q4km");
  CHECK(tiny->config().n_embd == 256);
  CHECK(tiny->config().n_layer == 8);
  CHECK(tiny->config().recurrent ==
        std::vector<bool>{true, true, true, false, true, true, true, false});
  CHECK(tiny->weights().tied);
  CHECK(tiny->weights().output.data == tiny->weights().token_embd.data);
  CHECK(tiny->weights().layers[0].gdn.qkv.type != Type::F32);

  auto moe = LoadFixture("tinymoe-s1-q4km");
  const ModelConfig& m = moe->config();
  CHECK(m.arch == "qwen35moe");
  CHECK(m.moe);
  CHECK(m.n_layer == 4);
  CHECK(m.n_expert == 8);
  CHECK(m.n_expert_used == 2);
  CHECK(m.n_ff_exp == 256);
  CHECK(m.n_ff_shexp == 256);
  CHECK(moe->weights().layers[0].moe.gate.n_expert == 8);

  // Fingerprints: stable, distinct per model, the same from memory.
  CHECK(micro->fingerprint().size() == 16);
  CHECK(micro->fingerprint() == LoadFixture("micro-s1-f32")->fingerprint());
  CHECK(micro->fingerprint() != tiny->fingerprint());
  CHECK(tiny->fingerprint() != moe->fingerprint());
  const auto bytes = Rewrite("micro-s1-f32", {});
  auto from_mem = Model::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(from_mem.ok());
  CHECK((*from_mem)->fingerprint() == micro->fingerprint());
}

TEST_CASE("load options: progress and cancellation, deep tensor check", "[ref]") {
  std::vector<float> seen;
  ModelLoadOptions o;
  o.check_tensors = true;
  o.progress = [&](float x) {
    seen.push_back(x);
    return true;
  };
  REQUIRE(Model::Load(DataPath("tiny-s1-q4km.gguf"), o).ok());
  REQUIRE(seen.size() >= 2);
  CHECK(seen.back() == 1.0f);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  o.progress = [](float x) { return x < 0.2f; };
  CHECK(Model::Load(DataPath("tiny-s1-q4km.gguf"), o).status().code() == StatusCode::kCancelled);

  // A NaN in a norm weight: found only with check_tensors.
  Edit e;
  e.drop_tensors = {"output_norm.weight"};
  e.add_tensors = [](gguf::Writer& w) {
    std::vector<float> v(64, 1.0f);
    v[5] = std::nanf("");
    w.AddTensor("output_norm.weight", Type::F32, {64}, v.data(), v.size() * 4);
  };
  const auto bytes = Rewrite("micro-s1-f32", e);
  CHECK(Model::LoadFromMemory(bytes.data(), bytes.size()).ok());
  ModelLoadOptions check;
  check.check_tensors = true;
  const Status st = Model::LoadFromMemory(bytes.data(), bytes.size(), check).status();
  CHECK(st.code() == StatusCode::kBadFormat);
  CHECK(st.message().find("output_norm.weight") != std::string::npos);

  CHECK(Model::Load(DataPath("no-such-file.gguf")).status().code() == StatusCode::kIo);
}

TEST_CASE("metadata errors name the key", "[ref]") {
  Edit missing;
  missing.drop_keys = {"qwen35.embedding_length"};
  ExpectError("micro-s1-f32", missing, StatusCode::kBadFormat,
              {"qwen35.embedding_length", "missing"});

  Edit wrong_type;
  wrong_type.drop_keys = {"qwen35.block_count"};
  wrong_type.add = [](gguf::Writer& w) { w.AddI32("qwen35.block_count", 4); };
  ExpectError("micro-s1-f32", wrong_type, StatusCode::kBadFormat,
              {"qwen35.block_count", "i32", "u32"});

  Edit f64_base;
  f64_base.drop_keys = {"qwen35.rope.freq_base"};
  f64_base.add = [](gguf::Writer& w) { w.AddF64("qwen35.rope.freq_base", 1e7); };
  ExpectError("micro-s1-f32", f64_base, StatusCode::kBadFormat, {"qwen35.rope.freq_base", "f64"});

  Edit sections;
  sections.drop_keys = {"qwen35.rope.dimension_sections"};
  sections.add = [](gguf::Writer& w) {
    w.AddI32Array("qwen35.rope.dimension_sections", {2, 2, 2});
  };
  ExpectError("micro-s1-f32", sections, StatusCode::kBadFormat,
              {"qwen35.rope.dimension_sections", "4"});

  Edit heads;  // H = 4 is not a multiple of Hkv = 3
  heads.drop_keys = {"qwen35.attention.head_count_kv"};
  heads.add = [](gguf::Writer& w) { w.AddU32("qwen35.attention.head_count_kv", 3); };
  ExpectError("micro-s1-f32", heads, StatusCode::kBadFormat, {"head_count", "3"});

  Edit inner;  // inner_size != time_step_rank * state_size
  inner.drop_keys = {"qwen35.ssm.inner_size"};
  inner.add = [](gguf::Writer& w) { w.AddU32("qwen35.ssm.inner_size", 96); };
  ExpectError("micro-s1-f32", inner, StatusCode::kBadFormat, {"qwen35.ssm.inner_size", "96"});

  Edit nextn;  // nextn_predict_layers >= block_count
  nextn.add = [](gguf::Writer& w) { w.AddU32("qwen35.nextn_predict_layers", 4); };
  ExpectError("micro-s1-f32", nextn, StatusCode::kBadFormat,
              {"nextn_predict_layers", "block_count"});

  Edit per_layer;  // a per-layer array with the wrong length
  per_layer.drop_keys = {"qwen35.feed_forward_length"};
  per_layer.add = [](gguf::Writer& w) {
    w.AddU32Array("qwen35.feed_forward_length", {128, 128, 128});
  };
  ExpectError("micro-s1-f32", per_layer, StatusCode::kBadFormat,
              {"qwen35.feed_forward_length", "3"});

  Edit rope_odd;
  rope_odd.drop_keys = {"qwen35.rope.dimension_count"};
  rope_odd.add = [](gguf::Writer& w) { w.AddU32("qwen35.rope.dimension_count", 7); };
  ExpectError("micro-s1-f32", rope_odd, StatusCode::kBadFormat, {"rope.dimension_count", "7"});

  Edit experts;  // k > X
  experts.drop_keys = {"qwen35moe.expert_used_count"};
  experts.add = [](gguf::Writer& w) { w.AddU32("qwen35moe.expert_used_count", 9); };
  ExpectError("tinymoe-s1-q4km", experts, StatusCode::kBadFormat, {"expert_used_count", "9"});

  Edit yarn_no_factor;  // YaRN needs its factor
  yarn_no_factor.add = [](gguf::Writer& w) { w.AddString("qwen35.rope.scaling.type", "yarn"); };
  ExpectError("micro-s1-f32", yarn_no_factor, StatusCode::kBadFormat,
              {"rope.scaling.factor", "YaRN"});

  Edit yarn_log_mul;  // the DeepSeek-style multiplier means nothing for Qwen3.5: refused
  yarn_log_mul.add = [](gguf::Writer& w) {
    w.AddString("qwen35.rope.scaling.type", "yarn");
    w.AddF32("qwen35.rope.scaling.factor", 4.0f);
    w.AddF32("qwen35.rope.scaling.yarn_log_multiplier", 0.1f);
  };
  ExpectError("micro-s1-f32", yarn_log_mul, StatusCode::kUnsupported, {"yarn_log_multiplier"});

  Edit yarn_beta;
  yarn_beta.add = [](gguf::Writer& w) {
    w.AddString("qwen35.rope.scaling.type", "yarn");
    w.AddF32("qwen35.rope.scaling.factor", 4.0f);
    w.AddF32("qwen35.rope.scaling.yarn_beta_fast", 0.5f);
  };
  ExpectError("micro-s1-f32", yarn_beta, StatusCode::kBadFormat, {"yarn_beta_fast"});

  Edit scaling_kind;
  scaling_kind.add = [](gguf::Writer& w) { w.AddString("qwen35.rope.scaling.type", "longrope"); };
  ExpectError("micro-s1-f32", scaling_kind, StatusCode::kUnsupported, {"longrope"});

  Edit arch;
  arch.drop_keys = {"general.architecture"};
  arch.add = [](gguf::Writer& w) { w.AddString("general.architecture", "llama"); };
  ExpectError("micro-s1-f32", arch, StatusCode::kUnsupported, {"llama"});

  Edit pre;
  pre.drop_keys = {"tokenizer.ggml.pre"};
  pre.add = [](gguf::Writer& w) { w.AddString("tokenizer.ggml.pre", "llama-bpe"); };
  ExpectError("micro-s1-f32", pre, StatusCode::kBadFormat, {"tokenizer.ggml.pre", "llama-bpe"});

  Edit merges;
  merges.drop_keys = {"tokenizer.ggml.merges"};
  ExpectError("micro-s1-f32", merges, StatusCode::kBadFormat, {"tokenizer.ggml.merges"});

  Edit eos;
  eos.drop_keys = {"tokenizer.ggml.eos_token_id"};
  eos.add = [](gguf::Writer& w) { w.AddU32("tokenizer.ggml.eos_token_id", 512); };
  ExpectError("micro-s1-f32", eos, StatusCode::kBadFormat, {"eos_token_id", "512"});
}

// The keys llama.cpp's converter writes for a HF config with rope_parameters {rope_type: "yarn",
// factor, original_max_position_embeddings, beta_fast, beta_slow} (conversion/base.py), read as
// transformers' YaRN: ramp range from the betas, mscale 0.1 ln(factor) + 1 unless given.
TEST_CASE("YaRN rope scaling keys as the converter writes them", "[ref]") {
  Edit e;
  e.add = [](gguf::Writer& w) {
    w.AddString("qwen35.rope.scaling.type", "yarn");
    w.AddF32("qwen35.rope.scaling.factor", 4.0f);
    w.AddU32("qwen35.rope.scaling.original_context_length", 256);
    w.AddF32("qwen35.rope.scaling.yarn_beta_fast", 32.0f);
    w.AddF32("qwen35.rope.scaling.yarn_beta_slow", 1.0f);
  };
  const auto bytes = Rewrite("micro-s1-f32", e);
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(m.ok());
  const ModelConfig& c = (*m)->config();
  REQUIRE(c.yarn());
  CHECK(c.rope_freq_scale == 0.25f);
  CHECK(c.rope_yarn.ext_factor == 1.0f);
  CHECK(std::fabs(c.rope_yarn.mscale - (0.1 * std::log(4.0) + 1.0)) < 1e-6);
  // R dims, base from the file: low = floor(R ln(256 / (32 * 2 pi)) / (2 ln base)) clamped at 0,
  // high = ceil(R ln(256 / (2 pi)) / (2 ln base)) clamped at R - 1.
  const double R = static_cast<double>(c.rope_dims), lb = 2.0 * std::log(c.rope_base);
  const double lo = std::floor(R * std::log(256.0 / (32.0 * 2.0 * M_PI)) / lb);
  const double hi = std::ceil(R * std::log(256.0 / (2.0 * M_PI)) / lb);
  CHECK(c.rope_yarn.corr_low == static_cast<float>(std::max(0.0, lo)));
  CHECK(c.rope_yarn.corr_high == static_cast<float>(std::min(R - 1.0, hi)));

  Edit given;  // an attention factor in the file replaces the default mscale
  given.add = [](gguf::Writer& w) {
    w.AddString("qwen35.rope.scaling.type", "yarn");
    w.AddF32("qwen35.rope.scaling.factor", 2.0f);
    w.AddF32("qwen35.rope.scaling.yarn_attn_factor", 1.5f);
  };
  const auto bytes2 = Rewrite("micro-s1-f32", given);
  auto m2 = Model::LoadFromMemory(bytes2.data(), bytes2.size());
  REQUIRE(m2.ok());
  CHECK((*m2)->config().rope_yarn.mscale == 1.5f);
  CHECK((*m2)->config().rope_freq_scale == 0.5f);
}

TEST_CASE("tensor errors name the tensor", "[ref]") {
  Edit missing;
  missing.drop_tensors = {"blk.1.ssm_a"};
  ExpectError("micro-s1-f32", missing, StatusCode::kBadFormat, {"blk.1.ssm_a", "missing"});

  Edit shape;  // attn_qkv with one row too few: both shapes in the message
  shape.drop_tensors = {"blk.0.attn_qkv.weight"};
  shape.add_tensors = [](gguf::Writer& w) {
    std::vector<float> v(64 * 255, 0.0f);
    w.AddTensor("blk.0.attn_qkv.weight", Type::F32, {64, 255}, v.data(), v.size() * 4);
  };
  ExpectError("micro-s1-f32", shape, StatusCode::kBadFormat,
              {"blk.0.attn_qkv.weight", "{64, 255}", "{64, 256}"});

  Edit trailing_one;  // {64, 1} matches an expected {64}
  trailing_one.drop_tensors = {"output_norm.weight"};
  trailing_one.add_tensors = [](gguf::Writer& w) {
    std::vector<float> v(64, 1.0f);
    w.AddTensor("output_norm.weight", Type::F32, {64, 1}, v.data(), v.size() * 4);
  };
  CHECK(LoadEdited("micro-s1-f32", trailing_one).ok());

  Edit norm_type;
  norm_type.drop_tensors = {"blk.2.attn_norm.weight"};
  norm_type.add_tensors = [](gguf::Writer& w) {
    std::vector<uint16_t> v(64, 0x3c00);
    w.AddTensor("blk.2.attn_norm.weight", Type::F16, {64}, v.data(), v.size() * 2);
  };
  ExpectError("micro-s1-f32", norm_type, StatusCode::kBadFormat, {"blk.2.attn_norm.weight", "F32"});

  Edit unknown;
  unknown.add_tensors = [](gguf::Writer& w) {
    std::vector<float> v(64, 0.0f);
    w.AddTensor("blk.0.mystery.weight", Type::F32, {64}, v.data(), v.size() * 4);
  };
  ExpectError("micro-s1-f32", unknown, StatusCode::kBadFormat,
              {"blk.0.mystery.weight", "unexpected"});

  Edit attn_qkv_in_attention;  // fused qkv in an attention layer is not part of the architecture
  attn_qkv_in_attention.add_tensors = [](gguf::Writer& w) {
    std::vector<float> v(64 * 256, 0.0f);
    w.AddTensor("blk.3.attn_qkv.weight", Type::F32, {64, 256}, v.data(), v.size() * 4);
  };
  ExpectError("micro-s1-f32", attn_qkv_in_attention, StatusCode::kBadFormat,
              {"blk.3.attn_qkv.weight"});

  Edit vocab;  // one more token than embedding rows
  vocab.drop_keys = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"};
  vocab.add = [](gguf::Writer& w) {
    auto f = gguf::File::Open(DataPath("micro-s1-f32.gguf"), nullptr);
    std::vector<std::string> tokens(f->Find("tokenizer.ggml.tokens")->strings().begin(),
                                    f->Find("tokenizer.ggml.tokens")->strings().end());
    tokens.push_back("[extra]");
    std::vector<int32_t> types(tokens.size(), 1);
    w.AddStringArray("tokenizer.ggml.tokens", tokens);
    w.AddI32Array("tokenizer.ggml.token_type", types);
  };
  ExpectError("micro-s1-f32", vocab, StatusCode::kBadFormat, {"token_embd.weight", "512", "513"});
}

// Appends an MTP block `blk.4` (a copy of attention layer 3 + nextn tensors) to the micro model.
Edit WithMtpBlock() {
  Edit e;
  e.drop_keys = {"qwen35.block_count"};
  e.add = [](gguf::Writer& w) {
    w.AddU32("qwen35.block_count", 5);
    w.AddU32("qwen35.nextn_predict_layers", 1);
  };
  e.add_tensors = [](gguf::Writer& w) {
    static auto f = gguf::File::Open(DataPath("micro-s1-f32.gguf"), nullptr);
    for (const gguf::TensorInfo& t : f->tensors()) {
      if (t.name.rfind("blk.3.", 0) != 0) continue;
      w.AddTensor("blk.4." + t.name.substr(6), t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                  t.data, t.nbytes);
    }
    static std::vector<float> eh(128 * 64, 0.01f), norm(64, 1.0f);
    w.AddTensor("blk.4.nextn.eh_proj.weight", Type::F32, {128, 64}, eh.data(), eh.size() * 4);
    w.AddTensor("blk.4.nextn.enorm.weight", Type::F32, {64}, norm.data(), norm.size() * 4);
    w.AddTensor("blk.4.nextn.hnorm.weight", Type::F32, {64}, norm.data(), norm.size() * 4);
    w.AddTensor("blk.4.nextn.shared_head_norm.weight", Type::F32, {64}, norm.data(),
                norm.size() * 4);
  };
  return e;
}

TEST_CASE("MTP block is tolerated and not run; MTP-only files are refused", "[ref]") {
  const auto bytes = Rewrite("micro-s1-f32", WithMtpBlock());
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(m.ok());
  CHECK((*m)->config().n_layer == 4);
  CHECK((*m)->config().n_layer_all == 5);
  CHECK((*m)->config().n_nextn == 1);
  CHECK((*m)->weights().layers.size() == 4);
  // The model info says what was present and unused: the 15 tensors of the MTP block blk.4.
  const UnusedTensors& u = (*m)->weights().unused;
  CHECK(u.mtp_tensors == 15);
  CHECK(u.vision_tensors == 0);
  CHECK(u.bytes > 128 * 64 * 4);
  CHECK(u.summary == "MTP head: 15 tensors (1 layer)");
  CHECK(LoadFixture("micro-s1-f32")->weights().unused.summary.empty());
  const auto tokens = ReadTokens("tokens/seqB.txt");
  Runner with_mtp(*m, BackendKind::kRef), plain(LoadFixture("micro-s1-f32"), BackendKind::kRef);
  CHECK(with_mtp.Run(tokens) == plain.Run(tokens));

  // MTP-only: nextn_predict_layers > 0 and no trunk tensors.
  Edit only = WithMtpBlock();
  auto f = gguf::File::Open(DataPath("micro-s1-f32.gguf"), nullptr);
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.name.rfind("blk.", 0) == 0) only.drop_tensors.insert(t.name);
  }
  ExpectError("micro-s1-f32", only, StatusCode::kUnsupported, {"MTP"});
}

TEST_CASE("vision-tower tensors beside the text model are loaded past and reported", "[ref]") {
  Edit e = WithMtpBlock();
  auto mtp_tensors = e.add_tensors;
  e.add_tensors = [mtp_tensors](gguf::Writer& w) {
    mtp_tensors(w);
    static std::vector<uint16_t> patch(64 * 48, 0x3C00);  // F16 1.0
    static std::vector<float> bias(64, 0.0f);
    w.AddTensor("v.patch_embd.weight", Type::F16, {48, 64}, patch.data(), patch.size() * 2);
    w.AddTensor("v.blk.0.attn_q.bias", Type::F32, {64}, bias.data(), bias.size() * 4);
    w.AddTensor("mm.0.weight", Type::F32, {64}, bias.data(), bias.size() * 4);
  };
  const auto bytes = Rewrite("micro-s1-f32", e);
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  const UnusedTensors& u = (*m)->weights().unused;
  CHECK(u.mtp_tensors == 15);
  CHECK(u.vision_tensors == 3);
  CHECK(u.summary == "MTP head: 15 tensors (1 layer); vision tower: 3 tensors");
  const auto tokens = ReadTokens("tokens/seqB.txt");
  Runner with_extra(*m, BackendKind::kRef), plain(LoadFixture("micro-s1-f32"), BackendKind::kRef);
  CHECK(with_extra.Run(tokens) == plain.Run(tokens));
}

TEST_CASE("fused gate_up_exps and a recurrent_layers override give the same model", "[ref]") {
  // Fuse each layer's gate/up expert tensors: per expert, Fe gate rows then Fe up rows.
  auto f = gguf::File::Open(DataPath("tinymoe-s1-q4km.gguf"), nullptr);
  REQUIRE(f.has_value());
  Edit fused;
  static std::vector<std::vector<uint8_t>> keep;
  keep.clear();
  for (int l = 0; l < 4; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const gguf::TensorInfo* g = f->FindTensor(p + "ffn_gate_exps.weight");
    const gguf::TensorInfo* u = f->FindTensor(p + "ffn_up_exps.weight");
    REQUIRE(g != nullptr);
    REQUIRE(u != nullptr);
    REQUIRE(g->type == u->type);
    fused.drop_tensors.insert(g->name);
    fused.drop_tensors.insert(u->name);
    const size_t slab = g->nbytes / g->ne[2];
    std::vector<uint8_t> bytes;
    for (int64_t e = 0; e < g->ne[2]; ++e) {
      bytes.insert(bytes.end(), g->data + e * slab, g->data + (e + 1) * slab);
      bytes.insert(bytes.end(), u->data + e * slab, u->data + (e + 1) * slab);
    }
    keep.push_back(std::move(bytes));
  }
  fused.add_tensors = [&](gguf::Writer& w) {
    for (int l = 0; l < 4; ++l) {
      const gguf::TensorInfo* g =
          f->FindTensor("blk." + std::to_string(l) + ".ffn_gate_exps.weight");
      w.AddTensor("blk." + std::to_string(l) + ".ffn_gate_up_exps.weight", g->type,
                  {g->ne[0], 2 * g->ne[1], g->ne[2]}, keep[l].data(), keep[l].size());
    }
  };
  fused.add = [](gguf::Writer& w) {  // same schedule as the default interval 4
    w.AddBoolArray("qwen35moe.attention.recurrent_layers", {true, true, true, false});
  };
  const auto bytes = Rewrite("tinymoe-s1-q4km", fused);
  auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(m.ok());
  CHECK((*m)->config().recurrent == std::vector<bool>{true, true, true, false});
  const auto tokens = ReadTokens("tokens/seqB.txt");
  Runner a(*m, BackendKind::kRef), b(LoadFixture("tinymoe-s1-q4km"), BackendKind::kRef);
  CHECK(a.Run(tokens) == b.Run(tokens));

  // A different schedule really changes the layer kinds (and is checked against the tensors).
  Edit sched;
  sched.add = [](gguf::Writer& w) {
    w.AddBoolArray("qwen35.attention.recurrent_layers", {true, true, false, false});
  };
  ExpectError("micro-s1-f32", sched, StatusCode::kBadFormat, {"blk.2.attn_q.weight", "missing"});
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("qwenrt_ml_") + std::to_string(::getpid()) + "_" + name))
      .string();
}

double Seconds(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Error messages quote file bytes escaped: printable ASCII only, so always valid UTF-8, no NULs.
bool IsPrintableAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  }
  return true;
}

TEST_CASE("hostile dimensions are refused before anything is sized by them", "[ref][hostile]") {
  // key_length = 2^32-2 with no rope.dimension_count: the rope dims default to the head dim, and a
  // 2^31-entry rope table used to be built (6 s, 266 MB) before any check refused the file.
  Edit huge_dh;
  huge_dh.drop_keys = {"qwen35.attention.key_length", "qwen35.attention.value_length",
                       "qwen35.rope.dimension_count"};
  huge_dh.add = [](gguf::Writer& w) {
    w.AddU32("qwen35.attention.key_length", 0xFFFFFFFEu);
    w.AddU32("qwen35.attention.value_length", 0xFFFFFFFEu);
  };
  double secs = Seconds([&] {
    ExpectError("micro-s1-f32", huge_dh, StatusCode::kBadFormat, {"key_length", "4294967294"});
  });
  CHECK(secs < 1.0);

  // Every width is capped, so products like 2 * n_head * head_dim in the shape checks cannot
  // overflow.
  for (const char* key : {"qwen35.embedding_length", "qwen35.feed_forward_length",
                          "qwen35.attention.head_count", "qwen35.ssm.inner_size"}) {
    Edit e;
    e.drop_keys = {key};
    e.add = [key](gguf::Writer& w) { w.AddU32(key, 0xFFFFFFFFu); };
    INFO(key);
    ExpectError("micro-s1-f32", e, StatusCode::kBadFormat, {key});
  }
  Edit conv;
  conv.drop_keys = {"qwen35.ssm.conv_kernel"};
  conv.add = [](gguf::Writer& w) { w.AddU32("qwen35.ssm.conv_kernel", 1u << 30); };
  ExpectError("micro-s1-f32", conv, StatusCode::kBadFormat, {"conv_kernel"});
}

TEST_CASE("a non-string chat template is refused, not taken for none", "[ref][hostile]") {
  Edit e;
  e.drop_keys = {"tokenizer.chat_template"};
  e.add = [](gguf::Writer& w) { w.AddU32("tokenizer.chat_template", 7); };
  ExpectError("micro-s1-f32", e, StatusCode::kBadFormat, {"tokenizer.chat_template", "u32"});
}

TEST_CASE("error messages never echo raw file bytes", "[ref][hostile]") {
  Edit arch;
  arch.drop_keys = {"general.architecture"};
  arch.add = [](gguf::Writer& w) {
    w.AddString("general.architecture", std::string("qw\xff\xfe\0en\n\x1b[2J", 11));
  };
  Status st = LoadEdited("micro-s1-f32", arch);
  CHECK(st.code() == StatusCode::kUnsupported);
  CHECK(IsPrintableAscii(st.message()));
  CHECK(st.message().find("\\xff") != std::string::npos);

  Edit tensor;  // an unexpected tensor whose name holds control and non-UTF-8 bytes
  static const float kOne = 1.0f;
  tensor.add_tensors = [](gguf::Writer& w) {
    w.AddTensor(std::string("x\x01\xc3(\x7f", 5), Type::F32, {1}, &kOne, sizeof kOne);
  };
  st = LoadEdited("micro-s1-f32", tensor);
  CHECK(st.code() == StatusCode::kBadFormat);
  INFO(st.message());
  CHECK(IsPrintableAscii(st.message()));
  CHECK(st.message().find("x\\x01\\xc3(\\x7f") != std::string::npos);

  // Paths are the caller's, but may hold any byte too.
  auto m = Model::Load(std::string("/nonexistent/\xff\x01.gguf"));
  REQUIRE(!m.ok());
  CHECK(m.status().code() == StatusCode::kIo);
  CHECK(IsPrintableAscii(m.status().message()));
}

TEST_CASE("special files and non-GGUF files are refused cheaply", "[ref][hostile]") {
  // A FIFO: a blocking open would wait forever for a writer.
  const std::string fifo = TempPath("fifo.gguf");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (bool read_file : {false, true}) {
    Model::LoadOptions o;
    o.read_file = read_file;
    auto m = Model::Load(fifo, o);
    CHECK(m.status().code() == StatusCode::kIo);
    CHECK(m.status().message().find("not a regular file") != std::string::npos);
  }
  std::filesystem::remove(fifo);
  CHECK(Model::Load(std::filesystem::temp_directory_path().string()).status().code() ==
        StatusCode::kIo);

  // A 2 GiB (sparse) non-GGUF file is refused from its first bytes in both modes, without reading
  // or allocating its size.
  const std::string big = TempPath("big.bin");
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "NOTAGGUF-NOTAGGUF-NOTAGGUF", 26) == 26);
    REQUIRE(::ftruncate(fd, off_t{2} << 30) == 0);
    ::close(fd);
  }
  for (bool read_file : {false, true}) {
    Model::LoadOptions o;
    o.read_file = read_file;
    Status st;
    const double secs = Seconds([&] { st = Model::Load(big, o).status(); });
    CHECK(st.code() == StatusCode::kBadFormat);
    CHECK(st.message().find("BAD_MAGIC") != std::string::npos);
    CHECK(secs < 1.0);
  }
  std::filesystem::remove(big);
}

TEST_CASE("read_file loads a copy that later changes to the file cannot reach", "[ref][hostile]") {
  const std::string path = TempPath("copy.gguf");
  std::filesystem::copy_file(DataPath("micro-s1-f32.gguf"), path,
                             std::filesystem::copy_options::overwrite_existing);
  Model::LoadOptions o;
  o.read_file = true;
  auto m = Model::Load(path, o);
  REQUIRE(m.ok());
  CHECK((*m)->fingerprint() == LoadFixture("micro-s1-f32")->fingerprint());
  // Truncating a mapped file would kill this process with SIGBUS at the next page it touches
  // (docs/gguf.md); a read one is unaffected.
  REQUIRE(::truncate(path.c_str(), 0) == 0);
  std::filesystem::remove(path);
  const auto tokens = ReadTokens("tokens/seqB.txt");
  Runner a(*m, BackendKind::kRef), b(LoadFixture("micro-s1-f32"), BackendKind::kRef);
  CHECK(a.Run(tokens) == b.Run(tokens));
}

}  // namespace
}  // namespace qwenrt::test
