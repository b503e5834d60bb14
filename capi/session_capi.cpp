// C ABI shims for `qwenrt_session`: create / free / reset, feed tokens, logits, the per-step report,
// checkpoint control, fork, save / load, cancel. Chat feeding and generation are in chat_capi.cpp.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "guard.h"
#include "handle_registry.h"
#include "handles.h"
#include "qwenrt/qwenrt.h"
#include "session_capi.h"
#include "validate.h"

namespace qwenrt::capi {
namespace {

constexpr size_t kMaxPendingCheckpoints = 256;

Status ReadSessionParams(const qwenrt_session_params* in, qwenrt_session_params* out) {
  QWENRT_RETURN_IF_ERROR(ReadParams(in, qwenrt_session_default_params(), out,
                                    {QWENRT_FIELD(qwenrt_session_params, n_ctx),
                                     QWENRT_FIELD(qwenrt_session_params, n_threads),
                                     QWENRT_FIELD(qwenrt_session_params, backend),
                                     QWENRT_FIELD(qwenrt_session_params, checkpoint_budget),
                                     QWENRT_FIELD(qwenrt_session_params, checkpoint_interval),
                                     QWENRT_FIELD(qwenrt_session_params, history_mode),
                                     QWENRT_FIELD(qwenrt_session_params, log_callback),
                                     QWENRT_FIELD(qwenrt_session_params, log_user_data),
                                     QWENRT_FIELD(qwenrt_session_params, split_invariant)},
                                    "params", "qwenrt_session_params"));
  if (out->n_ctx < 0) return InvalidArgument("params->n_ctx is {} (0 = the model's trained context)", out->n_ctx);
  if (out->n_threads < 0) return InvalidArgument("params->n_threads is {} (0 = all)", out->n_threads);
  if (out->checkpoint_interval < 0) {
    return InvalidArgument("params->checkpoint_interval is {} (0 = off)", out->checkpoint_interval);
  }
  if (int b = EnumValue(out->backend); b < QWENRT_BACKEND_AUTO || b > QWENRT_BACKEND_REF) {
    return InvalidArgument("params->backend {} is not a qwenrt_backend", b);
  }
  if (int h = EnumValue(out->history_mode); h != QWENRT_HISTORY_TEMPLATE && h != QWENRT_HISTORY_TRANSCRIPT) {
    return InvalidArgument("params->history_mode {} is not a qwenrt_history_mode", h);
  }
  return OkStatus();
}

SessionParams ToSessionParams(const qwenrt_session_params& p, BackendKind kind) {
  SessionParams s;
  s.backend = kind;
  s.n_threads = p.n_threads;
  s.max_context = p.n_ctx;
  s.checkpoint_budget_bytes = p.checkpoint_budget == 0 ? -1 : static_cast<int64_t>(p.checkpoint_budget);
  s.checkpoint_every = p.checkpoint_interval;
  s.split_invariant = p.split_invariant;
  return s;
}

StatusOr<std::unique_ptr<Session>> CreateSession(const ModelBundle& b, const qwenrt_session_params& p) {
  switch (p.backend) {
    case QWENRT_BACKEND_CPU: return Session::Create(b.model, ToSessionParams(p, BackendKind::kCpu));
    case QWENRT_BACKEND_REF: return Session::Create(b.model, ToSessionParams(p, BackendKind::kRef));
    case QWENRT_BACKEND_CUDA: return Session::Create(b.model, ToSessionParams(p, BackendKind::kCuda));
    case QWENRT_BACKEND_AUTO:
    default: {
#if defined(QWENRT_HAVE_CUDA)
      StatusOr<std::unique_ptr<Session>> cuda = Session::Create(b.model, ToSessionParams(p, BackendKind::kCuda));
      if (cuda.ok()) return cuda;
#endif
      return Session::Create(b.model, ToSessionParams(p, BackendKind::kCpu));
    }
  }
}

Status PublishSession(std::unique_ptr<qwenrt_session> handle, qwenrt_session** out) {
  RegisterHandle(handle.get(), HandleKind::kSession);
  *out = handle.release();
  return OkStatus();
}

}  // namespace

Status CheckSession(const qwenrt_session* s) { return CheckHandle(s, HandleKind::kSession, "session"); }

Status TakeCancel(qwenrt_session* s, const char* when) {
  if (s->cancel.exchange(false)) return Cancelled("cancelled by qwenrt_session_cancel {}", when);
  return OkStatus();
}

Status FinishCancellable(qwenrt_session* s, Status status) {
  if (status.code() == StatusCode::kCancelled) s->cancel.store(false);
  return status;
}

std::string FormatStepLine(const FeedReport& r) {
  std::string line = fmt::format("prefill {} tokens from position {} (", r.prefilled_tokens, r.reused_tokens);
  if (r.checkpoint_pos >= 0) {
    line += fmt::format("checkpoint {}", r.checkpoint_pos);
  } else {
    line += r.reused_tokens > 0 ? "live state" : "no checkpoint";
  }
  line += fmt::format(", common prefix {} of {})", r.common_prefix, r.prompt_tokens);
  if (!r.miss_reason.empty()) line += "; " + r.miss_reason;
  return line;
}

Status FeedTokens(qwenrt_session* s, std::span<const int32_t> tokens, std::span<const int64_t> boundaries,
                  FeedReport* fr) {
  QWENRT_RETURN_IF_ERROR(TakeCancel(s, "before the feed started"));
  Session& session = *s->session;
  bool was_empty = session.size() == 0;
  std::vector<int64_t> positions(s->pending_checkpoints.begin(), s->pending_checkpoints.end());
  positions.insert(positions.end(), boundaries.begin(), boundaries.end());
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  FeedOptions options;
  options.checkpoint_positions = positions;
  options.cancel = &s->cancel;
  auto t0 = std::chrono::steady_clock::now();
  s->chat_assistants_fed = -1;  // FeedChat sets it again after a chat feed
  s->transcript_assistants = -1;
  s->transcript_reply_end = -1;
  Status st = FinishCancellable(s, session.Feed(tokens, options, fr));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return st;

  // Requested positions that now hold a checkpoint are done; the others wait for a later feed.
  std::vector<int64_t> held;
  for (const CheckpointInfo& c : session.checkpoints()) held.push_back(c.pos);
  std::erase_if(s->pending_checkpoints, [&](int64_t p) {
    return std::binary_search(held.begin(), held.end(), p);
  });

  qwenrt_report& r = s->report;
  r = qwenrt_report{};
  r.struct_size = sizeof r;
  r.prompt_tokens = fr->prompt_tokens;
  r.common_prefix = fr->common_prefix;
  r.reused_tokens = fr->reused_tokens;
  r.prefilled_tokens = fr->prefilled_tokens;
  r.checkpoint_pos = fr->checkpoint_pos;
  if (was_empty) {
    r.miss_reason = QWENRT_MISS_EMPTY;
  } else if (fr->miss_reason.empty() && fr->reused_tokens >= std::min(fr->common_prefix, fr->prompt_tokens - 1)) {
    r.miss_reason = QWENRT_MISS_NONE;
  } else if (fr->checkpoint_pos >= 0 || fr->miss_reason.find("checkpoint") != std::string::npos) {
    r.miss_reason = QWENRT_MISS_NO_CHECKPOINT;
  } else {
    r.miss_reason = QWENRT_MISS_OTHER;
  }
  r.stop_reason = QWENRT_STOP_NONE;
  r.prefill_ms = ms;
  r.ttft_ms = ms;
  RefreshMemory(s);
  s->report_line = FormatStepLine(*fr);
  if (s->params.log_callback != nullptr) s->params.log_callback(s->report_line.c_str(), s->params.log_user_data);
  return OkStatus();
}

void RefreshMemory(qwenrt_session* s) {
  const Session& session = *s->session;
  s->report.n_checkpoints = static_cast<int32_t>(session.checkpoints().size());
  s->report.checkpoint_bytes = session.checkpoint_bytes();
  s->report.state_bytes = session.kv_bytes() + session.state_bytes();
}

void ClearReply(qwenrt_session* s) {
  s->reply_content.clear();
  s->reply_reasoning.clear();
  s->reply_tool_calls = "[]";
}

// Blob layout (little-endian): u32 version (1), three strings (u64 length + bytes): the last
// reply's content, reasoning and tool calls (JSON); then three i64: chat_assistants_fed,
// transcript_assistants, transcript_reply_end.
std::vector<uint8_t> EncodeChatState(const qwenrt_session& s) {
  const std::string* fields[3] = {&s.reply_content, &s.reply_reasoning, &s.reply_tool_calls};
  const int64_t marks[3] = {s.chat_assistants_fed, s.transcript_assistants, s.transcript_reply_end};
  size_t total = sizeof(uint32_t) + sizeof marks;
  for (const std::string* f : fields) total += sizeof(uint64_t) + f->size();
  std::vector<uint8_t> out(total);
  uint8_t* at = out.data();
  const uint32_t version = 1;
  std::memcpy(at, &version, sizeof version);
  at += sizeof version;
  for (const std::string* f : fields) {
    const uint64_t n = f->size();
    std::memcpy(at, &n, sizeof n);
    at += sizeof n;
    if (n > 0) std::memcpy(at, f->data(), n);
    at += n;
  }
  std::memcpy(at, marks, sizeof marks);
  return out;
}

void AfterLoad(qwenrt_session* s, const std::vector<uint8_t>& state) {
  s->cancel.store(false);
  s->pending_checkpoints.clear();
  s->report = qwenrt_report{};
  s->report.struct_size = sizeof s->report;
  s->report.checkpoint_pos = -1;
  s->report_line.clear();
  s->chat_assistants_fed = s->transcript_assistants = s->transcript_reply_end = -1;
  RefreshMemory(s);
  ClearReply(s);
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (state.size() - at < n) return false;
    std::memcpy(p, state.data() + at, n);
    at += n;
    return true;
  };
  uint32_t version = 0;
  if (!get(&version, sizeof version) || version != 1) return;  // no (or a future) chat state
  std::string fields[3];
  for (std::string& f : fields) {
    uint64_t n = 0;
    if (!get(&n, sizeof n) || state.size() - at < n) return;
    f.assign(reinterpret_cast<const char*>(state.data() + at), n);
    at += n;
  }
  int64_t marks[3];
  if (!get(marks, sizeof marks)) return;
  s->reply_content = std::move(fields[0]);
  s->reply_reasoning = std::move(fields[1]);
  s->reply_tool_calls = std::move(fields[2]);
  if (marks[2] <= s->session->size()) {
    s->chat_assistants_fed = marks[0];
    s->transcript_assistants = marks[1];
    s->transcript_reply_end = marks[2];
  }
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
    h->bundle = model->bundle;
    QWENRT_ASSIGN_OR_RETURN(h->session, CreateSession(*h->bundle, h->params));
    h->report.struct_size = sizeof h->report;
    h->report.checkpoint_pos = -1;
    return PublishSession(std::move(h), out_session);
  });
}

