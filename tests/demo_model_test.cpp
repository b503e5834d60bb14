// NOT BUILT YET: goes to tests/ with the shipped model (see tools/demo-model/README.md,
// "Shipping"). The trained demo model (tests/data/demo-f32.gguf, made by tools/demo-model/make.py)
// against transformers, which trained it: logits of held-out conversations within 1e-3 (absolute;
// f32 file) on the reference and the CPU path, and the perplexity of that text within 0.5%. The
// token file and transformers' logits come from tools/demo-model/check_qwenrt.py --export.
#include <catch2/catch.hpp>
#include <cmath>

#include "model_test_util.h"

namespace qwenrt::test {
namespace {

// exp(mean NLL of tokens[1..T-1]) under logits [T, V].
double Perplexity(const std::vector<float>& logits, const std::vector<int32_t>& tokens, int64_t V) {
  double nll = 0;
  const size_t T = tokens.size();
  for (size_t t = 0; t + 1 < T; ++t) {
    const float* row = logits.data() + t * static_cast<size_t>(V);
    double mx = row[0];
    for (int64_t v = 1; v < V; ++v) mx = std::max<double>(mx, row[v]);
    double s = 0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(row[v] - mx);
    nll += mx + std::log(s) - row[tokens[t + 1]];
  }
  return std::exp(nll / static_cast<double>(T - 1));
}

void CheckDemo(BackendKind kind) {
  auto model = LoadFixture("demo-f32");
  const int64_t V = model->config().n_vocab;
  const auto tokens = ReadTokens("tokens/demo-heldout.txt");
  const auto hf = ReadF32("logits/demo-f32.heldout.hf.f32");
  REQUIRE(!tokens.empty());
  REQUIRE(hf.size() == tokens.size() * static_cast<size_t>(V));
  Runner r(model, kind);
  const auto logits = r.Run(tokens);
  double max_abs = 0;
  for (size_t i = 0; i < hf.size(); ++i)
    max_abs = std::max<double>(max_abs, std::fabs(logits[i] - hf[i]));
  const double ppl = Perplexity(logits, tokens, V), ppl_hf = Perplexity(hf, tokens, V);
  const Distance d = Compare(logits, hf, V);
  INFO(BackendName(kind));
  WARN(BackendName(kind) << ": max|d| = " << max_abs << ", top-1 = " << d.top1 << ", perplexity "
                         << ppl << " vs transformers " << ppl_hf);
  CHECK(max_abs <= 1e-3);
  CHECK(d.top1 >= 0.98);  // a near-tie may flip within the 1e-3 bound
  CHECK(std::fabs(ppl - ppl_hf) <= 0.005 * ppl_hf);
}

TEST_CASE("demo model vs transformers, reference path", "[demo][ref]") {
  CheckDemo(BackendKind::kRef);
}

TEST_CASE("demo model vs transformers, CPU path", "[demo][cpu]") { CheckDemo(BackendKind::kCpu); }

}  // namespace
}  // namespace qwenrt::test
