// Engine: many ChatSession turns on one model at once (continuous batching). Each step runs one
// forward batch (ForwardBatch) holding the next token of every session that is generating and
// prefill chunks of sessions that are feeding, within a per-step token budget, so a long new prompt
// is prefilled in chunks while the others keep decoding. Turns join and leave between steps. Each
// turn is the same step machine ChatSession::Chat runs alone (ChatTurn): its sampler, constraint,
// stop rules, streaming callback, cancellation, report and errors are its own, and its logits are
// bit-identical to running alone (every op is row-independent; docs/batching.md).
//
//   QWENRT_ASSIGN_OR_RETURN(auto engine, Engine::Create(chat_model, {}));
//   QWENRT_ASSIGN_OR_RETURN(auto turn, engine->Submit(*chat, request, gen));  // any thread
//   Status st = turn->Wait();                                                  // or turn->done()
//
// Thread safety: Submit, Cancel and EngineTurn's methods may be called from any thread. With
// EngineParams::worker (the default) a thread of the engine runs the steps; without it the host
// calls Step() (one thread at a time). A submitted session is busy (its own calls are refused, as
// while Chat runs) until its turn is done; it must outlive the turn. Streaming callbacks run on the
// thread that runs the steps, one at a time; a callback must not call into its own session (it is
// busy) and must not wait for another turn of the same engine.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "model/forward.h"

namespace qwenrt {

struct EngineParams {
  // The backend the engine batches on, and that its sessions must run on: kCpu or kRef (kCuda:
  // Engine::Create returns UNSUPPORTED, CheckBatching in model/backend_choice.h).
  BackendKind backend = BackendKind::kCpu;
  int n_threads = 0;          // workers of the engine's ThreadPool; 0 = hardware concurrency
  int64_t step_tokens = 512;  // token budget of one step (decode tokens + prefill chunks)
  int64_t max_sessions = 16;  // most turns in one step; more wait for a free place
  bool worker = true;         // a thread of the engine runs the steps; false: the host calls Step()
};

// One submitted turn. Shared by the host and the engine; the host may drop it at any time.
class EngineTurn {
 public:
  // Blocks until the turn is done; returns what ChatSession::Chat would have returned.
  Status Wait();
  bool done() const;
  Status status() const;  // OK until done
  ChatSession& session() const { return *chat_; }

 private:
  friend class Engine;
  explicit EngineTurn(ChatSession* chat) : chat_(chat) {}
  ChatSession* chat_;
  std::function<void()> on_done_;
  Status error_;   // an exception interrupted the turn (stepping thread only)
  ChatTurn turn_;  // touched only by the thread running the steps (and Submit, before queueing)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  Status status_;      // guarded by mu_
};

class Engine {
 public:
  // The engine runs on params.backend. Errors: InvalidArgument (null model, bad params),
  // Unsupported (a backend that does not batch: CheckBatching, model/backend_choice.h),
  // OutOfMemory.
  static StatusOr<std::unique_ptr<Engine>> Create(std::shared_ptr<const ChatModel> model,
                                                  const EngineParams& params);
  // Cancels the turns still running and finishes them (their sessions stay usable).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts a Chat turn of `chat` (same model, the engine's backend, split_invariant): plans it and
  // takes the session's busy flag now, on the caller's thread; the steps run it. Errors (nothing
  // queued, the session unchanged): Chat's up-front ones (busy, bad sampling parameters, the
  // planner's), InvalidArgument (another model or backend, a session that is not split_invariant,
  // the engine is shutting down).
  // `on_done` (may be null) runs on the stepping thread once the turn has ended and nothing of the
  // engine touches the session any more, just before waiters are woken (the C ABI releases its
  // session handle there).
  StatusOr<std::shared_ptr<EngineTurn>> Submit(ChatSession& chat, const ChatRequest& request,
                                               const GenerateRequest& gen,
                                               std::function<void()> on_done = nullptr);
  // The same turn on raw tokens (ChatSession::BeginTokens: FeedTokens + Generate).
  StatusOr<std::shared_ptr<EngineTurn>> SubmitTokens(ChatSession& chat,
                                                     std::span<const int32_t> tokens,
                                                     const GenerateRequest& gen,
                                                     std::function<void()> on_done = nullptr);
  // Asks the turn's session to stop (ChatSession::Cancel): the turn ends Cancelled at its next
  // step; the other turns go on.
  void Cancel(const EngineTurn& turn) { turn.chat_->Cancel(); }

  // Runs one step: admits queued turns, runs one forward batch, finishes the turns that ended.
  // Returns the number of turns still running or queued. Only without a worker; one thread.
  int64_t Step();
  // Steps until no turn is left. Only without a worker.
  void RunUntilIdle();

  int64_t active() const;                         // turns running or queued
  size_t bytes() const { return ctx_->bytes(); }  // the engine's scratch
  const EngineParams& params() const { return params_; }

 private:
  Engine(std::shared_ptr<const ChatModel> model, const EngineParams& params)
      : model_(std::move(model)), params_(params) {}
  int64_t StepLocked();  // Step's body; step_mu_ held
  // Submit's checks of the session, then `begin` starts the turn, then the queue.
  template <typename Begin>
  StatusOr<std::shared_ptr<EngineTurn>> Enqueue(ChatSession& chat, Begin begin,
                                                std::function<void()> on_done);
  void Finish(EngineTurn& t);
  Status EndTurn(EngineTurn& t);
  template <typename Fn>
  bool Guarded(EngineTurn& t, Fn fn);
  void WorkerLoop();

  std::shared_ptr<const ChatModel> model_;
  EngineParams params_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ForwardContext> ctx_;

  mutable std::mutex mu_;  // guards queue_, n_active_, stopping_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<EngineTurn>> queue_;  // submitted, not yet admitted
  int64_t n_active_ = 0;                           // admitted + queued
  bool stopping_ = false;

  std::mutex step_mu_;                                // one step at a time
  std::vector<std::shared_ptr<EngineTurn>> running_;  // admitted, in admission order
  std::vector<EngineTurn*> order_;                    // [max_sessions] the step's asking order
  std::vector<SessionPiece> pieces_;                  // [max_sessions] of the current step
  std::vector<EngineTurn*> piece_turns_;              // [max_sessions] whose piece each is
  std::vector<SequenceStep> steps_;                   // [max_sessions] ForwardBatch's steps
  std::thread worker_;
};

}  // namespace qwenrt