void qwenrt_session_free(qwenrt_session* session) {
  GuardValue(__func__, 0, [&]() {
    if (session != nullptr && UnregisterHandle(session, HandleKind::kSession)) delete session;
    return 0;
  });
}

qwenrt_status qwenrt_session_reset(qwenrt_session* session) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    session->session->Reset();
    session->cancel.store(false);
    session->pending_checkpoints.clear();
    session->report = qwenrt_report{};
    session->report.struct_size = sizeof session->report;
    session->report.checkpoint_pos = -1;
    session->report_line.clear();
    session->chat_assistants_fed = session->transcript_assistants = session->transcript_reply_end = -1;
    ClearReply(session);
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_get_backend(const qwenrt_session* session, qwenrt_backend* backend) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (backend == nullptr) return InvalidArgument("backend is NULL");
    switch (session->session->params().backend) {
      case BackendKind::kCpu: *backend = QWENRT_BACKEND_CPU; break;
      case BackendKind::kCuda: *backend = QWENRT_BACKEND_CUDA; break;
      case BackendKind::kRef: *backend = QWENRT_BACKEND_REF; break;
    }
    return OkStatus();
  });
}

int64_t qwenrt_session_n_tokens(const qwenrt_session* session) {
  return GuardValue(__func__, int64_t{-1}, [&]() -> int64_t {
    Status s = CheckSession(session);
    if (!s.ok()) {
      Report(__func__, s);
      return -1;
    }
    return session->session->size();
  });
}

