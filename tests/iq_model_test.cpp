// The i-quant fixture models (tests/data/iq/tiny4-<TYPE>.gguf, made by scripts/make_iq_fixtures.sh
// with the peer's quantizer: every matrix in the type, the tied head IQ3_S where the type needs an
// importance matrix): they load and hold the type; the reference path reproduces its stored logits;
// the CPU path (Q8_K activations) is within the fast-path bar of tests/data/README.md against the
// reference (mean|d|/std <= 1.25 x the peer's 0.0571 on tiny seqB; top-1 agreement at least 0.8,
// see below); with the recurrent delta rule, CPU prefill equals token-by-token decode bit for bit.
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

#include "model_test_util.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::test {
namespace {

constexpr double kPeerMeanOverStd =
    0.0571;  // tests/data/README.md: the peer's fast path, tiny seqB

const char* const kTypes[] = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"};

TEST_CASE("i-quant fixtures hold their type in every matrix", "[golden]") {
  for (const char* type : kTypes) {
    CAPTURE(type);
    gguf::Error err;
    auto f = gguf::File::Open(DataPath(std::string("iq/tiny4-") + type + ".gguf"), &err);
    REQUIRE(f.has_value());
    std::map<std::string, int> count;
    for (const gguf::TensorInfo& t : f->tensors()) {
      if (t.type == gguf::Type::F32) continue;
      if (t.name == "token_embd.weight") {
        CHECK((std::string(gguf::TypeName(t.type)) == type || t.type == gguf::Type::IQ3_S));
        continue;
      }
      ++count[gguf::TypeName(t.type)];
    }
    REQUIRE(count.size() == 1);
    CHECK(count.begin()->first == type);
    CHECK(count.begin()->second >= 30);  // 4 layers' projections and FFNs
  }
}

TEST_CASE("i-quant fixtures: golden logits, reference and CPU paths", "[golden][ref][cpu]") {
  const auto tokens = ReadTokens("tokens/seqB.txt");
  for (const char* type : kTypes) {
    CAPTURE(type);
    const std::string name = std::string("iq/tiny4-") + type;
    auto model = LoadFixture(name);
    const int64_t V = model->config().n_vocab;
    const auto golden = ReadF32(name + ".seqB.ref.f32");
    REQUIRE(golden.size() == tokens.size() * static_cast<size_t>(V));

    Runner ref(model, BackendKind::kRef);
    const Distance dr = Compare(ref.Run(tokens), golden, V);
    CHECK(dr.max_rel <= 1e-5);  // same code; only compiler contraction may differ across builds

    Runner cpu(model, BackendKind::kCpu);
    const auto prefill = cpu.Run(tokens);
    const Distance dc = Compare(prefill, golden, V);
    WARN(type << " CPU vs ref: max|d|/max = " << dc.max_rel
              << ", mean|d|/std = " << dc.mean_over_std << ", top-1 = " << dc.top1);
    CHECK(dc.mean_over_std <= 1.25 * kPeerMeanOverStd);
    // The README's top-1 bar is the peer's agreement on its own run of the same file, which its
    // tools here cannot produce for a given token list. These random 4-layer models have many
    // near-tied logits (measured 0.82-0.95 at this error level), so the floor is 0.8 of the 40
    // rows.
    CHECK(dc.top1 >= 0.8);

    // With the recurrent delta rule at every length the CPU path does not depend on the split.
    BackendOptions fixed;
    fixed.gdn_chunk_min_tokens = INT64_MAX;
    Runner split(model, BackendKind::kCpu, 512, fixed);
    const auto whole = split.Run(tokens);
    split.Reset();
    const auto decode = split.Run(tokens, {1});
    CHECK(std::memcmp(whole.data(), decode.data(), whole.size() * sizeof(float)) == 0);
    split.Reset();
    const auto pieces = split.Run(tokens, {7, 3});
    CHECK(std::memcmp(whole.data(), pieces.data(), whole.size() * sizeof(float)) == 0);
  }
}

}  // namespace
}  // namespace qwenrt::test
