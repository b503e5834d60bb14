// Tests of the header-only GGUF reader and writer: round trips of every value type, the three
// fixture models, one malformed file per checklist item (docs/spec/gguf-and-quants.md §5, items
// 1-21, 27, 28), and exhaustive truncation / byte-corruption loops that must fail cleanly.
#include "qwenrt/gguf.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "model/gguf_status.h"
#include "qwenrt/gguf_writer.hpp"

namespace gguf = qwenrt::gguf;
using gguf::ErrorCode;

namespace {

// Parses `bytes` from an exact-size heap copy (so a sanitizer sees any read past the end).
std::optional<gguf::File> Parse(const std::vector<uint8_t>& bytes, gguf::Error* err,
                                const gguf::ParseOptions& opt = gguf::ParseOptions()) {
  return gguf::File::FromMemory(bytes.data(), bytes.size(), /*copy=*/true, err, opt);
}

// Parses and expects failure with `code`; returns the message for further checks.
std::string ExpectError(const std::vector<uint8_t>& bytes, ErrorCode code,
                        const gguf::ParseOptions& opt = gguf::ParseOptions()) {
  gguf::Error err;
  auto f = Parse(bytes, &err, opt);
  INFO("got " << err.ToString());
  CHECK(!f.has_value());
  CHECK(gguf::ErrorCodeName(err.code) == std::string(gguf::ErrorCodeName(code)));
  CHECK(!err.message.empty());
  return err.message;
}

template <typename T>
void Poke(std::vector<uint8_t>* b, size_t off, T v) {
  REQUIRE(off + sizeof(T) <= b->size());
  std::memcpy(b->data() + off, &v, sizeof(T));
}

// Position of the first occurrence of `needle` in `hay` (REQUIREd to exist).
size_t FindBytes(const std::vector<uint8_t>& hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
  REQUIRE(it != hay.end());
  return static_cast<size_t>(it - hay.begin());
}

// A small valid file: a few keys of several types and three tensors (F32, Q8_0, F32 1-D).
gguf::Writer SmallWriter() {
  gguf::Writer w;
  w.AddString("general.architecture", "qwen35");
  w.AddU32("qwen35.block_count", 2);
  w.AddF32("qwen35.rope.freq_base", 1e7f);
  w.AddI32Array("qwen35.rope.dimension_sections", {11, 11, 10, 0});
  w.AddStringArray("tokenizer.ggml.tokens", {"a", "bb", "", "ccc"});
  w.AddBool("tokenizer.ggml.add_bos_token", false);
  std::vector<float> a(8 * 3);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * static_cast<float>(i);
  w.AddTensor("a.weight", gguf::Type::F32, {8, 3}, a.data(), a.size() * 4);
  std::vector<uint8_t> q(2 * 34, 0);  // two Q8_0 blocks: {64, 1}
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(i * 7);
  q[0] = 0x00;
  q[1] = 0x3c;  // d = 1.0
  q[34] = 0x00;
  q[35] = 0xbc;  // d = -1.0
  w.AddTensor("q.weight", gguf::Type::Q8_0, {64, 1}, q.data(), q.size());
  std::vector<float> n(5, 1.0f);
  w.AddTensor("n.weight", gguf::Type::F32, {5}, n.data(), n.size() * 4);
  return w;
}

std::vector<uint8_t> SmallFile() {
  std::vector<uint8_t> b = SmallWriter().Build();
  REQUIRE(!b.empty());
  return b;
}

// A file with one KV record built raw (type id + payload) and nothing else.
std::vector<uint8_t> OneRawKv(std::string_view key, gguf::ValueType t,
                              const std::vector<uint8_t>& payload) {
  gguf::Writer w;
  w.AddRaw(key, static_cast<uint32_t>(t), payload);
  return w.Build();
}

template <typename T>
void Append(std::vector<uint8_t>* b, T v) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
  b->insert(b->end(), p, p + sizeof(T));
}

std::string DataPath(const std::string& name) { return std::string(QWENRT_TEST_DATA) + "/" + name; }

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/qwenrt_gguf_test_" + name;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Types table

TEST_CASE("type traits cover every ggml id", "[gguf]") {
  CHECK(gguf::BlockSize(gguf::Type::Q4_K) == 256);
  CHECK(gguf::TypeSize(gguf::Type::Q4_K) == 144);
  CHECK(gguf::TypeSize(gguf::Type::Q5_K) == 176);
  CHECK(gguf::TypeSize(gguf::Type::Q6_K) == 210);
  CHECK(gguf::TypeSize(gguf::Type::Q8_0) == 34);
  CHECK(gguf::TypeSize(gguf::Type::Q8_K) == 292);
  CHECK(gguf::TypeSize(gguf::Type::BF16) == 2);
  CHECK(gguf::BlockSize(gguf::Type::NVFP4) == 64);
  CHECK(gguf::TypeSize(gguf::Type::MXFP4) == 17);
  CHECK(std::string(gguf::TypeName(gguf::Type::Q6_K)) == "Q6_K");
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
    CHECK(gguf::BlockSize(static_cast<gguf::Type>(id)) == 0);
    CHECK(!gguf::IsKnownType(id));
  }
  int supported = 0, known = 0;
  for (uint32_t id = 0; id < gguf::kTypeCount; ++id) {
    gguf::Type t = static_cast<gguf::Type>(id);
    known += gguf::IsKnownType(id);
    supported += gguf::IsSupported(t);
    CHECK(std::string(gguf::TypeName(t)) != "INVALID");
  }
  CHECK(known == 43 - 8);
  CHECK(supported == 16 + 7);  // docs/quant.md: + the 7 grid i-quants (quant_iq.h)
  CHECK(!gguf::IsKnownType(43));
  CHECK(std::string(gguf::TypeName(static_cast<gguf::Type>(99))) == "INVALID");
}

// ------------------------------------------------------------------------------------------------
// Round trip

