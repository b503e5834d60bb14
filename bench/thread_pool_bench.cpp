// Overhead of one ThreadPool parallel region (fork + join) with an almost empty body, the cost a
// decoded token pays ~150 times. Args: {threads, spin_micros}; spin 0 is the plain condvar pool
// (the behaviour before the spin-wait), the default spin is ThreadPool::kDefaultSpinMicros.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

#include "base/thread_pool.h"

namespace qwenrt {
namespace {

void BM_RegionOverhead(benchmark::State& st) {
  ThreadPool pool(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  std::atomic<int64_t> sink{0};
  const std::function<void(int64_t, int64_t, int)> body = [&](int64_t b, int64_t e, int) {
    sink.fetch_add(e - b, std::memory_order_relaxed);
  };
  for (auto _ : st) pool.ParallelFor(1024, body);
  benchmark::DoNotOptimize(sink.load());
  st.counters["regions/s"] =
      benchmark::Counter(double(st.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RegionOverhead)
    ->ArgNames({"threads", "spin_us"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, ThreadPool::kDefaultSpinMicros})
    ->Args({4, 0})
    ->Args({4, ThreadPool::kDefaultSpinMicros})
    ->Args({4, ThreadPool::kAutoSpin})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Regions separated by ~20 µs of single-threaded work (a norm or an add between two matmuls):
// the gap the spin is sized to bridge.
void BM_RegionWithSerialGap(benchmark::State& st) {
  ThreadPool pool(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  std::atomic<int64_t> sink{0};
  const std::function<void(int64_t, int64_t, int)> body = [&](int64_t b, int64_t e, int) {
    sink.fetch_add(e - b, std::memory_order_relaxed);
  };
  volatile float x = 1.0f;
  for (auto _ : st) {
    for (int i = 0; i < 20000; ++i) x = x * 1.0000001f;  // ~20 µs serial
    pool.ParallelFor(1024, body);
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_RegionWithSerialGap)
    ->ArgNames({"threads", "spin_us"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, ThreadPool::kDefaultSpinMicros})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();
