// Threads the CPU benchmarks run with: QWENRT_BENCH_THREADS, else every hardware thread.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace qwenrt {

inline int BenchThreads() {
  if (const char* env = std::getenv("QWENRT_BENCH_THREADS")) return std::max(1, std::atoi(env));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace qwenrt
