// Throughput of the three gated-delta forms (ref, cpu recurrent, cpu chunk) at the real Qwen3.5
// GDN head shape (Hk = 16, Hv = 16 or 32, Dk = Dv = 128), for T = 1 (decode), 64 and 512 (prefill).
// Reports tokens/s for one layer. Args: {T, Hv, threads}.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "ops/gated_delta.h"

namespace qwenrt {
namespace {

enum class Form { kRef, kRecurrent, kChunk };

template <Form kForm>
void BM_GatedDelta(benchmark::State& st) {
  const GatedDeltaShape s{st.range(0), 16, st.range(1), 128, 128};
  ThreadPool pool(int(st.range(2)));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<float> q(s.T * s.Hk * s.Dk), k(q.size()), v(s.T * s.Hv * s.Dv), g(s.T * s.Hv),
      beta(g.size()), state(s.Hv * s.Dv * s.Dk), out(v.size());
  for (std::vector<float>* x : {&q, &k}) {
    for (int64_t row = 0; row < s.T * s.Hk; ++row) {
      float ss = 0;
      for (int64_t i = 0; i < s.Dk; ++i) ss += std::pow((*x)[row * s.Dk + i] = normal(rng), 2.0f);
      for (int64_t i = 0; i < s.Dk; ++i) (*x)[row * s.Dk + i] /= std::sqrt(ss);
    }
  }
  for (auto& x : q) x /= std::sqrt(float(s.Dk));
  for (auto& x : v) x = normal(rng);
  for (auto& x : g) x = -2.0f * uni(rng);
  for (auto& x : beta) x = uni(rng);
  for (auto& x : state) x = normal(rng) * 0.1f;
  for (auto _ : st) {
    if constexpr (kForm == Form::kRef) {
      ref::GatedDelta(s, q.data(), k.data(), v.data(), g.data(), beta.data(), state.data(),
                      out.data());
    } else if constexpr (kForm == Form::kRecurrent) {
      cpu::GatedDeltaRecurrent(s, q.data(), k.data(), v.data(), g.data(), beta.data(), state.data(),
                               out.data(), pool);
    } else {
      cpu::GatedDeltaChunk(s, q.data(), k.data(), v.data(), g.data(), beta.data(), state.data(),
                           out.data(), pool);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["tokens/s"] =
      benchmark::Counter(double(s.T) * double(st.iterations()), benchmark::Counter::kIsRate);
  // Flops of the recurrence (3 Dk*Dv multiply-adds per token per head), for a rough GFLOP/s.
  st.counters["GFLOP/s"] = benchmark::Counter(
      6.0 * s.Dk * s.Dv * s.Hv * s.T * double(st.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"T", "Hv", "threads"});
  for (int64_t threads : {1, 2}) {
    for (int64_t T : {1, 16, 32, 64, 512}) b->Args({T, 16, threads});
    b->Args({512, 32, threads});
  }
  b->UseRealTime();
}

BENCHMARK_TEMPLATE(BM_GatedDelta, Form::kRef)
    ->Args({1, 16, 1})
    ->Args({64, 16, 1})
    ->Args({512, 16, 1})
    ->ArgNames({"T", "Hv", "threads"})
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_GatedDelta, Form::kRecurrent)->Apply(Args);
BENCHMARK_TEMPLATE(BM_GatedDelta, Form::kChunk)->Apply(Args);

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();
