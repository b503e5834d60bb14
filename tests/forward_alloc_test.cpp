// "No per-token heap allocation": once a ForwardContext has run (scratch, thread-local matmul and
// delta-rule buffers grown), decoding more tokens and prefilling more ubatches of the same size
// allocate nothing, on both paths, as long as the KV cache does not have to grow.
#include <catch2/catch.hpp>

#include "alloc_counter.h"
#include "model_test_util.h"

namespace qwenrt::test {
namespace {

TEST_CASE("steady-state Forward does not allocate", "[ref][cpu]") {
  for (const char* m : {"tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    auto model = LoadFixture(m);
    const int64_t V = model->config().n_vocab;
    const auto seq = ReadTokens("tokens/seqA.txt");
    for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
      INFO(m << " " << BackendName(kind));
      ThreadPool pool(2);
      auto ctx = ForwardContext::Create(*model, kind, &pool).value();
      auto kv = KvCache::Create(model->config(), 0, 256).value();
      auto rec = RecurrentState::Create(model->config()).value();
      std::vector<float> logits(32 * V);
      // Warm-up: one prefill ubatch of 32 and one decode step.
      REQUIRE(Forward(*ctx, kv, rec, std::span(seq.data(), 32), true, logits.data()).ok());
      REQUIRE(Forward(*ctx, kv, rec, std::span(seq.data() + 32, 1), false, logits.data()).ok());

      const long before = g_allocations.load();
      for (int i = 0; i < 10; ++i) {
        REQUIRE(
            Forward(*ctx, kv, rec, std::span(seq.data() + 33 + i, 1), false, logits.data()).ok());
      }
      REQUIRE(Forward(*ctx, kv, rec, std::span(seq.data() + 43, 32), true, logits.data()).ok());
      CHECK(g_allocations.load() - before == 0);
    }
  }
}

}  // namespace
}  // namespace qwenrt::test
