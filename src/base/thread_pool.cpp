// ThreadPool: a region hands task indices 1..n-1 to the workers while the caller runs index 0.
// Hand-off is an atomic generation counter; waiting is a bounded spin, then a condition variable.
//
// Lost-wakeup argument (both sides use seq_cst): a worker about to sleep increments
// sleeping_workers_ and then re-reads generation_ under mu_; the caller bumps generation_ and then
// reads sleeping_workers_. In the single total order one of them sees the other's write, so
// either the worker does not sleep or the caller takes mu_ and notifies. The same pattern guards
// the caller sleeping on done_cv_ (caller_sleeping_ vs. pending_).
#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace qwenrt {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() is true or `micros` have passed; true when done() became true. The clock is
// read every 64 iterations only, and the thread yields now and then so that a spinning thread does
// not starve the one it waits for when there are more threads than cores.
template <typename Done>
bool SpinUntil(int micros, Done done) {
  if (micros <= 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    CpuRelax();
    if ((i & 63) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return done();
      if ((i & 1023) == 0) std::this_thread::yield();
    }
  }
}

}  // namespace

int ThreadPool::ThreadsFor(int n_threads) {
  return n_threads > 0 ? n_threads
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int n_threads, int spin_micros) : n_threads_(std::max(1, n_threads)) {
  if (spin_micros == kAutoSpin) {
    const unsigned hw = std::thread::hardware_concurrency();
    spin_micros = (hw != 0 && static_cast<unsigned>(n_threads_) > hw) ? 0 : kDefaultSpinMicros;
  }
  spin_micros_ = std::max(0, spin_micros);
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker between its check and wait() holds mu_
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] { return stop_.load() || generation_.load() != seen; };
    if (!SpinUntil(spin_micros_, ready)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_workers_.fetch_add(1);
      start_cv_.wait(lock, ready);
      sleeping_workers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    // task_/n_tasks_ were written before the generation bump we just observed.
    if (index < n_tasks_) (*task_)(index);
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::Run(int n_tasks, const std::function<void(int)>& task) {
  if (n_tasks <= 1 || workers_.empty()) {
    for (int i = 0; i < n_tasks; ++i) task(i);
    return;
  }
  task_ = &task;
  n_tasks_ = n_tasks;
  pending_.store(static_cast<int>(workers_.size()));
  generation_.fetch_add(1);
  if (sleeping_workers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    start_cv_.notify_all();
  }
  task(0);
  auto done = [&] { return pending_.load() == 0; };
  if (!SpinUntil(spin_micros_, done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_.store(true);
    done_cv_.wait(lock, done);
    caller_sleeping_.store(false);
  }
  task_ = nullptr;
}

// The lambdas handed to Run capture one pointer only: std::function stores a capture of up to 16
// bytes in place, so a dispatch does not allocate (a [&] lambda over several locals would, once
// per call, i.e. per token in the forward pass).
void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  struct Ctx {
    int64_t n;
    int parts;
    const std::function<void(int64_t, int64_t, int)>* fn;
  } ctx{n, static_cast<int>(std::min<int64_t>(n, n_threads_)), &fn};
  Run(ctx.parts, [c = &ctx](int t) {
    const int64_t begin = c->n * t / c->parts, end = c->n * (t + 1) / c->parts;
    if (begin < end) (*c->fn)(begin, end, t);
  });
}

void ThreadPool::ParallelForDynamic(int64_t n, int64_t grain,
                                    const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  struct Ctx {
    int64_t n, grain;
    std::atomic<int64_t> next{0};
    const std::function<void(int64_t, int64_t, int)>* fn;
  } ctx{n, std::max<int64_t>(1, grain), {}, &fn};
  const int parts =
      static_cast<int>(std::min<int64_t>((n + ctx.grain - 1) / ctx.grain, n_threads_));
  Run(parts, [c = &ctx](int t) {
    for (int64_t begin; (begin = c->next.fetch_add(c->grain)) < c->n;) {
      (*c->fn)(begin, std::min(c->n, begin + c->grain), t);
    }
  });
}

}  // namespace qwenrt
