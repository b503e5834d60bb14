// ThreadPool covers every index exactly once, for static and dynamic splits and odd sizes.
#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

#include "thread_pool.h"

namespace qwenrt {
namespace {

TEST_CASE("ParallelFor visits each index once", "[cpu]") {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 63, 500}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (auto& h : hits) CHECK(h == 1);
      std::vector<std::atomic<int>> hits2(n);
      pool.ParallelForDynamic(n, 5, [&](int64_t b, int64_t e, int t) {
        CHECK(t < threads);
        for (int64_t i = b; i < e; ++i) hits2[i]++;
      });
      for (auto& h : hits2) CHECK(h == 1);
    }
  }
}

}  // namespace
}  // namespace qwenrt