qwenrt_status qwenrt_session_get_tokens(const qwenrt_session* session, int32_t* tokens, size_t capacity,
                                        size_t* n_tokens) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (n_tokens == nullptr) return InvalidArgument("n_tokens is NULL");
    if (tokens == nullptr && capacity > 0) return InvalidArgument("tokens is NULL but capacity is {}", capacity);
    const std::vector<int32_t>& t = session->session->transcript();
    return CopyArray(t.data(), t.size(), tokens, capacity, n_tokens, "tokens");
  });
}

qwenrt_status qwenrt_session_get_report(const qwenrt_session* session, qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (report == nullptr) return InvalidArgument("report is NULL");
    return WriteOut(session->report, report, "report", "qwenrt_report");
  });
}

qwenrt_status qwenrt_session_get_report_line(const qwenrt_session* session, char* buf, size_t capacity,
                                             size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0) return InvalidArgument("buf is NULL but capacity is {}", capacity);
    return CopyString(session->report_line, buf, capacity, needed);
  });
}

qwenrt_status qwenrt_session_feed(qwenrt_session* session, const int32_t* tokens, size_t n,
                                  qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (report != nullptr) QWENRT_RETURN_IF_ERROR(CheckStructSize(report->struct_size, sizeof *report, "report", "qwenrt_report"));
    if (n == 0) return InvalidArgument("the token sequence is empty (n == 0)");
    if (tokens == nullptr) return InvalidArgument("tokens is NULL but n is {}", n);
    FeedReport fr;
    QWENRT_RETURN_IF_ERROR(FeedTokens(session, std::span<const int32_t>(tokens, n), {}, &fr));
    ClearReply(session);
    if (report != nullptr) return WriteOut(session->report, report, "report", "qwenrt_report");
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_get_logits(const qwenrt_session* session, const float** out_logits,
                                        size_t* n_vocab) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (out_logits == nullptr || n_vocab == nullptr) return InvalidArgument("out_logits or n_vocab is NULL");
    std::span<const float> l = session->session->last_logits();
    if (session->session->size() == 0) return InvalidArgument("the session holds no tokens: feed first");
    if (l.empty()) return InvalidArgument("no logits for the last position (restored without logits)");
    *out_logits = l.data();
    *n_vocab = l.size();
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_cancel(qwenrt_session* session) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    session->cancel.store(true);
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_checkpoint_at(qwenrt_session* session, int64_t pos) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (pos < 1) return InvalidArgument("pos {} is not a position (>= 1: the state after pos tokens)", pos);
    if (pos == session->session->size()) {
      QWENRT_RETURN_IF_ERROR(session->session->Checkpoint());
      RefreshMemory(session);
      return OkStatus();
    }
    auto& p = session->pending_checkpoints;
    if (std::find(p.begin(), p.end(), pos) == p.end()) {
      if (p.size() >= kMaxPendingCheckpoints) p.erase(p.begin());
      p.push_back(pos);
    }
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_set_checkpoint_budget(qwenrt_session* session, uint64_t bytes) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    session->session->set_checkpoint_budget(bytes == 0 ? -1 : static_cast<int64_t>(bytes));
    session->params.checkpoint_budget = bytes;
    RefreshMemory(session);
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_get_checkpoints(const qwenrt_session* session, int64_t* positions,
                                             size_t capacity, size_t* n) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (n == nullptr) return InvalidArgument("n is NULL");
    if (positions == nullptr && capacity > 0) return InvalidArgument("positions is NULL but capacity is {}", capacity);
    std::vector<int64_t> pos;
    for (const CheckpointInfo& c : session->session->checkpoints()) pos.push_back(c.pos);
    return CopyArray(pos.data(), pos.size(), positions, capacity, n, "checkpoints");
  });
}

