// The batching engine (engine.h): admission, the step's piece collection under the token budget,
// one forward batch, and the turns' completion.
#include "chat/engine.h"

#include <algorithm>
#include <new>

#include "base/guard_alloc.h"
#include "model/backend_choice.h"

namespace qwenrt {

Status EngineTurn::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return status_;
}

bool EngineTurn::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status EngineTurn::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

StatusOr<std::unique_ptr<Engine>> Engine::Create(std::shared_ptr<const ChatModel> model,
                                                 const EngineParams& params) {
  if (model == nullptr) return InvalidArgument("Engine: model is null");
  if (params.n_threads < 0) return InvalidArgument("Engine: n_threads must be >= 0");
  if (params.step_tokens < 1) {
    return InvalidArgument("Engine: step_tokens must be >= 1, got {}", params.step_tokens);
  }
  if (params.max_sessions < 1) {
    return InvalidArgument("Engine: max_sessions must be >= 1, got {}", params.max_sessions);
  }
  QWENRT_RETURN_IF_ERROR(CheckBatching(params.backend));
  std::unique_ptr<Engine> e(new (std::nothrow) Engine(model, params));
  if (e == nullptr) return OutOfMemory("Engine: allocation failed");
  const int n = ThreadPool::ThreadsFor(params.n_threads);
  const size_t m = static_cast<size_t>(params.max_sessions);
  try {
    e->pool_ = std::make_unique<ThreadPool>(n);
    e->running_.reserve(m);
    e->order_.reserve(m);
    e->pieces_.resize(m);
    e->piece_turns_.resize(m);
    e->steps_.resize(m);
  } catch (const std::exception& x) {
    return OutOfMemory("Engine: cannot start: {}", x.what());
  }
  ForwardContext::Options fo;
  fo.max_ubatch = params.step_tokens;
  fo.max_sequences = params.max_sessions;
  // Results independent of how a prompt is cut into pieces: a turn's chunks depend on the others.
  fo.backend.gdn_chunk_min_tokens = INT64_MAX;
  QWENRT_ASSIGN_OR_RETURN(
      e->ctx_, ForwardContext::Create(*model->model(), params.backend, e->pool_.get(), fo));
  if (params.worker) {
    try {
      e->worker_ = std::thread(&Engine::WorkerLoop, e.get());
    } catch (const std::exception& x) {
      return OutOfMemory("Engine: cannot start its worker thread: {}", x.what());
    }
  }
  return e;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // Finish what is left, cancelled: each session keeps the consistent state of its last step.
  std::lock_guard<std::mutex> step(step_mu_);
  std::vector<std::shared_ptr<EngineTurn>> left = std::move(running_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.insert(left.end(), queue_.begin(), queue_.end());
    queue_.clear();
  }
  for (const std::shared_ptr<EngineTurn>& t : left) {
    Status st = EndTurn(*t);
    if (st.ok()) st = Cancelled("the engine shut down before the turn ended");
    if (t->on_done_) t->on_done_();
    std::lock_guard<std::mutex> lock(t->mu_);
    t->done_ = true;
    t->status_ = st;
    t->cv_.notify_all();
  }
}

StatusOr<std::shared_ptr<EngineTurn>> Engine::Submit(ChatSession& chat, const ChatRequest& request,
                                                     const GenerateRequest& gen,
                                                     std::function<void()> on_done) {
  return Enqueue(
      chat, [&](ChatTurn* t) { return chat.BeginChat(request, gen, t); }, std::move(on_done));
}

StatusOr<std::shared_ptr<EngineTurn>> Engine::SubmitTokens(ChatSession& chat,
                                                           std::span<const int32_t> tokens,
                                                           const GenerateRequest& gen,
                                                           std::function<void()> on_done) {
  return Enqueue(
      chat, [&](ChatTurn* t) { return chat.BeginTokens(tokens, gen, t); }, std::move(on_done));
}

