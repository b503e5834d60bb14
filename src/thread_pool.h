// A small fork-join thread pool. It is passed in to whatever needs threads (never a global): a
// Session owns one, and every CPU op that parallelises takes a `ThreadPool&`.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qwenrt {

class ThreadPool {
 public:
  // `n_threads` total workers including the calling thread (so 1 means "run inline").
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Splits [0, n) into at most size() contiguous ranges and runs fn(begin, end, thread_index) on
  // each, the caller taking part; returns when all are done. Calls must not nest. fn must not throw.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn);

  // As ParallelFor, but hands out `grain`-sized pieces dynamically (for uneven work such as MoE).
  void ParallelForDynamic(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int)>& fn);

 private:
  void WorkerLoop(int index);
  void Run(int n_tasks, const std::function<void(int)>& task);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* task_ = nullptr;  // valid while a Run is in progress
  int n_tasks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace qwenrt
