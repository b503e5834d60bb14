// Throughput of the GDN causal conv + SiLU (ref vs cpu) at the real width C = 2*16*128 + 32*128
// = 8192, Kc = 4, for T = 1 (decode) and 512 (prefill). Args: {T, threads}. Reports tokens/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "ops/conv.h"

namespace qwenrt {
namespace {

template <bool kCpu>
void BM_CausalConvSilu(benchmark::State& st) {
  const CausalConvShape s{st.range(0), 8192, 4};
  ThreadPool pool(int(st.range(1)));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(s.T * s.C), w(s.C * s.Kc), state(s.C * (s.Kc - 1)), y(x.size());
  for (auto* v : {&x, &w, &state}) {
    for (auto& e : *v) e = normal(rng);
  }
  for (auto _ : st) {
    if constexpr (kCpu) {
      cpu::CausalConvSilu(s, x.data(), w.data(), state.data(), y.data(), pool);
    } else {
      ref::CausalConvSilu(s, x.data(), w.data(), state.data(), y.data());
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.counters["tokens/s"] =
      benchmark::Counter(double(s.T) * double(st.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK_TEMPLATE(BM_CausalConvSilu, false)
    ->Args({1, 1})
    ->Args({512, 1})
    ->ArgNames({"T", "threads"})
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_CausalConvSilu, true)
    ->Args({1, 1})
    ->Args({512, 1})
    ->Args({1, 2})
    ->Args({512, 2})
    ->ArgNames({"T", "threads"})
    ->UseRealTime();

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();