qwenrt_status qwenrt_session_fork(const qwenrt_session* session, qwenrt_session** out_session) {
  return Guard(__func__, [&]() -> Status {
    if (out_session == nullptr) return InvalidArgument("out_session is NULL");
    *out_session = nullptr;
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    auto h = std::make_unique<qwenrt_session>();
    QWENRT_ASSIGN_OR_RETURN(h->session, session->session->Fork());
    h->bundle = session->bundle;
    h->params = session->params;
    h->report = session->report;
    h->report_line = session->report_line;
    h->reply_content = session->reply_content;
    h->reply_reasoning = session->reply_reasoning;
    h->reply_tool_calls = session->reply_tool_calls;
    h->pending_checkpoints = session->pending_checkpoints;
    h->chat_assistants_fed = session->chat_assistants_fed;
    h->chat_tools = session->chat_tools;
    h->transcript_assistants = session->transcript_assistants;
    h->transcript_reply_end = session->transcript_reply_end;
    return PublishSession(std::move(h), out_session);
  });
}

qwenrt_status qwenrt_session_save_file(const qwenrt_session* session, const char* path) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (path == nullptr || *path == '\0') return InvalidArgument("path is NULL or empty");
    return session->session->SaveToFile(path, EncodeChatState(*session));
  });
}

qwenrt_status qwenrt_session_save_memory(const qwenrt_session* session, void* buf, size_t capacity,
                                         size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0) return InvalidArgument("buf is NULL but capacity is {}", capacity);
    QWENRT_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, session->session->SaveToMemory(EncodeChatState(*session)));
    return CopyArray(blob.data(), blob.size(), static_cast<uint8_t*>(buf), capacity, needed, "bytes");
  });
}

qwenrt_status qwenrt_session_load_file(qwenrt_session* session, const char* path) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (path == nullptr || *path == '\0') return InvalidArgument("path is NULL or empty");
    std::vector<uint8_t> state;
    QWENRT_RETURN_IF_ERROR(session->session->LoadFromFile(path, &state));
    AfterLoad(session, state);
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_load_memory(qwenrt_session* session, const void* data, size_t size) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (data == nullptr) return InvalidArgument("data is NULL");
    std::vector<uint8_t> state;
    QWENRT_RETURN_IF_ERROR(session->session->LoadFromMemory(
        std::span<const uint8_t>(static_cast<const uint8_t*>(data), size), &state));
    AfterLoad(session, state);
    return OkStatus();
  });
}

}  // extern "C"