TEST_CASE("writer round trip: every value type, arrays, tensors", "[gguf]") {
  gguf::Writer w(64);
  w.AddU8("u8", 200);
  w.AddI8("i8", -100);
  w.AddU16("u16", 60000);
  w.AddI16("i16", -30000);
  w.AddU32("u32", 4000000000u);
  w.AddI32("i32", -2000000000);
  w.AddF32("f32", 1.5f);
  w.AddBool("bool", true);
  w.AddString("str", std::string("h\0llo", 5));
  w.AddU64("u64", 18000000000000000000ull);
  w.AddI64("i64", -9000000000000000000ll);
  w.AddF64("f64", -2.25);
  w.AddArray<uint8_t>("a_u8", {1, 2, 255});
  w.AddArray<int16_t>("a_i16", {-1, 2});
  w.AddU32Array("a_u32", {7, 8, 9});
  w.AddI32Array("a_i32", {-7, 8});
  w.AddF32Array("a_f32", {0.25f, -1.0f});
  w.AddArray<double>("a_f64", {3.5});
  w.AddArray<int64_t>("a_i64", {});
  w.AddBoolArray("a_bool", {true, false, true});
  w.AddStringArray("a_str", std::vector<std::string>{"x", "", "zzz"});

  std::vector<float> f32(32 * 2);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i) - 10.0f;
  std::vector<uint8_t> f16(16 * 2 * 2 * 2, 0x11), bf16(16 * 2, 0x22), q8(34 * 2, 0x33),
      q4k(144 * 3, 0x44), q5k(176, 0x55), q6k(210 * 2, 0x66);
  w.AddTensor("t.f32", gguf::Type::F32, {32, 2}, f32.data(), f32.size() * 4);
  w.AddTensor("t.f16", gguf::Type::F16, {16, 2, 2}, f16.data(), f16.size());
  w.AddTensor("t.bf16", gguf::Type::BF16, {16}, bf16.data(), bf16.size());
  w.AddTensor("t.q8_0", gguf::Type::Q8_0, {64}, q8.data(), q8.size());
  w.AddTensor("t.q4_k", gguf::Type::Q4_K, {256, 1, 3}, q4k.data(), q4k.size());
  w.AddTensor("t.q5_k", gguf::Type::Q5_K, {256}, q5k.data(), q5k.size());
  w.AddTensorView("t.q6_k", gguf::Type::Q6_K, {512, 1, 1, 1}, q6k.data(), q6k.size());

  std::vector<uint8_t> bytes;
  gguf::Error err;
  REQUIRE(w.WriteToBuffer(&bytes, &err));
  auto f = gguf::File::FromMemory(bytes.data(), bytes.size(), /*copy=*/false, &err);
  INFO(err.ToString());
  REQUIRE(f.has_value());
  CHECK(f->version() == 3);
  CHECK(f->alignment() == 64);
  CHECK(f->data_offset() % 64 == 0);
  CHECK(f->metadata().size() == 22);  // 21 + general.alignment
  CHECK(f->metadata()[0].first == "general.alignment");

  uint8_t u8;
  int8_t i8;
  uint16_t u16;
  int16_t i16;
  uint32_t u32;
  int32_t i32;
  float f32v;
  bool b;
  uint64_t u64;
  int64_t i64;
  double d;
  std::string s;
  REQUIRE(f->GetU8("u8", &u8, &err));
  CHECK(u8 == 200);
  REQUIRE(f->GetI8("i8", &i8, &err));
  CHECK(i8 == -100);
  REQUIRE(f->GetU16("u16", &u16, &err));
  CHECK(u16 == 60000);
  REQUIRE(f->GetI16("i16", &i16, &err));
  CHECK(i16 == -30000);
  REQUIRE(f->GetU32("u32", &u32, &err));
  CHECK(u32 == 4000000000u);
  REQUIRE(f->GetI32("i32", &i32, &err));
  CHECK(i32 == -2000000000);
  REQUIRE(f->GetF32("f32", &f32v, &err));
  CHECK(f32v == 1.5f);
  REQUIRE(f->GetBool("bool", &b, &err));
  CHECK(b);
  REQUIRE(f->GetString("str", &s, &err));
  CHECK(s == std::string("h\0llo", 5));
  REQUIRE(f->GetU64("u64", &u64, &err));
  CHECK(u64 == 18000000000000000000ull);
  REQUIRE(f->GetI64("i64", &i64, &err));
  CHECK(i64 == -9000000000000000000ll);
  REQUIRE(f->GetF64("f64", &d, &err));
  CHECK(d == -2.25);

  const gguf::Value* v = f->Find("a_u8");
  REQUIRE(v != nullptr);
  CHECK(v->is_array());
  CHECK(v->element_type() == gguf::ValueType::U8);
  CHECK(v->size() == 3);
  CHECK(v->At<uint8_t>(2) == 255);
  CHECK(v->At<uint8_t>(3) == 0);  // out of range
  CHECK(v->At<int8_t>(0) == 0);   // wrong element type
  CHECK(f->Find("a_i16")->At<int16_t>(0) == -1);
  CHECK(f->Find("a_f64")->At<double>(0) == 3.5);
  CHECK(f->Find("a_i64")->size() == 0);
  std::vector<uint32_t> au32;
  REQUIRE(f->GetU32Array("a_u32", &au32, &err));
  CHECK(au32 == std::vector<uint32_t>{7, 8, 9});
  std::vector<int32_t> ai32;
  REQUIRE(f->GetI32Array("a_i32", &ai32, &err));
  CHECK(ai32 == std::vector<int32_t>{-7, 8});
  REQUIRE(f->GetI32Array("a_u32", &ai32, &err));  // u32 elements accepted as i32
  CHECK(ai32 == std::vector<int32_t>{7, 8, 9});
  CHECK(!f->GetU32Array("a_i32", &au32, &err));  // but -7 is not a u32
  CHECK(err.code == ErrorCode::kBadValue);
  std::vector<float> af32;
  REQUIRE(f->GetF32Array("a_f32", &af32, &err));
  CHECK(af32 == std::vector<float>{0.25f, -1.0f});
  std::vector<bool> abool;
  REQUIRE(f->GetBoolArray("a_bool", &abool, &err));
  CHECK(abool == std::vector<bool>{true, false, true});
  std::vector<std::string> astr;
  REQUIRE(f->GetStringArray("a_str", &astr, &err));
  CHECK(astr == std::vector<std::string>{"x", "", "zzz"});
  std::vector<std::string_view> astr_view;
  REQUIRE(f->GetStringArray("a_str", &astr_view, &err));
  CHECK(astr_view.size() == 3);
  CHECK(astr_view[2] == "zzz");

  REQUIRE(f->tensors().size() == 7);
  const gguf::TensorInfo* t = f->FindTensor("t.q4_k");
  REQUIRE(t != nullptr);
  CHECK(t->type == gguf::Type::Q4_K);
  CHECK(t->n_dims == 3);
  CHECK(t->ne[0] == 256);
  CHECK(t->ne[1] == 1);
  CHECK(t->ne[2] == 3);
  CHECK(t->ne[3] == 1);
  CHECK(t->nbytes == 144 * 3);
  CHECK(t->row_bytes() == 144);
  CHECK(t->nrows() == 3);
  CHECK(t->nelements() == 768);
  CHECK(std::memcmp(t->data, q4k.data(), q4k.size()) == 0);
  CHECK(f->FindTensor("t.f32")->data == f->bytes() + f->data_offset());
  CHECK(std::memcmp(f->FindTensor("t.f32")->data, f32.data(), f32.size() * 4) == 0);
  CHECK(std::memcmp(f->FindTensor("t.q6_k")->data, q6k.data(), q6k.size()) == 0);
  CHECK(f->FindTensor("t.q6_k")->n_dims == 4);
  CHECK(f->FindTensor("t.bf16")->ShapeString() == "{16}");
  for (const gguf::TensorInfo& ti : f->tensors()) {
    CHECK(ti.offset % 64 == 0);
    CHECK(reinterpret_cast<uintptr_t>(ti.data) - reinterpret_cast<uintptr_t>(f->bytes()) ==
          f->data_offset() + ti.offset);
  }
  CHECK(f->FindTensor("nope") == nullptr);
  CHECK(f->Find("nope") == nullptr);

  // Copying the buffer gives the same result, 64-byte aligned.
  auto g = gguf::File::FromMemory(bytes.data(), bytes.size(), /*copy=*/true, &err);
  REQUIRE(g.has_value());
  CHECK(reinterpret_cast<uintptr_t>(g->bytes()) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(g->FindTensor("t.q5_k")->data) % 64 == 0);

  // Moving keeps views valid.
  gguf::File moved = std::move(*g);
  g.reset();
  CHECK(moved.FindTensor("t.q5_k")->data[0] == 0x55);
  CHECK(moved.Find("a_str")->StringAt(2) == "zzz");
  CHECK(moved.Find("str")->AsString().size() == 5);
}

