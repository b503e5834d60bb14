// What the opaque C handles are: `qwenrt_model` wraps the shared ChatModel (the immutable Model
// plus its tokenizer and chat template); `qwenrt_session` wraps a ChatSession, the one chat
// engine of the core, plus the handle's lifetime bookkeeping; `qwenrt_engine` wraps the batching
// Engine (src/chat/engine.h). No chat logic lives here.
#pragma once

#include <memory>
#include <thread>

#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "chat/engine.h"
#include "qwenrt/qwenrt.h"

struct qwenrt_model {
  std::shared_ptr<const qwenrt::ChatModel> model;
};

struct qwenrt_constraint {
  std::shared_ptr<const qwenrt::Grammar> grammar;  // immutable: shared by every generation using it
};

struct qwenrt_session {
  std::shared_ptr<const qwenrt::ChatModel> model;
  std::unique_ptr<qwenrt::ChatSession> chat;
  qwenrt_session_params params{};  // as created (n_ctx, history mode, log callback, ...)
  // Generation options set on the session (converted into each GenerateRequest).
  std::shared_ptr<const qwenrt::Grammar> constraint;
  int32_t max_reasoning_tokens = 0;
  qwenrt::ToolChoice tool_choice;
  // Guarded by the handle registry's lock (handle_registry.h). Calls running on this handle, the
  // thread running them (a call from another thread meanwhile is refused), and a free requested
  // while they ran (from inside a callback): the last call to leave deletes the handle.
  mutable int calls = 0;
  mutable std::thread::id owner;
  mutable bool free_pending = false;
  // The turn submitted to an engine and not yet collected (qwenrt_session_wait_turn); guarded by
  // the registry lock. While it runs it counts as one call owned by no thread (every other
  // thread's call is refused as busy), released when the engine is done with the session.
  std::shared_ptr<qwenrt::EngineTurn> turn;
};

struct qwenrt_engine {
  std::shared_ptr<const qwenrt::ChatModel> model;
  std::unique_ptr<qwenrt::Engine> engine;
};