template <typename Begin>
StatusOr<std::shared_ptr<EngineTurn>> Engine::Enqueue(ChatSession& chat, Begin begin,
                                                      std::function<void()> on_done) {
  const SessionParams& sp = chat.session().params();
  if (chat.model().model().get() != model_->model().get()) {
    return InvalidArgument("Engine::Submit: the session was made for another model");
  }
  if (sp.backend != params_.backend) {
    return InvalidArgument("Engine::Submit: the engine batches {} sessions, this one runs on {}",
                           BackendName(params_.backend), BackendName(sp.backend));
  }
  if (chat.params().max_draft > 0) {
    return Unsupported(
        "Engine::Submit: the session speculates (max_draft {}); a verify pass is not one of the "
        "engine's pieces yet, so it runs alone (ChatSession::Chat)",
        chat.params().max_draft);
  }
  if (!sp.split_invariant) {
    return InvalidArgument(
        "Engine::Submit: the session is not split_invariant (its results would depend on the "
        "batch)");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return InvalidArgument("Engine::Submit: the engine is shutting down");
  }
  std::shared_ptr<EngineTurn> t;
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc([&] { t.reset(new EngineTurn(&chat)); }, "Engine::Submit: allocation failed"));
  QWENRT_RETURN_IF_ERROR(begin(&t->turn_));
  t->on_done_ = std::move(on_done);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(t);
    ++n_active_;
  }
  cv_.notify_all();
  return t;
}

int64_t Engine::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_active_;
}

// Ends the turn (EndChat), also one that an exception interrupted: the session is consistent
// after every piece, and the turn's status is then that error.
Status Engine::EndTurn(EngineTurn& t) {
  Status st;
  try {
    st = t.chat_->EndChat(t.turn_);
  } catch (const std::bad_alloc&) {
    st = OutOfMemory("out of memory ending the turn");
  } catch (const std::exception& e) {
    st = InternalError("ending the turn: {}", e.what());
  }
  t.chat_->ReleaseBusy(t.turn_);
  return t.error_.ok() ? st : t.error_;
}

void Engine::Finish(EngineTurn& t) {
  const Status st = EndTurn(t);
  if (t.on_done_) t.on_done_();
  {
    std::lock_guard<std::mutex> lock(t.mu_);
    t.done_ = true;
    t.status_ = st;
  }
  t.cv_.notify_all();
  std::lock_guard<std::mutex> lock(mu_);
  --n_active_;
}

// Runs one of a turn's step calls; an exception (bad_alloc in a callback, the stream, the
// sampler) fails that turn only.
template <typename Fn>
bool Engine::Guarded(EngineTurn& t, Fn fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    t.error_ = OutOfMemory("out of memory in the turn's step");
  } catch (const std::exception& e) {
    t.error_ = InternalError("the turn's step failed: {}", e.what());
  }
  return false;
}

int64_t Engine::Step() {
  std::lock_guard<std::mutex> step(step_mu_);
  return StepLocked();
}

void Engine::RunUntilIdle() {
  while (Step() > 0) {
  }
}

int64_t Engine::StepLocked() {
  const size_t max = static_cast<size_t>(params_.max_sessions);
  {  // join: queued turns take the free places, oldest first
    std::lock_guard<std::mutex> lock(mu_);
    while (!queue_.empty() && running_.size() < max) {
      running_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  // Decoding turns first (one token each), then prefill chunks in admission order with what is
  // left of the budget: a long prompt never holds up the sessions that are generating.
  std::vector<EngineTurn*>& order = order_;
  order.clear();
  for (const auto& t : running_)
    if (!ChatSession::InFeed(t->turn_)) order.push_back(t.get());
  for (const auto& t : running_)
    if (ChatSession::InFeed(t->turn_)) order.push_back(t.get());
  int64_t budget = params_.step_tokens;
  size_t n = 0;
  bool finished = false;
  for (EngineTurn* t : order) {
    if (budget <= 0) break;
    SessionPiece& piece = pieces_[n];
    if (t->error_.ok() &&
        Guarded(*t, [&] { return t->chat_->NextPiece(t->turn_, budget, &piece); })) {
      piece_turns_[n++] = t;
      budget -= static_cast<int64_t>(piece.tokens.size());
    } else {
      Finish(*t);  // leave: done (or failed, or cancelled) before this step
      finished = true;
    }
  }
  if (n > 0) {
    Session::RunBatch(*ctx_, std::span<SessionPiece>(pieces_.data(), n), steps_);
    for (size_t i = 0; i < n; ++i)
      piece_turns_[i]->chat_->PieceDone(piece_turns_[i]->turn_, pieces_[i]);
  }
  if (finished) {
    std::erase_if(running_, [](const std::shared_ptr<EngineTurn>& t) { return t->done(); });
  }
  return active();
}

void Engine::WorkerLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || n_active_ > 0; });
      if (stopping_) return;
    }
    Step();
  }
}

}  // namespace qwenrt
