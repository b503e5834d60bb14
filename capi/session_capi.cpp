// C ABI shims for `qwenrt_session`: create / free / reset, feed tokens, logits, the per-step
// report, checkpoint control, fork, save / load, cancel — each converts its arguments and calls the
// core's ChatSession (src/chat/chat_session.h). Chat feeding and generation are in chat_capi.cpp.
#include "session_capi.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "guard.h"
#include "handle_registry.h"
#include "handles.h"
#include "model/backend_choice.h"
#include "params.h"
#include "qwenrt/qwenrt.h"
#include "validate.h"

namespace qwenrt::capi {
namespace {

Status ReadSessionParams(const qwenrt_session_params* in, qwenrt_session_params* out) {
  QWENRT_RETURN_IF_ERROR(ReadParams(
      in, DefaultSessionParams(), out,
      {QWENRT_FIELD(qwenrt_session_params, n_ctx), QWENRT_FIELD(qwenrt_session_params, n_threads),
       QWENRT_FIELD(qwenrt_session_params, backend),
       QWENRT_FIELD(qwenrt_session_params, checkpoint_budget),
       QWENRT_FIELD(qwenrt_session_params, checkpoint_interval),
       QWENRT_FIELD(qwenrt_session_params, history_mode),
       QWENRT_FIELD(qwenrt_session_params, log_callback),
       QWENRT_FIELD(qwenrt_session_params, log_user_data),
       QWENRT_FIELD(qwenrt_session_params, split_invariant),
       QWENRT_FIELD_SINCE(qwenrt_session_params, kv_type, kSessionParamsV1Size + 1),
       QWENRT_FIELD_SINCE(qwenrt_session_params, prefill_progress, kSessionParamsV1Size + 1),
       QWENRT_FIELD_SINCE(qwenrt_session_params, prefill_progress_user_data,
                          kSessionParamsV1Size + 1),
       // Added after kv_type: a struct that ends before it (the first ABI 2 size) keeps 0.
       QWENRT_FIELD_SINCE(qwenrt_session_params, memory_limit,
                          offsetof(qwenrt_session_params, memory_limit) + 1),
       QWENRT_FIELD_SINCE(qwenrt_session_params, max_draft,
                          offsetof(qwenrt_session_params, max_draft) + 1)},
      "params", "qwenrt_session_params"));
  if (out->n_ctx < 0)
    return InvalidArgument("params->n_ctx is {} (0 = the model's trained context)", out->n_ctx);
  if (out->n_threads < 0)
    return InvalidArgument("params->n_threads is {} (0 = all)", out->n_threads);
  if (out->checkpoint_interval < 0) {
    return InvalidArgument("params->checkpoint_interval is {} (0 = off)", out->checkpoint_interval);
  }
  if (int b = EnumValue(out->backend); b < QWENRT_BACKEND_AUTO || b > QWENRT_BACKEND_REF) {
    return InvalidArgument("params->backend {} is not a qwenrt_backend", b);
  }
  if (int h = EnumValue(out->history_mode);
      h != QWENRT_HISTORY_TEMPLATE && h != QWENRT_HISTORY_TRANSCRIPT) {
    return InvalidArgument("params->history_mode {} is not a qwenrt_history_mode", h);
  }
  if (out->memory_limit > static_cast<uint64_t>(INT64_MAX))
    return InvalidArgument("params->memory_limit {} is above INT64_MAX", out->memory_limit);
  if (out->max_draft < 0 || out->max_draft > kMaxVerifyDraft) {
    return InvalidArgument("params->max_draft is {} (0 = off, at most {})", out->max_draft,
                           kMaxVerifyDraft);
  }
  return CheckKvTypeField(out->kv_type, "params->kv_type");
}

SessionParams ToSessionParams(const qwenrt_session_params& p, BackendKind kind) {
  SessionParams s;
  s.backend = kind;
  s.n_threads = p.n_threads;
  s.max_context = p.n_ctx;
  s.checkpoint_budget_bytes =
      p.checkpoint_budget == 0 ? -1 : static_cast<int64_t>(p.checkpoint_budget);
  s.checkpoint_every = p.checkpoint_interval;
  s.split_invariant = p.split_invariant;
  if (p.kv_type != QWENRT_KV_DEFAULT) s.kv_type = static_cast<KvType>(p.kv_type);
  s.memory_limit_bytes = static_cast<int64_t>(p.memory_limit);
  return s;
}

ChatSessionParams ToChatParams(const qwenrt_session_params& p, BackendKind kind) {
  ChatSessionParams c;
  c.session = ToSessionParams(p, kind);
  c.max_draft = p.max_draft;
  c.history = p.history_mode == QWENRT_HISTORY_TRANSCRIPT ? HistoryMode::kTranscript
                                                          : HistoryMode::kTemplate;
  if (p.log_callback != nullptr) {
    qwenrt_log_callback cb = p.log_callback;
    void* user = p.log_user_data;
    c.log = [cb, user](const std::string& line) { cb(line.c_str(), user); };
  }
  if (p.prefill_progress != nullptr) {
    qwenrt_prefill_progress_callback cb = p.prefill_progress;
    void* user = p.prefill_progress_user_data;
    c.prefill_progress = [cb, user](int64_t done, int64_t total) { return cb(done, total, user); };
  }
  return c;
}

// AUTO: what ResolveAutoBackend picks (model/backend_choice.h: never a backend a later call, such
// as an engine's submit, refuses), falling back to the CPU when that backend cannot make this
// session.
StatusOr<std::unique_ptr<ChatSession>> CreateChat(const std::shared_ptr<const ChatModel>& m,
                                                  const qwenrt_session_params& p) {
  switch (p.backend) {
    case QWENRT_BACKEND_CPU:
      return ChatSession::Create(m, ToChatParams(p, BackendKind::kCpu));
    case QWENRT_BACKEND_REF:
      return ChatSession::Create(m, ToChatParams(p, BackendKind::kRef));
    case QWENRT_BACKEND_CUDA:
      return ChatSession::Create(m, ToChatParams(p, BackendKind::kCuda));
    case QWENRT_BACKEND_AUTO:
    default: {
      const BackendKind kind = ResolveAutoBackend(DetectBackends());
      if (kind != BackendKind::kCpu) {
        auto chosen = ChatSession::Create(m, ToChatParams(p, kind));
        if (chosen.ok()) return chosen;
      }
      return ChatSession::Create(m, ToChatParams(p, BackendKind::kCpu));
    }
  }
}

Status PublishSession(std::unique_ptr<qwenrt_session> handle, qwenrt_session** out) {
  RegisterHandle(handle.get(), HandleKind::kSession);
  *out = handle.release();
  return OkStatus();
}

qwenrt_miss_reason ToCMiss(MissReason m) {
  switch (m) {
    case MissReason::kNone:
      return QWENRT_MISS_NONE;
    case MissReason::kEmpty:
      return QWENRT_MISS_EMPTY;
    case MissReason::kNoCheckpoint:
      return QWENRT_MISS_NO_CHECKPOINT;
    case MissReason::kEndsInsideTranscript:
      return QWENRT_MISS_OTHER;
  }
  return QWENRT_MISS_OTHER;
}

qwenrt_stop_reason ToCStop(StopReason r) {
  switch (r) {
    case StopReason::kNone:
      return QWENRT_STOP_NONE;
    case StopReason::kEndOfGeneration:
      return QWENRT_STOP_EOG;
    case StopReason::kMaxTokens:
      return QWENRT_STOP_MAX_TOKENS;
    case StopReason::kStopString:
      return QWENRT_STOP_STRING;
    case StopReason::kCallback:
      return QWENRT_STOP_CALLBACK;
    case StopReason::kContextFull:
      return QWENRT_STOP_CONTEXT_FULL;
  }
  return QWENRT_STOP_NONE;
}

}  // namespace

SessionCall::~SessionCall() {
  if (!entered_) return;
  bool last = false;
  WithRegistryLock([&] { last = --s_->calls == 0 && s_->free_pending; });
  if (last) delete s_;
}

Status SessionCall::Enter() {
  return WithLiveHandle(s_, HandleKind::kSession, "session", [&]() -> Status {
    if (s_->calls > 0 && s_->owner != std::this_thread::get_id()) {
      return InvalidArgument(
          "session is busy: another thread is running a call on it (one thread per handle at a "
          "time)");
    }
    if (s_->calls++ == 0) s_->owner = std::this_thread::get_id();
    entered_ = true;
    return OkStatus();
  });
}

qwenrt_report ToCReport(const TurnReport& t) {
  qwenrt_report r{};
  r.struct_size = sizeof r;
  r.prompt_tokens = t.feed.prompt_tokens;
  r.common_prefix = t.feed.common_prefix;
  r.reused_tokens = t.feed.reused_tokens;
  r.prefilled_tokens = t.feed.prefilled_tokens;
  r.checkpoint_pos = t.feed.checkpoint_pos;
  r.miss_reason = ToCMiss(t.feed.miss_reason);
  r.n_checkpoints = static_cast<int32_t>(t.n_checkpoints);
  r.checkpoint_bytes = t.checkpoint_bytes;
  r.state_bytes = t.state_bytes;
  r.generated_tokens = t.generated_tokens;
  r.stop_reason = ToCStop(t.stop_reason);
  r.prefill_ms = t.prefill_ms;
  r.ttft_ms = t.ttft_ms;
  r.decode_ms = t.decode_ms;
  r.decode_tokens_per_s = t.decode_tokens_per_s;
  r.reasoning_tokens = t.reasoning_tokens;
  r.reasoning_budget_hit = t.reasoning_budget_hit ? 1 : 0;
  r.forced_tokens = t.forced_tokens;
  r.drafted_tokens = t.drafted_tokens;
  r.accepted_tokens = t.accepted_tokens;
  return r;
}

}  // namespace qwenrt::capi