TEST_CASE("writer records bad tensor sizes and writes files", "[gguf]") {
  gguf::Writer w;
  std::vector<uint8_t> q(144);
  w.AddTensor("x", gguf::Type::Q4_K, {100}, q.data(), q.size());  // 100 % 256 != 0
  gguf::Error err;
  std::vector<uint8_t> out;
  CHECK(!w.WriteToBuffer(&out, &err));
  CHECK(err.message.find("'x'") != std::string::npos);
  CHECK(gguf::Writer::TensorBytes(gguf::Type::Q6_K, {512, 3}) == 210 * 2 * 3);
  CHECK(gguf::Writer::TensorBytes(gguf::Type::Q6_K, {500}) == 0);

  // A file written to disk opens through the mmap path.
  std::string path = TempPath("roundtrip.gguf");
  REQUIRE(SmallWriter().WriteToFile(path, &err));
  auto f = gguf::File::Open(path, &err);
  INFO(err.ToString());
  REQUIRE(f.has_value());
  CHECK(f->tensors().size() == 3);
  CHECK(f->size() == SmallFile().size());
  std::vector<uint8_t> mem = SmallFile();
  CHECK(std::memcmp(f->bytes(), mem.data(), mem.size()) == 0);
  std::remove(path.c_str());
}

TEST_CASE("vocab-only file without tensors", "[gguf]") {
  gguf::Writer w;
  w.AddString("general.architecture", "qwen35");
  w.AddStringArray("tokenizer.ggml.tokens", {"a", "b"});
  std::vector<uint8_t> b = w.Build();
  gguf::Error err;
  auto f = Parse(b, &err);
  REQUIRE(f.has_value());
  CHECK(f->tensors().empty());
  // The padding after the metadata may be missing when there are no tensors.
  size_t unpadded = b.size();
  while (unpadded > 0 && b[unpadded - 1] == 0) --unpadded;
  b.resize(unpadded);
  auto g = Parse(b, &err);
  REQUIRE(g.has_value());
  CHECK(g->data_offset() <= b.size());
}

// ------------------------------------------------------------------------------------------------
// Fixture models

