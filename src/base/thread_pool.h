// A small fork-join thread pool. It is passed in to whatever needs threads (never a global): a
// Session owns one, and every CPU op that parallelises takes a `ThreadPool&`.
//
// A decoded token runs ~150 parallel regions, so waking a sleeping worker (a futex round trip,
// tens of µs) per region would dominate small matmuls. Workers therefore spin on an atomic
// generation counter for a bounded time after each region and only then fall back to a
// condition variable; the caller likewise spins briefly for the workers to finish.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qwenrt {

class ThreadPool {
 public:
  // How long an idle worker (or the waiting caller) spins before sleeping, by default.
  static constexpr int kDefaultSpinMicros = 100;
  static constexpr int kAutoSpin = -1;

  // `n_threads` total workers including the calling thread (so 1 means "run inline").
  // `spin_micros` bounds the busy wait between regions (0: sleep at once, as a plain condvar pool).
  // kAutoSpin: kDefaultSpinMicros, or 0 when n_threads exceeds the hardware threads (spinning
  // threads then steal the cores the working ones need: 4 threads on 2 cores measured slower).
  explicit ThreadPool(int n_threads, int spin_micros = kAutoSpin);
  // The workers a session or engine starts for a requested count: `n_threads`, or every hardware
  // thread when it is 0 (at least 1). One place, so the memory estimate sizes per-thread scratch
  // for the pool the session will really have.
  static int ThreadsFor(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  int spin_micros() const { return spin_micros_; }

  // Splits [0, n) into at most size() contiguous ranges and runs fn(begin, end, thread_index) on
  // each, the caller taking part; returns when all are done. Calls must not nest. fn must not
  // throw.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn);

  // As ParallelFor, but hands out `grain`-sized pieces dynamically (for uneven work such as MoE).
  void ParallelForDynamic(int64_t n, int64_t grain,
                          const std::function<void(int64_t, int64_t, int)>& fn);

 private:
  void WorkerLoop(int index);
  void Run(int n_tasks, const std::function<void(int)>& task);

  int n_threads_;
  int spin_micros_;
  std::vector<std::thread> workers_;

  // Published by the caller before `generation_` is bumped; read by workers after they see it.
  const std::function<void(int)>* task_ = nullptr;
  int n_tasks_ = 0;

  std::atomic<uint64_t> generation_{0};  // bumped once per region (seq_cst: see Run)
  std::atomic<int> pending_{0};          // workers yet to finish the current region
  std::atomic<bool> stop_{false};
  std::atomic<int> sleeping_workers_{0};  // workers blocked (or about to block) on start_cv_
  std::atomic<bool> caller_sleeping_{false};

  std::mutex mu_;  // only for the condition variables (the slow path)
  std::condition_variable start_cv_, done_cv_;
};

}  // namespace qwenrt