using namespace qwenrt;        // NOLINT: shims only
using namespace qwenrt::capi;  // NOLINT

extern "C" {

qwenrt_status qwenrt_session_create(qwenrt_model* model, const qwenrt_session_params* params,
                                    qwenrt_session** out_session) {
  return Guard(__func__, [&]() -> Status {
    if (out_session == nullptr) return InvalidArgument("out_session is NULL");
    *out_session = nullptr;
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    auto h = std::make_unique<qwenrt_session>();
    QWENRT_RETURN_IF_ERROR(ReadSessionParams(params, &h->params));
    h->model = model->model;
    QWENRT_ASSIGN_OR_RETURN(h->chat, CreateChat(h->model, h->params));
    return PublishSession(std::move(h), out_session);
  });
}

void qwenrt_session_free(qwenrt_session* session) {
  GuardValue(__func__, 0, [&]() {
    if (session == nullptr) return 0;
    bool now = false;
    const bool live = UnregisterHandleThen(session, HandleKind::kSession, [&] {
      if (session->calls > 0) {
        session->free_pending =
            true;  // a call runs (this free comes from its callback): it deletes
      } else {
        now = true;
      }
    });
    if (live && now) delete session;
    return 0;
  });
}

qwenrt_status qwenrt_session_reset(qwenrt_session* session) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    return session->chat->Reset();
  });
}