TEST_CASE("fixture models parse with the expected keys and shapes", "[gguf]") {
  for (const char* name : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    SECTION(name) {
      std::ifstream js(DataPath(std::string(name) + ".json"));
      REQUIRE(js.good());
      nlohmann::json j = nlohmann::json::parse(js);
      gguf::Error err;
      auto f = gguf::File::Open(DataPath(std::string(name) + ".gguf"), &err);
      INFO(err.ToString());
      REQUIRE(f.has_value());
      CHECK(f->version() == 3);
      CHECK(f->alignment() == 32);
      std::string arch;
      REQUIRE(f->GetString("general.architecture", &arch, &err));
      CHECK(arch == j["arch"].get<std::string>());
      auto u32 = [&](const std::string& suffix) {
        uint32_t v = 0;
        INFO(suffix);
        REQUIRE(f->GetU32(arch + "." + suffix, &v, &err));
        return static_cast<int64_t>(v);
      };
      CHECK(u32("embedding_length") == j["n_embd"].get<int64_t>());
      CHECK(u32("block_count") == j["n_layer"].get<int64_t>());
      CHECK(u32("attention.head_count") == j["n_head"].get<int64_t>());
      CHECK(u32("attention.head_count_kv") == j["n_head_kv"].get<int64_t>());
      CHECK(u32("attention.key_length") == j["head_dim"].get<int64_t>());
      CHECK(u32("ssm.group_count") == j["lin_k_heads"].get<int64_t>());
      CHECK(u32("ssm.time_step_rank") == j["lin_v_heads"].get<int64_t>());
      CHECK(u32("ssm.state_size") == j["lin_k_dim"].get<int64_t>());
      CHECK(u32("ssm.inner_size") ==
            j["lin_v_heads"].get<int64_t>() * j["lin_v_dim"].get<int64_t>());
      CHECK(u32("ssm.conv_kernel") == j["conv"].get<int64_t>());
      CHECK(u32("full_attention_interval") == j["interval"].get<int64_t>());
      float eps = 0, base = 0;
      REQUIRE(f->GetF32(arch + ".attention.layer_norm_rms_epsilon", &eps, &err));
      CHECK(eps == Approx(1e-6f));
      REQUIRE(f->GetF32(arch + ".rope.freq_base", &base, &err));
      CHECK(base == 1e7f);
      std::vector<int32_t> sections;
      REQUIRE(f->GetI32Array(arch + ".rope.dimension_sections", &sections, &err));
      CHECK(sections.size() == 4);
      std::vector<std::string_view> tokens, merges;
      REQUIRE(f->GetStringArray("tokenizer.ggml.tokens", &tokens, &err));
      CHECK(static_cast<int64_t>(tokens.size()) == j["vocab"].get<int64_t>());
      REQUIRE(f->GetStringArray("tokenizer.ggml.merges", &merges, &err));
      CHECK(merges.size() == 161);
      std::vector<int32_t> token_type;
      REQUIRE(f->GetI32Array("tokenizer.ggml.token_type", &token_type, &err));
      CHECK(token_type.size() == tokens.size());
      std::string tmpl;
      REQUIRE(f->GetString("tokenizer.chat_template", &tmpl, &err));
      CHECK(tmpl.find("<|im_start|>") != std::string::npos);
      bool add_bos = true;
      REQUIRE(f->GetBool("tokenizer.ggml.add_bos_token", &add_bos, &err));
      CHECK(!add_bos);

      const int64_t n_embd = j["n_embd"].get<int64_t>(), vocab = j["vocab"].get<int64_t>();
      const gguf::TensorInfo* emb = f->FindTensor("token_embd.weight");
      REQUIRE(emb != nullptr);
      CHECK(emb->n_dims == 2);
      CHECK(emb->ne[0] == n_embd);
      CHECK(emb->ne[1] == vocab);
      CHECK((f->FindTensor("output.weight") == nullptr) == j["tied"].get<bool>());
      const gguf::TensorInfo* norm = f->FindTensor("output_norm.weight");
      REQUIRE(norm != nullptr);
      CHECK(norm->type == gguf::Type::F32);
      CHECK(norm->n_dims == 1);
      CHECK(norm->ne[0] == n_embd);
      const int64_t kd = j["lin_k_heads"].get<int64_t>() * j["lin_k_dim"].get<int64_t>();
      const int64_t vd = j["lin_v_heads"].get<int64_t>() * j["lin_v_dim"].get<int64_t>();
      const gguf::TensorInfo* conv = f->FindTensor("blk.0.ssm_conv1d.weight");
      REQUIRE(conv != nullptr);
      CHECK(conv->ne[0] == j["conv"].get<int64_t>());
      CHECK(conv->ne[1] == 2 * kd + vd);
      const gguf::TensorInfo* q = f->FindTensor("blk.3.attn_q.weight");
      REQUIRE(q != nullptr);
      CHECK(q->ne[0] == n_embd);
      CHECK(q->ne[1] == 2 * j["n_head"].get<int64_t>() * j["head_dim"].get<int64_t>());  // Q + gate
      if (j.contains("n_expert")) {
        const gguf::TensorInfo* e = f->FindTensor("blk.0.ffn_up_exps.weight");
        REQUIRE(e != nullptr);
        CHECK(e->n_dims == 3);
        CHECK(e->ne[0] == n_embd);
        CHECK(e->ne[1] == j["n_ff_exp"].get<int64_t>());
        CHECK(e->ne[2] == j["n_expert"].get<int64_t>());
      }
      // Every tensor lies inside the file, in order, aligned; the data passes the deep check.
      uint64_t end = 0;
      for (const gguf::TensorInfo& t : f->tensors()) {
        CHECK(t.offset >= end);
        CHECK(t.offset % 32 == 0);
        end = t.offset + t.nbytes;
        CHECK(f->data_offset() + end <= f->size());
        CHECK(gguf::IsSupported(t.type));
      }
      CHECK(gguf::CheckAllTensorData(*f, &err));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Malformed-file checklist (gguf-and-quants.md §5)

TEST_CASE("[1] file shorter than the header", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  for (size_t n = 0; n < 24; ++n) {
    ExpectError(std::vector<uint8_t>(b.begin(), b.begin() + n), ErrorCode::kTooSmall);
  }
  gguf::Error err;
  CHECK(!gguf::File::FromMemory(nullptr, 0, false, &err).has_value());
  std::string path = TempPath("short.gguf");
  {
    std::ofstream o(path, std::ios::binary);
    o.write("GGUF\3\0\0\0", 8);
  }
  CHECK(!gguf::File::Open(path, &err).has_value());
  CHECK(err.code == ErrorCode::kTooSmall);
  std::remove(path.c_str());
  CHECK(!gguf::File::Open(TempPath("does-not-exist.gguf"), &err).has_value());
  CHECK(err.code == ErrorCode::kIo);
  CHECK(!gguf::File::Open(QWENRT_TEST_DATA, &err).has_value());  // a directory
  CHECK(err.code == ErrorCode::kIo);
}

TEST_CASE("Open refuses FIFOs without blocking; kRead equals kMap", "[gguf][malformed]") {
  const std::string fifo = TempPath("fifo.gguf");
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (gguf::OpenMode mode : {gguf::OpenMode::kMap, gguf::OpenMode::kRead}) {
    gguf::Error err;
    CHECK(!gguf::File::Open(fifo, &err, {}, mode).has_value());  // returns at once, no writer
    CHECK(err.code == ErrorCode::kIo);
    CHECK(err.message.find("not a regular file") != std::string::npos);
  }
  std::remove(fifo.c_str());

  // kRead gives the same metadata, tensors and bytes as the mapping.
  gguf::Error err;
  auto mapped = gguf::File::Open(DataPath("tiny-s1-q4km.gguf"), &err);
  auto read = gguf::File::Open(DataPath("tiny-s1-q4km.gguf"), &err, {}, gguf::OpenMode::kRead);
  REQUIRE(mapped.has_value());
  REQUIRE(read.has_value());
  REQUIRE(mapped->size() == read->size());
  CHECK(std::memcmp(mapped->bytes(), read->bytes(), mapped->size()) == 0);
  REQUIRE(mapped->tensors().size() == read->tensors().size());
  for (size_t i = 0; i < read->tensors().size(); ++i) {
    CHECK(read->tensors()[i].data == read->bytes() + (mapped->tensors()[i].data - mapped->bytes()));
  }
  CHECK(reinterpret_cast<uintptr_t>(read->bytes()) % 64 == 0);

  // A bad header in kRead mode is reported with the path, before the body is read.
  std::vector<uint8_t> b = SmallFile();
  b[0] = 'X';
  const std::string path = TempPath("badmagic.gguf");
  {
    std::ofstream o(path, std::ios::binary);
    o.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  CHECK(!gguf::File::Open(path, &err, {}, gguf::OpenMode::kRead).has_value());
  CHECK(err.code == ErrorCode::kBadMagic);
  CHECK(err.message.find("badmagic.gguf") != std::string::npos);
  std::remove(path.c_str());
  // FromMemory(copy=true) checks the header before copying.
  CHECK(!gguf::File::FromMemory(b.data(), b.size(), true, &err).has_value());
  CHECK(err.code == ErrorCode::kBadMagic);
}

TEST_CASE("[2] bad magic", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  b[3] = 'X';
  CHECK(ExpectError(b, ErrorCode::kBadMagic).find("GGUX") != std::string::npos);
  std::memcpy(b.data(), "FUGG", 4);
  ExpectError(b, ErrorCode::kBadMagic);
}

TEST_CASE("[3] bad or byte-swapped version", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  for (uint32_t v : {0u, 1u, 4u, 0xffffu}) {
    Poke<uint32_t>(&b, 4, v);
    CHECK(ExpectError(b, ErrorCode::kBadVersion).find(std::to_string(v)) != std::string::npos);
  }
  for (uint32_t v : {0x03000000u, 0x02000000u, 0x00010000u}) {
    Poke<uint32_t>(&b, 4, v);
    ExpectError(b, ErrorCode::kByteSwapped);
  }
  Poke<uint32_t>(&b, 4, 2);  // v2 has the same layout and is accepted
  gguf::Error err;
  auto f = Parse(b, &err);
  REQUIRE(f.has_value());
  CHECK(f->version() == 2);
}

TEST_CASE("[4] negative or implausible counts", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  auto with = [&](int64_t nt, int64_t nkv) {
    std::vector<uint8_t> c = b;
    Poke<int64_t>(&c, 8, nt);
    Poke<int64_t>(&c, 16, nkv);
    return c;
  };
  ExpectError(with(-1, 6), ErrorCode::kBadCount);
  ExpectError(with(3, -1), ErrorCode::kBadCount);
  ExpectError(with(std::numeric_limits<int64_t>::min(), 6), ErrorCode::kBadCount);
  ExpectError(with(3, int64_t{1} << 40), ErrorCode::kBadCount);
  ExpectError(with(int64_t{1} << 40, 6), ErrorCode::kBadCount);
  ExpectError(with(std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()),
              ErrorCode::kBadCount);
  // Just past what the bytes after the header can hold: (size - 24) / 14 + 1 KV records.
  ExpectError(with(0, static_cast<int64_t>((b.size() - 24) / 14 + 1)), ErrorCode::kBadCount);
  ExpectError(with(static_cast<int64_t>((b.size() - 24) / 25 + 1), 0), ErrorCode::kBadCount);
}

TEST_CASE("[5] bad key lengths", "[gguf][malformed]") {
  std::vector<uint8_t> u32v = {1, 0, 0, 0};
  CHECK(ExpectError(OneRawKv("", gguf::ValueType::U32, u32v), ErrorCode::kBadKey).find("empty") !=
        std::string::npos);
  ExpectError(OneRawKv(std::string(70000, 'k'), gguf::ValueType::U32, u32v), ErrorCode::kBadKey);
  std::vector<uint8_t> b = OneRawKv("abc", gguf::ValueType::U32, u32v);
  for (uint64_t len : {uint64_t{1} << 31, uint64_t{40}, ~uint64_t{0}}) {
    Poke<uint64_t>(&b, 24, len);  // the key length of KV #0
    ExpectError(b, ErrorCode::kBadKey);
  }
}

TEST_CASE("[6] duplicate key", "[gguf][malformed]") {
  gguf::Writer w;
  w.AddU32("qwen35.block_count", 2);
  w.AddString("general.name", "x");
  w.AddU32("qwen35.block_count", 3);
  std::string msg = ExpectError(w.Build(), ErrorCode::kDuplicateKey);
  CHECK(msg.find("qwen35.block_count") != std::string::npos);
}

TEST_CASE("[7] unknown value types and nested arrays", "[gguf][malformed]") {
  gguf::Writer w;
  w.AddRaw("k", 13, {0, 0, 0, 0});
  CHECK(ExpectError(w.Build(), ErrorCode::kBadValueType).find("13") != std::string::npos);
  gguf::Writer w2;
  w2.AddRaw("k", 0x80000000u, {0, 0, 0, 0});  // negative as i32
  ExpectError(w2.Build(), ErrorCode::kBadValueType);
  std::vector<uint8_t> nested;
  Append<int32_t>(&nested, 9);  // element type ARRAY
  Append<uint64_t>(&nested, 0);
  CHECK(ExpectError(OneRawKv("k", gguf::ValueType::ARRAY, nested), ErrorCode::kBadValueType)
            .find("nested") != std::string::npos);
  std::vector<uint8_t> unknown_elem;
  Append<int32_t>(&unknown_elem, 42);
  Append<uint64_t>(&unknown_elem, 0);
  ExpectError(OneRawKv("k", gguf::ValueType::ARRAY, unknown_elem), ErrorCode::kBadValueType);
}

TEST_CASE("[8] array counts beyond limits or the file", "[gguf][malformed]") {
  auto array_kv = [](gguf::ValueType et, uint64_t count, size_t actual_bytes) {
    std::vector<uint8_t> p;
    Append<int32_t>(&p, static_cast<int32_t>(et));
    Append<uint64_t>(&p, count);
    p.resize(p.size() + actual_bytes, 0);
    return OneRawKv("arr", gguf::ValueType::ARRAY, p);
  };
  ExpectError(array_kv(gguf::ValueType::U8, (uint64_t{1} << 30) + 1, 16), ErrorCode::kBadArray);
  ExpectError(array_kv(gguf::ValueType::U32, 1000, 16), ErrorCode::kBadArray);
  ExpectError(array_kv(gguf::ValueType::F64, ~uint64_t{0}, 16), ErrorCode::kBadArray);
  // Strings: each element needs >= 8 bytes, checked before allocating.
  ExpectError(array_kv(gguf::ValueType::STRING, 1000, 64), ErrorCode::kBadArray);
  // The boundary itself: exactly as many bytes as the elements need is fine.
  gguf::Error err;
  CHECK(Parse(array_kv(gguf::ValueType::U32, 4, 16), &err).has_value());
}

TEST_CASE("[9] strings with huge lengths", "[gguf][malformed]") {
  auto string_kv = [](uint64_t len, size_t actual) {
    std::vector<uint8_t> p;
    Append<uint64_t>(&p, len);
    p.resize(p.size() + actual, 'x');
    return OneRawKv("s", gguf::ValueType::STRING, p);
  };
  CHECK(ExpectError(string_kv((uint64_t{1} << 30) + 1, 8), ErrorCode::kBadString).find("'s'") !=
        std::string::npos);
  ExpectError(string_kv(1000, 8), ErrorCode::kBadString);
  ExpectError(string_kv(~uint64_t{0}, 8), ErrorCode::kBadString);
  // A string element of an array.
  std::vector<uint8_t> p;
  Append<int32_t>(&p, 8);
  Append<uint64_t>(&p, 2);
  Append<uint64_t>(&p, 1);
  p.push_back('a');
  Append<uint64_t>(&p, 500);
  p.resize(p.size() + 16, 'b');
  CHECK(ExpectError(OneRawKv("arr", gguf::ValueType::ARRAY, p), ErrorCode::kBadString)
            .find("element 1") != std::string::npos);
}

TEST_CASE("[10] bad general.alignment", "[gguf][malformed]") {
  {
    gguf::Writer w;
    w.AddI32("general.alignment", 32);
    CHECK(ExpectError(w.Build(), ErrorCode::kBadAlignment).find("i32") != std::string::npos);
  }
  {
    gguf::Writer w;
    w.AddU64("general.alignment", 32);
    ExpectError(w.Build(), ErrorCode::kBadAlignment);
  }
  for (uint32_t a : {0u, 3u, 48u, 0xffffffffu}) {
    gguf::Writer w;
    w.AddU32("general.alignment", a);
    CHECK(ExpectError(w.Build(), ErrorCode::kBadAlignment).find(std::to_string(a)) !=
          std::string::npos);
  }
  for (uint32_t a : {1u, 8u, 256u}) {  // valid powers of two, honoured for the data layout
    gguf::Writer w(a);
    std::vector<float> x(3, 1.0f);
    w.AddTensor("x", gguf::Type::F32, {3}, x.data(), 12);
    w.AddTensor("y", gguf::Type::F32, {3}, x.data(), 12);
    gguf::Error err;
    std::vector<uint8_t> b = w.Build();
    auto f = Parse(b, &err);
    INFO(err.ToString());
    REQUIRE(f.has_value());
    CHECK(f->alignment() == a);
    CHECK(f->FindTensor("y")->offset == (12 + a - 1) / a * a);
  }
}

TEST_CASE("[11] typed getters reject the wrong type", "[gguf][malformed]") {
  gguf::Writer w;
  w.AddI32("qwen35.block_count", 4);
  w.AddF64("qwen35.rope.freq_base", 1e7);
  w.AddF32Array("qwen35.rope.dimension_sections", {11, 11, 10, 0});
  w.AddU32("tokenizer.ggml.tokens", 3);
  w.AddStringArray("general.name", {"x"});
  std::vector<uint8_t> b = w.Build();
  gguf::Error err;
  auto f = Parse(b, &err);
  REQUIRE(f.has_value());
  uint32_t u32 = 77;
  CHECK(!f->GetU32("qwen35.block_count", &u32, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  CHECK(err.message.find("qwen35.block_count") != std::string::npos);
  CHECK(err.message.find("i32") != std::string::npos);
  CHECK(err.message.find("u32") != std::string::npos);
  CHECK(u32 == 77);  // unchanged
  float f32 = 0;
  CHECK(!f->GetF32("qwen35.rope.freq_base", &f32, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  CHECK(err.message.find("f64") != std::string::npos);
  std::vector<int32_t> sections;
  CHECK(!f->GetI32Array("qwen35.rope.dimension_sections", &sections, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  CHECK(err.message.find("array<f32>") != std::string::npos);
  std::vector<std::string_view> tokens;
  CHECK(!f->GetStringArray("tokenizer.ggml.tokens", &tokens, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  std::string name;
  CHECK(!f->GetString("general.name", &name, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  bool bv;
  CHECK(!f->GetBool("qwen35.block_count", &bv, &err));
  CHECK(err.code == ErrorCode::kWrongType);
  // The status mapping keeps the code name and the message.
  qwenrt::Status s = qwenrt::GgufStatus(err);
  CHECK(s.code() == qwenrt::StatusCode::kBadFormat);
  CHECK(s.message().find("WRONG_TYPE") != std::string::npos);
}

TEST_CASE("[12] missing keys", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  gguf::Error err;
  auto f = Parse(b, &err);
  REQUIRE(f.has_value());
  uint32_t v;
  CHECK(!f->GetU32("qwen35.embedding_length", &v, &err));
  CHECK(err.code == ErrorCode::kMissingKey);
  CHECK(err.message.find("qwen35.embedding_length") != std::string::npos);
  std::vector<std::string_view> merges;
  CHECK(!f->GetStringArray("tokenizer.ggml.merges", &merges, &err));
  CHECK(err.code == ErrorCode::kMissingKey);
  CHECK(!f->Has("tokenizer.ggml.merges"));
  CHECK(f->Has("tokenizer.ggml.tokens"));
}

TEST_CASE("[14] bad and duplicate tensor names", "[gguf][malformed]") {
  std::vector<uint8_t> x(4, 0);
  {
    gguf::Writer w;
    w.AddTensorRaw("", 0, {1}, x);
    ExpectError(w.Build(), ErrorCode::kBadTensorName);
  }
  {
    gguf::Writer w;
    w.AddTensorRaw(std::string(64, 'n'), 0, {1}, x);
    CHECK(ExpectError(w.Build(), ErrorCode::kBadTensorName).find("64") != std::string::npos);
  }
  {
    gguf::Writer w;
    w.AddTensorRaw(std::string(63, 'n'), 0, {1}, x);  // the longest valid name
    gguf::Error err;
    CHECK(Parse(w.Build(), &err).has_value());
  }
  {
    gguf::Writer w;
    w.AddTensorRaw("blk.0.attn_norm.weight", 0, {1}, x);
    w.AddTensorRaw("other", 0, {1}, x);
    w.AddTensorRaw("blk.0.attn_norm.weight", 0, {1}, x);
    CHECK(ExpectError(w.Build(), ErrorCode::kDuplicateTensor).find("blk.0.attn_norm.weight") !=
          std::string::npos);
  }
  {
    std::vector<uint8_t> b = SmallFile();
    size_t pos = FindBytes(b, "q.weight");
    Poke<uint64_t>(&b, pos - 8, uint64_t{1} << 40);  // name length of a tensor past the end
    ExpectError(b, ErrorCode::kBadTensorName);
  }
}

TEST_CASE("[15] bad dimensions", "[gguf][malformed]") {
  {
    gguf::Writer w;
    w.AddTensorRaw("t", 0, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4));
    CHECK(ExpectError(w.Build(), ErrorCode::kBadDims).find("5 dimensions") != std::string::npos);
  }
  for (int64_t bad : {int64_t{-1}, int64_t{0}, std::numeric_limits<int64_t>::min()}) {
    gguf::Writer w;
    w.AddTensorRaw("t", 0, {4, bad}, std::vector<uint8_t>(16));
    CHECK(ExpectError(w.Build(), ErrorCode::kBadDims).find("ne[1] = " + std::to_string(bad)) !=
          std::string::npos);
  }
  {
    std::vector<uint8_t> b = SmallFile();
    size_t pos = FindBytes(b, "a.weight") + 8;
    Poke<uint32_t>(&b, pos, 0xffffffffu);  // n_dims
    ExpectError(b, ErrorCode::kBadDims);
  }
}

TEST_CASE("[16] element-count overflow", "[gguf][malformed]") {
  for (const std::vector<int64_t>& ne :
       {std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32},
        std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 2},
        std::vector<int64_t>{1 << 20, 1 << 20, 1 << 20, 1 << 20}}) {
    gguf::Writer w;
    w.AddTensorRaw("big", 0, ne, std::vector<uint8_t>(4));
    CHECK(ExpectError(w.Build(), ErrorCode::kElementOverflow).find("'big'") != std::string::npos);
  }
}

TEST_CASE("[17] invalid, removed and unsupported tensor types", "[gguf][malformed]") {
  auto with_type = [](uint32_t type) {
    gguf::Writer w;
    w.AddTensorRaw("t.weight", type, {256}, std::vector<uint8_t>(256 * 4));
    return w.Build();
  };
  CHECK(ExpectError(with_type(43), ErrorCode::kBadTensorType).find("43") != std::string::npos);
  ExpectError(with_type(0xffffffffu), ErrorCode::kBadTensorType);  // -1
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
    CHECK(ExpectError(with_type(removed), ErrorCode::kBadTensorType).find("removed") !=
          std::string::npos);
  }
  for (gguf::Type t : {gguf::Type::Q8_1, gguf::Type::Q8_K, gguf::Type::TQ2_0, gguf::Type::I32,
                       gguf::Type::F64, gguf::Type::NVFP4}) {
    std::string msg = ExpectError(with_type(static_cast<uint32_t>(t)), ErrorCode::kUnsupportedType);
    CHECK(msg.find(gguf::TypeName(t)) != std::string::npos);
    CHECK(msg.find("'t.weight'") != std::string::npos);
  }
  // A tool may read files with types qwenrt cannot compute with.
  gguf::Writer w;
  w.AddTensorRaw("t.weight", static_cast<uint32_t>(gguf::Type::TQ1_0), {256},
                 std::vector<uint8_t>(54));
  gguf::ParseOptions lenient;
  lenient.require_supported_types = false;
  gguf::Error err;
  auto f = Parse(w.Build(), &err, lenient);
  REQUIRE(f.has_value());
  CHECK(f->tensors()[0].type == gguf::Type::TQ1_0);
  CHECK(f->tensors()[0].nbytes == 54);
  CHECK(qwenrt::GgufStatus(gguf::Error{ErrorCode::kUnsupportedType, "x"}).code() ==
        qwenrt::StatusCode::kUnsupported);
}

TEST_CASE("[18] ne0 not a multiple of the block size", "[gguf][malformed]") {
  const std::vector<std::pair<gguf::Type, int64_t>> cases = {{gguf::Type::Q4_K, 100},
                                                             {gguf::Type::Q6_K, 257},
                                                             {gguf::Type::Q8_0, 48},
                                                             {gguf::Type::Q5_K, 128}};
  for (auto [type, ne0] : cases) {
    gguf::Writer w;
    w.AddTensorRaw("w", static_cast<uint32_t>(type), {ne0, 2}, std::vector<uint8_t>(1024));
    CHECK(ExpectError(w.Build(), ErrorCode::kBadBlockMultiple).find(std::to_string(ne0)) !=
          std::string::npos);
  }
}

TEST_CASE("[19] byte-size overflow", "[gguf][malformed]") {
  // 2^62 elements fit in int64, but 2^62 * 4 bytes overflow 64 bits.
  gguf::Writer w;
  w.AddTensorRaw("huge", 0, {int64_t{1} << 31, int64_t{1} << 31}, std::vector<uint8_t>(4));
  ExpectError(w.Build(), ErrorCode::kSizeOverflow);
  gguf::Writer w2;  // 3 * 2^61 elements, 12 * 2^61 bytes
  w2.AddTensorRaw("huge", 0, {int64_t{1} << 61, 3}, std::vector<uint8_t>(4));
  ExpectError(w2.Build(), ErrorCode::kSizeOverflow);
}

TEST_CASE("[20] misaligned and out-of-order offsets", "[gguf][malformed]") {
  std::vector<uint8_t> d(64, 1);
  {
    gguf::Writer w;
    w.AddTensorRaw("a", 0, {16}, d, /*offset=*/8);
    CHECK(ExpectError(w.Build(), ErrorCode::kMisaligned).find("'a'") != std::string::npos);
  }
  {
    gguf::Writer w;  // aligned, but not the running padded sum
    w.AddTensorRaw("a", 0, {16}, d);
    w.AddTensorRaw("b", 0, {16}, d, /*offset=*/0);  // overlaps "a"
    std::string msg = ExpectError(w.Build(), ErrorCode::kBadOffset);
    CHECK(msg.find("'b'") != std::string::npos);
    CHECK(msg.find("expected 64") != std::string::npos);
  }
  {
    gguf::Writer w;  // reordered
    w.AddTensorRaw("a", 0, {16}, d, /*offset=*/64);
    w.AddTensorRaw("b", 0, {16}, d, /*offset=*/0);
    ExpectError(w.Build(), ErrorCode::kBadOffset);
    // Without the strict rule this layout is only bounds-checked and accepted.
    gguf::ParseOptions loose;
    loose.require_contiguous_offsets = false;
    gguf::Error err;
    auto f = Parse(w.Build(), &err, loose);
    REQUIRE(f.has_value());
    CHECK(f->FindTensor("a")->offset == 64);
  }
}

TEST_CASE("[21] data beyond the end of the file", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  gguf::Error err;
  auto f = Parse(b, &err);
  REQUIRE(f.has_value());
  const gguf::TensorInfo& last = f->tensors().back();
  const size_t data_end = static_cast<size_t>(f->data_offset() + last.offset + last.nbytes);
  const size_t data_start = static_cast<size_t>(f->data_offset());
  // Missing padding after the last tensor is fine; one byte less is not.
  CHECK(Parse(std::vector<uint8_t>(b.begin(), b.begin() + data_end), &err).has_value());
  CHECK(ExpectError(std::vector<uint8_t>(b.begin(), b.begin() + data_end - 1),
                    ErrorCode::kDataOutOfBounds)
            .find("'n.weight'") != std::string::npos);
  // The data section itself starting past the end: one tensor info ends at 24 + 33 = 57, so the
  // data section starts at 64; a 60-byte file holds all records but not the data start.
  {
    gguf::Writer w;
    w.AddTensorRaw("a", 0, {1}, std::vector<uint8_t>(4));
    std::vector<uint8_t> c = w.Build();
    REQUIRE(c.size() == 96);
    c.resize(60);
    CHECK(ExpectError(c, ErrorCode::kDataOutOfBounds).find("data section starts at 64") !=
          std::string::npos);
  }
  CHECK(data_start % 32 == 0);
  // Offsets that overflow when added to data_start.
  gguf::Writer w;
  w.AddTensorRaw("a", 0, {16}, std::vector<uint8_t>(64), ~uint64_t{31});
  gguf::ParseOptions loose;
  loose.require_contiguous_offsets = false;
  ExpectError(w.Build(), ErrorCode::kDataOutOfBounds, loose);
  gguf::Writer w2;
  w2.AddTensorRaw("a", 0, {16}, std::vector<uint8_t>(64), 4096);
  ExpectError(w2.Build(), ErrorCode::kDataOutOfBounds, loose);
}

// Split files from a path: gguf_split_test.cpp. A buffer cannot name its other parts.
TEST_CASE("[28] split files are rejected from memory", "[gguf][malformed]") {
  {
    gguf::Writer w;
    w.AddU16("split.no", 0);
    w.AddU16("split.count", 3);
    w.AddI32("split.tensors.count", 10);
    CHECK(ExpectError(w.Build(), ErrorCode::kSplitFile).find("part 1 of a 3-part split") !=
          std::string::npos);
  }
  {
    gguf::Writer w;  // a single "split" is an ordinary file
    w.AddU16("split.no", 0);
    w.AddU16("split.count", 1);
    gguf::Error err;
    CHECK(Parse(w.Build(), &err).has_value());
  }
  {
    gguf::Writer w;
    w.AddString("split.count", "2");
    ExpectError(w.Build(), ErrorCode::kWrongType);
  }
}

TEST_CASE("[27] deep check finds non-finite data and block scales", "[gguf][malformed]") {
  struct Case {
    gguf::Type type;
    int64_t ne0;
    size_t poke_at;   // byte offset (in the second block / element) of the field made non-finite
    uint16_t bits16;  // value written there (fp16/bf16), or 0 for f32
  };
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  for (float bad : {kNan, kInf, -kInf}) {
    std::vector<float> x(10, 1.0f);
    x[7] = bad;
    gguf::Writer w;
    w.AddTensor("f", gguf::Type::F32, {10}, x.data(), 40);
    gguf::Error err;
    auto f = Parse(w.Build(), &err);
    REQUIRE(f.has_value());
    CHECK(!gguf::CheckAllTensorData(*f, &err));
    CHECK(err.code == ErrorCode::kBadTensorData);
    CHECK(err.message.find("element 7") != std::string::npos);
  }
  const Case cases[] = {
      {gguf::Type::F16, 8, 2 * 5, 0x7c00},         // +inf
      {gguf::Type::F16, 8, 2 * 5, 0xfe00},         // NaN
      {gguf::Type::BF16, 8, 2 * 3, 0x7fc0},        // NaN
      {gguf::Type::BF16, 8, 2 * 3, 0xff80},        // -inf
      {gguf::Type::Q8_0, 64, 34 + 0, 0x7c00},      // d of block 1
      {gguf::Type::Q4_K, 512, 144 + 0, 0x7e00},    // d
      {gguf::Type::Q4_K, 512, 144 + 2, 0xfc00},    // dmin
      {gguf::Type::Q5_K, 512, 176 + 2, 0x7c01},    // dmin
      {gguf::Type::Q6_K, 512, 210 + 208, 0x7c00},  // d
  };
  for (const Case& c : cases) {
    INFO(gguf::TypeName(c.type) << " at " << c.poke_at);
    std::vector<uint8_t> data(gguf::Writer::TensorBytes(c.type, {c.ne0}), 0);
    gguf::Writer ok_w;
    ok_w.AddTensor("t", c.type, {c.ne0}, data.data(), data.size());
    gguf::Error err;
    auto ok = Parse(ok_w.Build(), &err);
    REQUIRE(ok.has_value());
    CHECK(gguf::CheckAllTensorData(*ok, &err));
    std::memcpy(data.data() + c.poke_at, &c.bits16, 2);
    gguf::Writer w;
    w.AddTensor("t", c.type, {c.ne0}, data.data(), data.size());
    auto f = Parse(w.Build(), &err);
    REQUIRE(f.has_value());
    CHECK(!gguf::CheckAllTensorData(*f, &err));
    CHECK(err.code == ErrorCode::kBadTensorData);
    CHECK(err.message.find("'t'") != std::string::npos);
  }
  // Quant payload bytes (not scales) may hold any bit pattern.
  std::vector<uint8_t> q(34, 0xff);
  q[0] = 0;
  q[1] = 0x3c;
  gguf::Writer w;
  w.AddTensor("t", gguf::Type::Q8_0, {32}, q.data(), q.size());
  gguf::Error err;
  auto f = Parse(w.Build(), &err);
  REQUIRE(f.has_value());
  CHECK(gguf::CheckAllTensorData(*f, &err));
}

// ------------------------------------------------------------------------------------------------
// Robustness: every truncation and many corruptions fail cleanly (run under ASan/valgrind).

TEST_CASE("every truncation of a valid file fails cleanly", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  gguf::Error err;
  auto full = Parse(b, &err);
  REQUIRE(full.has_value());
  const gguf::TensorInfo& last = full->tensors().back();
  const size_t data_end = static_cast<size_t>(full->data_offset() + last.offset + last.nbytes);
  for (size_t n = 0; n < b.size(); ++n) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + n);
    auto f = Parse(cut, &err);
    if (n < data_end) {
      INFO("prefix of " << n << " bytes");
      REQUIRE(!f.has_value());
      REQUIRE(err.code != ErrorCode::kOk);
    } else {
      REQUIRE(f.has_value());  // only the padding after the last tensor is missing
    }
  }
}

TEST_CASE("corrupted bytes never crash the reader", "[gguf][malformed]") {
  std::vector<uint8_t> b = SmallFile();
  gguf::Error err;
  auto full = Parse(b, &err);
  REQUIRE(full.has_value());
  const size_t head = static_cast<size_t>(full->data_offset());
  // Every byte of the header/metadata/tensor infos set to a few interesting values.
  int failures = 0;
  for (size_t i = 0; i < head; ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x7f},
                      static_cast<uint8_t>(b[i] ^ 1)}) {
      std::vector<uint8_t> c = b;
      c[i] = v;
      auto f = Parse(c, &err);
      if (!f) {
        ++failures;
        CHECK(!err.message.empty());
      } else {
        // Whatever parsed must be self-consistent: every tensor inside the buffer.
        for (const gguf::TensorInfo& t : f->tensors()) {
          REQUIRE(t.data >= f->bytes());
          REQUIRE(static_cast<uint64_t>(t.data - f->bytes()) + t.nbytes <= f->size());
        }
      }
    }
  }
  CHECK(failures > 0);
  // Random multi-byte corruption.
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> c = b;
    int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) c[rng() % head] = static_cast<uint8_t>(rng());
    auto f = Parse(c, &err);
    if (f) {
      for (const gguf::TensorInfo& t : f->tensors()) {
        REQUIRE(static_cast<uint64_t>(t.data - f->bytes()) + t.nbytes <= f->size());
      }
    }
  }
}
