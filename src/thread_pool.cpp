// ThreadPool: workers sleep on a condition variable between parallel regions; a region hands
// task indices 1..n-1 to the workers while the caller runs index 0.
#include "thread_pool.h"

#include <algorithm>
#include <atomic>

namespace qwenrt {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task;
    int n_tasks;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
      n_tasks = n_tasks_;
    }
    if (index < n_tasks) (*task)(index);
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ThreadPool::Run(int n_tasks, const std::function<void(int)>& task) {
  if (n_tasks <= 1 || workers_.empty()) {
    for (int i = 0; i < n_tasks; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    n_tasks_ = n_tasks;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  task(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
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
