// Golden logits: every fixture model x both token files, on the reference and the CPU path, against
// llama.cpp's exact-math logits (tests/data/logits/*.exact.f32; see tests/data/README.md).
// Reference path: max|Δ| <= 1e-3 · max|exact|. CPU path: the same bound, or, since it quantizes
// activations to Q8_K for K-quant weights like llama.cpp does, the fast-path bar: mean|Δ|/std at
// most 1.25x llama.cpp's own figure and top-1 agreement at least llama.cpp's (both measured here
// from the llama.cpp's logits, *.peer.f32, so no rounded table value is trusted).
#include <catch2/catch.hpp>
#include <cstring>

#include "model_test_util.h"

namespace qwenrt::test {
namespace {

void CheckGolden(const std::string& model_name, const std::string& seq, BackendKind kind) {
  auto model = LoadFixture(model_name);
  const int64_t V = model->config().n_vocab;
  const auto tokens = ReadTokens("tokens/" + seq + ".txt");
  const auto exact = ReadF32("logits/" + model_name + "." + seq + ".exact.f32");
  REQUIRE(exact.size() == tokens.size() * static_cast<size_t>(V));

  Runner r(model, kind);
  const auto logits = r.Run(tokens);
  const Distance d = Compare(logits, exact, V);
  const std::string what = model_name + " " + seq + " " + BackendName(kind);
  INFO(what);
  WARN(what << ": max|d|/max|exact| = " << d.max_rel << ", mean|d|/std = " << d.mean_over_std
            << ", top-1 = " << d.top1);
  if (kind == BackendKind::kRef || d.max_rel <= 1e-3) {
    CHECK(d.max_rel <= 1e-3);
    return;
  }
  const auto peer = ReadF32("logits/" + model_name + "." + seq + ".peer.f32");
  REQUIRE(peer.size() == exact.size());  // no peer run: the CPU path must meet the exact bound
  const Distance p = Compare(peer, exact, V);
  WARN(what << ": peer mean|d|/std = " << p.mean_over_std << ", top-1 = " << p.top1
            << " (bar: mean/std <= " << 1.25 * p.mean_over_std << ")");
  CHECK(d.mean_over_std <= 1.25 * p.mean_over_std);
  CHECK(d.top1 >= p.top1);
}

TEST_CASE("golden logits, reference path", "[golden][ref]") {
  for (const char* m : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    for (const char* s : {"seqA", "seqB"}) CheckGolden(m, s, BackendKind::kRef);
  }
}

TEST_CASE("golden logits, CPU path", "[golden][cpu]") {
  for (const char* m : {"micro-s1-f32", "tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    for (const char* s : {"seqA", "seqB"}) CheckGolden(m, s, BackendKind::kCpu);
  }
}

}  // namespace
}  // namespace qwenrt::test