qwenrt_status qwenrt_session_get_backend(const qwenrt_session* session, qwenrt_backend* backend) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(session, HandleKind::kSession, "session"));
    if (backend == nullptr) return InvalidArgument("backend is NULL");
    switch (session->chat->params().session.backend) {
      case BackendKind::kCpu:
        *backend = QWENRT_BACKEND_CPU;
        break;
      case BackendKind::kCuda:
        *backend = QWENRT_BACKEND_CUDA;
        break;
      case BackendKind::kRef:
        *backend = QWENRT_BACKEND_REF;
        break;
    }
    return OkStatus();
  });
}

int64_t qwenrt_session_n_tokens(const qwenrt_session* session) {
  return GuardValue(__func__, int64_t{-1}, [&]() -> int64_t {
    SessionCall call(session);
    Status s = call.Enter();
    if (!s.ok()) {
      Report(__func__, s);
      return -1;
    }
    return session->chat->session().size();
  });
}

qwenrt_status qwenrt_session_get_tokens(const qwenrt_session* session, int32_t* tokens,
                                        size_t capacity, size_t* n_tokens) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (n_tokens == nullptr) return InvalidArgument("n_tokens is NULL");
    if (tokens == nullptr && capacity > 0)
      return InvalidArgument("tokens is NULL but capacity is {}", capacity);
    const std::vector<int32_t>& t = session->chat->session().transcript();
    return CopyArray(t.data(), t.size(), tokens, capacity, n_tokens, "tokens");
  });
}

qwenrt_status qwenrt_session_get_report(const qwenrt_session* session, qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (report == nullptr) return InvalidArgument("report is NULL");
    return WriteOut(ToCReport(session->chat->report()), report, "report", "qwenrt_report");
  });
}

qwenrt_status qwenrt_session_get_report_line(const qwenrt_session* session, char* buf,
                                             size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0)
      return InvalidArgument("buf is NULL but capacity is {}", capacity);
    return CopyString(session->chat->report_line(), buf, capacity, needed);
  });
}

qwenrt_status qwenrt_session_feed(qwenrt_session* session, const int32_t* tokens, size_t n,
                                  qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (report != nullptr)
      QWENRT_RETURN_IF_ERROR(
          CheckStructSize(report->struct_size, sizeof *report, "report", "qwenrt_report"));
    if (n == 0) return InvalidArgument("the token sequence is empty (n == 0)");
    if (tokens == nullptr) return InvalidArgument("tokens is NULL but n is {}", n);
    QWENRT_RETURN_IF_ERROR(session->chat->FeedTokens(std::span<const int32_t>(tokens, n)));
    if (report != nullptr)
      return WriteOut(ToCReport(session->chat->report()), report, "report", "qwenrt_report");
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_get_logits(const qwenrt_session* session, const float** out_logits,
                                        size_t* n_vocab) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (out_logits == nullptr || n_vocab == nullptr)
      return InvalidArgument("out_logits or n_vocab is NULL");
    const Session& s = session->chat->session();
    std::span<const float> l = s.last_logits();
    if (s.size() == 0) return InvalidArgument("the session holds no tokens: feed first");
    if (l.empty())
      return InvalidArgument("no logits for the last position (restored without logits)");
    *out_logits = l.data();
    *n_vocab = l.size();
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_cancel(qwenrt_session* session) {
  return Guard(__func__, [&]() -> Status {
    // Under the registry lock, so a concurrent free cannot delete the session meanwhile.
    return WithLiveHandle(session, HandleKind::kSession, "session", [&] {
      session->chat->Cancel();
      return OkStatus();
    });
  });
}

qwenrt_status qwenrt_session_checkpoint_at(qwenrt_session* session, int64_t pos) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    return session->chat->CheckpointAt(pos);
  });
}

