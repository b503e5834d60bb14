// Synthetic models: the tiny shape reproduces the fixture's layout exactly (keys, types, tensor
// names/types/shapes/offsets), the output does not depend on the thread count, and weights have the
// intended scale. A 1-layer 0.8B file checks the real-size vocabulary layout ([slow]).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "ops/quant.h"
#include "qwenrt/gguf.hpp"
#include "testing/synth_model.h"

namespace qwenrt {
namespace {

const std::string kFixture = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

// Per-process names: several checkouts may run their tests at the same time on one machine.
std::string TempPath(const char* tag) {
  return "/tmp/qwenrt_synth_test_" + std::to_string(getpid()) + "_" + tag + ".gguf";
}

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

TEST_CASE("synth tiny has the fixture's exact layout", "[synth]") {
  SynthOptions o;
  REQUIRE(FindSynthShape("tiny", &o.shape));
  o.vocab_from = kFixture;
  o.seed = 3;
  const std::string path = TempPath("tiny");
  ThreadPool pool(2);
  const Status st = WriteSynthModel(o, path, pool);
  REQUIRE(st.ok());
  gguf::Error err;
  auto fix = gguf::File::Open(kFixture, &err);
  auto syn = gguf::File::Open(path, &err);
  REQUIRE(fix.has_value());
  REQUIRE(syn.has_value());
  REQUIRE(fix->metadata().size() == syn->metadata().size());
  for (size_t i = 0; i < fix->metadata().size(); ++i) {
    const auto& [k1, v1] = fix->metadata()[i];
    const auto& [k2, v2] = syn->metadata()[i];
    CAPTURE(k1);
    REQUIRE(k1 == k2);
    REQUIRE(v1.type() == v2.type());
    REQUIRE(v1.element_type() == v2.element_type());
    REQUIRE(v1.size() == v2.size());
    if (k1 != "general.name") CHECK(v1.Describe() == v2.Describe());
  }
  CHECK(syn->Find("tokenizer.ggml.tokens")->strings() ==
        fix->Find("tokenizer.ggml.tokens")->strings());
  CHECK(syn->Find("tokenizer.chat_template")->AsString() ==
        fix->Find("tokenizer.chat_template")->AsString());
  REQUIRE(fix->tensors().size() == syn->tensors().size());
  for (size_t i = 0; i < fix->tensors().size(); ++i) {
    const auto& a = fix->tensors()[i];
    const auto& b = syn->tensors()[i];
    CAPTURE(a.name);
    REQUIRE(a.name == b.name);
    REQUIRE(a.type == b.type);
    REQUIRE(a.n_dims == b.n_dims);
    for (int j = 0; j < 4; ++j) REQUIRE(a.ne[j] == b.ne[j]);
    REQUIRE(a.offset == b.offset);
  }
  // Weight scales: projections ~ N(0, 1/D) (dequantized std within 15%), norms ~ 1, ssm_a < 0.
  const gguf::TensorInfo* g = syn->FindTensor("blk.0.ffn_gate.weight");
  std::vector<float> w(static_cast<size_t>(g->nelements()));
  REQUIRE(ref::DequantizeRow(g->type, g->data, w.data(), g->nelements()));
  double s2 = 0;
  for (float v : w) s2 += double(v) * v;
  CHECK(std::sqrt(s2 / w.size()) == Approx(1 / std::sqrt(256.0)).epsilon(0.15));
  const gguf::TensorInfo* a = syn->FindTensor("blk.0.ssm_a");
  for (int h = 0; h < 4; ++h) CHECK(reinterpret_cast<const float*>(a->data)[h] < 0);
  const gguf::TensorInfo* n = syn->FindTensor("output_norm.weight");
  for (int i = 0; i < 256; ++i)
    CHECK(std::fabs(reinterpret_cast<const float*>(n->data)[i] - 1) < 0.25);

  // Same seed, other thread count: identical bytes; other seed: different weights.
  ThreadPool pool1(1);
  const std::string path1 = TempPath("tiny1");
  REQUIRE(WriteSynthModel(o, path1, pool1).ok());
  CHECK(ReadAll(path) == ReadAll(path1));
  o.seed = 4;
  REQUIRE(WriteSynthModel(o, path1, pool1).ok());
  CHECK(ReadAll(path) != ReadAll(path1));
  std::remove(path.c_str());
  std::remove(path1.c_str());
}

TEST_CASE("synth reports bad inputs", "[synth]") {
  SynthOptions o;
  CHECK_FALSE(FindSynthShape("7b", &o.shape));
  REQUIRE(FindSynthShape("tiny", &o.shape));
  ThreadPool pool(1);
  o.vocab_from = "/nonexistent/vocab.gguf";
  CHECK(WriteSynthModel(o, TempPath("bad"), pool).code() == StatusCode::kIo);
  o.vocab_from = kFixture;
  CHECK(WriteSynthModel(o, "/nonexistent/dir/out.gguf", pool).code() == StatusCode::kIo);
  o.shape.n_embd = 100;  // not a multiple of 256
  CHECK(WriteSynthModel(o, TempPath("bad"), pool).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("synth 0.8b vocabulary puts the special tokens at their real ids", "[synth][slow]") {
  SynthOptions o;
  REQUIRE(FindSynthShape("0.8b", &o.shape));
  o.shape.n_layer = 1;
  o.vocab_from = kFixture;
  const std::string path = TempPath("08b");
  ThreadPool pool(2);
  REQUIRE(WriteSynthModel(o, path, pool).ok());
  gguf::Error err;
  auto f = gguf::File::Open(path, &err);
  REQUIRE(f.has_value());
  const gguf::Value* tokens = f->Find("tokenizer.ggml.tokens");
  const gguf::Value* types = f->Find("tokenizer.ggml.token_type");
  REQUIRE(tokens->size() == 248320);
  CHECK(f->FindTensor("token_embd.weight")->ne[1] == 248320);
  CHECK(f->FindTensor("token_embd.weight")->type == gguf::Type::Q6_K);
  CHECK(tokens->StringAt(248044) == "<|endoftext|>");
  CHECK(tokens->StringAt(248045) == "<|im_start|>");
  CHECK(tokens->StringAt(248046) == "<|im_end|>");
  CHECK(tokens->StringAt(248068) == "<think>");
  CHECK(tokens->StringAt(248076) == "<|audio_pad|>");
  CHECK(types->At<int32_t>(248046) == 3);
  CHECK(types->At<int32_t>(248319) == 5);
  CHECK(f->Find("tokenizer.ggml.eos_token_id")->AsU32() == 248046);
  CHECK(f->Find("tokenizer.ggml.padding_token_id")->AsU32() == 248044);
  auto fix = gguf::File::Open(kFixture, &err);
  REQUIRE(fix.has_value());
  for (uint64_t id : {0, 100, 300, 417})
    CHECK(tokens->StringAt(id) == fix->Find("tokenizer.ggml.tokens")->StringAt(id));
  CHECK(f->Find("tokenizer.ggml.merges")->strings() ==
        fix->Find("tokenizer.ggml.merges")->strings());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace qwenrt
