// ThreadPool covers every index exactly once, for static and dynamic splits and odd sizes.
#include "base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

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
      std::atomic<int> bad_index{0};  // Catch2 assertions are not thread-safe: check afterwards
      pool.ParallelForDynamic(n, 5, [&](int64_t b, int64_t e, int t) {
        if (t < 0 || t >= threads) bad_index++;
        for (int64_t i = b; i < e; ++i) hits2[i]++;
      });
      CHECK(bad_index == 0);
      for (auto& h : hits2) CHECK(h == 1);
    }
  }
}

// Many back-to-back regions exercise the spin hand-off: a lost wake-up would hang, a worker that
// ran a stale task or missed one would break the sums.
TEST_CASE("ThreadPool stress: many consecutive regions", "[cpu]") {
  for (int threads = 1; threads <= 8; ++threads) {
    for (int spin : {0, 5, ThreadPool::kDefaultSpinMicros}) {
      ThreadPool pool(threads, spin);
      std::vector<std::atomic<int64_t>> acc(64);
      const int regions = threads <= 2 ? 20000 : 3000;
      for (int r = 0; r < regions; ++r) {
        const int64_t n = 1 + r % 64;
        if (r % 2 == 0) {
          pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) acc[i].fetch_add(r);
          });
        } else {
          pool.ParallelForDynamic(n, 3, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) acc[i].fetch_add(r);
          });
        }
      }
      for (int64_t i = 0; i < 64; ++i) {
        int64_t want = 0;
        for (int r = 0; r < regions; ++r) want += (i < 1 + r % 64) ? r : 0;
        REQUIRE(acc[i].load() == want);
      }
    }
  }
}

TEST_CASE("ThreadPool::ThreadsFor: a count as given, 0 = every hardware thread", "[cpu]") {
  // Sessions, engines and the memory estimate resolve n_threads through it.
  CHECK(ThreadPool::ThreadsFor(3) == 3);
  CHECK(ThreadPool::ThreadsFor(1) == 1);
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(ThreadPool::ThreadsFor(0) == std::max(1, hw));
}

TEST_CASE("ThreadPool auto spin is off when oversubscribed", "[cpu]") {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  if (hw > 0) {
    CHECK(ThreadPool(hw).spin_micros() == ThreadPool::kDefaultSpinMicros);
    CHECK(ThreadPool(hw + 1).spin_micros() == 0);
  }
  CHECK(ThreadPool(2, 7).spin_micros() == 7);
  CHECK(ThreadPool(2, -5).spin_micros() == 0);
}

// Regions separated by pauses longer than the spin: the workers go to sleep and must be woken.
TEST_CASE("ThreadPool wakes sleeping workers", "[cpu]") {
  ThreadPool pool(4, 20);
  for (int r = 0; r < 30; ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds(r % 3 == 0 ? 2000 : 30));
    std::atomic<int> hits{0};
    std::atomic<int> max_t{0};
    pool.ParallelFor(4, [&](int64_t b, int64_t e, int t) {
      hits += static_cast<int>(e - b);
      int m = max_t.load();
      while (t > m && !max_t.compare_exchange_weak(m, t)) {
      }
    });
    REQUIRE(hits == 4);
    REQUIRE(max_t == 3);  // the workers, not only the caller, ran their part
  }
}

// Pools created, used and destroyed inside another pool's tasks, and pools destroyed right after
// construction (workers may not even have started spinning yet).
TEST_CASE("ThreadPool nested construction and destruction", "[cpu]") {
  for (int i = 0; i < 50; ++i) ThreadPool idle(1 + i % 8);
  ThreadPool outer(3);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 10; ++round) {
    outer.ParallelFor(3, [&](int64_t, int64_t, int t) {
      ThreadPool inner(1 + (t + round) % 4);
      for (int r = 0; r < 100; ++r) {
        inner.ParallelFor(10, [&](int64_t b, int64_t e, int) { total += e - b; });
      }
    });
  }
  REQUIRE(total == 10 * 3 * 100 * 10);
}

}  // namespace
}  // namespace qwenrt