qwenrt_status qwenrt_session_reserve(qwenrt_session* session, int32_t n_positions, int32_t touch) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    return session->chat->session().Reserve(n_positions, touch != 0);
  });
}

qwenrt_status qwenrt_session_set_checkpoint_budget(qwenrt_session* session, uint64_t bytes) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    QWENRT_RETURN_IF_ERROR(
        session->chat->SetCheckpointBudget(bytes == 0 ? -1 : static_cast<int64_t>(bytes)));
    session->params.checkpoint_budget = bytes;
    return OkStatus();
  });
}

static_assert(QWENRT_KV_F32 == static_cast<int>(KvType::kF32) &&
                  QWENRT_KV_F16 == static_cast<int>(KvType::kF16) &&
                  QWENRT_KV_Q8_0 == static_cast<int>(KvType::kQ8_0),
              "qwenrt_kv_type mirrors KvType");

qwenrt_status qwenrt_session_set_kv_type(qwenrt_session* session, qwenrt_kv_type type) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (int t = EnumValue(type); t < QWENRT_KV_F32 || t > QWENRT_KV_Q8_0)
      return InvalidArgument("type {} is not a qwenrt_kv_type", t);
    return session->chat->session().SetKvType(static_cast<KvType>(type));
  });
}

qwenrt_status qwenrt_session_get_kv_type(const qwenrt_session* session, qwenrt_kv_type* type) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (type == nullptr) return InvalidArgument("type is NULL");
    *type = static_cast<qwenrt_kv_type>(session->chat->session().kv_type());
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_get_checkpoints(const qwenrt_session* session, int64_t* positions,
                                             size_t capacity, size_t* n) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (n == nullptr) return InvalidArgument("n is NULL");
    if (positions == nullptr && capacity > 0)
      return InvalidArgument("positions is NULL but capacity is {}", capacity);
    std::vector<int64_t> pos;
    for (const CheckpointInfo& c : session->chat->session().checkpoints()) pos.push_back(c.pos);
    return CopyArray(pos.data(), pos.size(), positions, capacity, n, "checkpoints");
  });
}

qwenrt_status qwenrt_session_fork(const qwenrt_session* session, qwenrt_session** out_session) {
  return Guard(__func__, [&]() -> Status {
    if (out_session == nullptr) return InvalidArgument("out_session is NULL");
    *out_session = nullptr;
    QWENRT_CAPI_ENTER(session);
    auto h = std::make_unique<qwenrt_session>();
    QWENRT_ASSIGN_OR_RETURN(h->chat, session->chat->Fork());
    h->model = session->model;
    h->params = session->params;
    h->constraint = session->constraint;
    h->max_reasoning_tokens = session->max_reasoning_tokens;
    h->tool_choice = session->tool_choice;
    return PublishSession(std::move(h), out_session);
  });
}

qwenrt_status qwenrt_session_save_file(const qwenrt_session* session, const char* path) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (path == nullptr || *path == '\0') return InvalidArgument("path is NULL or empty");
    return session->chat->SaveToFile(path);
  });
}

qwenrt_status qwenrt_session_save_memory(const qwenrt_session* session, void* buf, size_t capacity,
                                         size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0)
      return InvalidArgument("buf is NULL but capacity is {}", capacity);
    QWENRT_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, session->chat->SaveToMemory());
    return CopyArray(blob.data(), blob.size(), static_cast<uint8_t*>(buf), capacity, needed,
                     "bytes");
  });
}

qwenrt_status qwenrt_session_load_file(qwenrt_session* session, const char* path) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (path == nullptr || *path == '\0') return InvalidArgument("path is NULL or empty");
    return session->chat->LoadFromFile(path);
  });
}

qwenrt_status qwenrt_session_load_memory(qwenrt_session* session, const void* data, size_t size) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (data == nullptr) return InvalidArgument("data is NULL");
    return session->chat->LoadFromMemory(
        std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
  });
}

}  // extern "C"
