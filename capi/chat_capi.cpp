// C ABI shims for chats and generation: each converts `qwenrt_chat` / sampling / generate params
// to the core's ChatRequest / GenerateRequest and calls the ChatSession (src/chat/chat_session.h),
// which plans the turn, feeds it, streams the reply and keeps the report; the engine shims hand
// the same request to the batching Engine (src/chat/engine.h). No chat logic here.
#include <string>
#include <vector>

#include "guard.h"
#include "handle_registry.h"
#include "handles.h"
#include "params.h"
#include "qwenrt/qwenrt.h"
#include "sampling_capi.h"
#include "session_capi.h"
#include "validate.h"

namespace qwenrt::capi {
namespace {

Role ToRole(qwenrt_role r) {
  switch (r) {
    case QWENRT_ROLE_SYSTEM:
      return Role::kSystem;
    case QWENRT_ROLE_USER:
      return Role::kUser;
    case QWENRT_ROLE_ASSISTANT:
      return Role::kAssistant;
    case QWENRT_ROLE_TOOL:
      return Role::kTool;
  }
  return Role::kUser;
}

Status ParseJson(const char* text, const char* what, Json* out) {
  QWENRT_RETURN_IF_ERROR(CheckCString(text, what, false));
  QWENRT_ASSIGN_OR_RETURN(*out, ParseRequestJson(text, what));
  return OkStatus();
}

// A caller's qwenrt_chat, checked and converted to the core's ChatRequest.
Status ReadChat(const qwenrt_chat* in, ChatRequest* out) {
  if (in == nullptr) return InvalidArgument("chat is NULL");
  qwenrt_chat c;
  QWENRT_RETURN_IF_ERROR(
      ReadParams(in, DefaultChat(), &c,
                 {QWENRT_FIELD(qwenrt_chat, messages), QWENRT_FIELD(qwenrt_chat, n_messages),
                  QWENRT_FIELD(qwenrt_chat, tools_json), QWENRT_FIELD(qwenrt_chat, enable_thinking),
                  QWENRT_FIELD(qwenrt_chat, add_generation_prompt)},
                 "chat", "qwenrt_chat"));
  if (c.n_messages == 0)
    return InvalidArgument("the conversation is empty (chat->n_messages == 0)");
  if (c.messages == nullptr)
    return InvalidArgument("chat->messages is NULL but n_messages is {}", c.n_messages);
  if (c.n_messages > 1000000)
    return InvalidArgument("chat->n_messages {} is implausible", c.n_messages);
  out->enable_thinking = c.enable_thinking;
  out->add_generation_prompt = c.add_generation_prompt;
  out->tools = nullptr;
  if (c.tools_json != nullptr) {
    Json tools;
    QWENRT_RETURN_IF_ERROR(ParseJson(c.tools_json, "chat->tools_json", &tools));
    if (!tools.is_array()) return InvalidArgument("chat->tools_json must be a JSON array of tools");
    if (!tools.empty()) out->tools = std::move(tools);
  }
  // Messages are walked with the stride the caller's header used (see docs/c-abi.md).
  const uint32_t stride = c.messages[0].struct_size;
  QWENRT_RETURN_IF_ERROR(
      CheckStructSize(stride, sizeof(qwenrt_message), "chat->messages[0]", "qwenrt_message"));
  const auto* base = reinterpret_cast<const unsigned char*>(c.messages);
  qwenrt_message zero{};
  zero.struct_size = sizeof zero;
  zero.role = QWENRT_ROLE_USER;
  out->messages.clear();
  out->messages.reserve(c.n_messages);
  for (size_t i = 0; i < c.n_messages; ++i) {
    const auto* raw = reinterpret_cast<const qwenrt_message*>(base + i * stride);
    if (raw->struct_size != stride) {
      return InvalidArgument("chat->messages[{}].struct_size is {} but messages[0]'s is {}", i,
                             raw->struct_size, stride);
    }
    qwenrt_message m;
    const std::string what = fmt::format("chat->messages[{}]", i);
    QWENRT_RETURN_IF_ERROR(ReadParams(
        raw, zero, &m,
        {QWENRT_FIELD(qwenrt_message, role), QWENRT_FIELD(qwenrt_message, content),
         QWENRT_FIELD(qwenrt_message, reasoning), QWENRT_FIELD(qwenrt_message, tool_calls),
         QWENRT_FIELD(qwenrt_message, n_tool_calls)},
        what.c_str(), "qwenrt_message"));
    const int role_value = EnumValue(m.role);
    if (role_value < QWENRT_ROLE_SYSTEM || role_value > QWENRT_ROLE_TOOL) {
      return InvalidArgument("{}.role {} is not a qwenrt_role", what, role_value);
    }
    QWENRT_RETURN_IF_ERROR(CheckCString(m.content, (what + ".content").c_str(), true));
    ChatMessage msg;
    msg.role = ToRole(m.role);
    msg.content = m.content == nullptr ? "" : m.content;
    if (m.reasoning != nullptr) {
      QWENRT_RETURN_IF_ERROR(CheckCString(m.reasoning, (what + ".reasoning").c_str(), false));
      msg.reasoning = m.reasoning;
    }
    if (m.n_tool_calls > 0) {
      if (m.tool_calls == nullptr)
        return InvalidArgument("{}.tool_calls is NULL but n_tool_calls is {}", what,
                               m.n_tool_calls);
      if (m.role != QWENRT_ROLE_ASSISTANT)
        return InvalidArgument("{}: only assistant messages have tool calls", what);
      for (size_t k = 0; k < m.n_tool_calls; ++k) {
        const qwenrt_tool_call& tc = m.tool_calls[k];
        const std::string w = fmt::format("{}.tool_calls[{}]", what, k);
        QWENRT_RETURN_IF_ERROR(CheckCString(tc.name, (w + ".name").c_str(), false));
        ToolCall call;
        call.name = tc.name;
        if (tc.arguments_json != nullptr) {
          QWENRT_RETURN_IF_ERROR(
              ParseJson(tc.arguments_json, (w + ".arguments_json").c_str(), &call.arguments));
          if (!call.arguments.is_object())
            return InvalidArgument("{}.arguments_json must be a JSON object", w);
        }
        msg.tool_calls.push_back(std::move(call));
      }
    }
    out->messages.push_back(std::move(msg));
  }
  return OkStatus();
}

// A qwenrt_tool_choice and its function name (`what`: where they came from, for errors). By
// reference: copying the enum would load a value a C caller may have put outside its range (UB).
Status ToToolChoice(const qwenrt_tool_choice& choice, const char* function_name, const char* what,
                    ToolChoice* out) {
  ToolChoice c;
  switch (EnumValue(choice)) {
    case QWENRT_TOOL_CHOICE_FREE:
      c.mode = ToolChoiceMode::kFree;
      break;
    case QWENRT_TOOL_CHOICE_NONE:
      c.mode = ToolChoiceMode::kNone;
      break;
    case QWENRT_TOOL_CHOICE_AUTO:
      c.mode = ToolChoiceMode::kAuto;
      break;
    case QWENRT_TOOL_CHOICE_REQUIRED:
      c.mode = ToolChoiceMode::kRequired;
      break;
    case QWENRT_TOOL_CHOICE_FUNCTION:
      c.mode = ToolChoiceMode::kFunction;
      break;
    default:
      return InvalidArgument("{} {} is not a qwenrt_tool_choice", what, EnumValue(choice));
  }
  if (c.mode == ToolChoiceMode::kFunction) {
    QWENRT_RETURN_IF_ERROR(CheckCString(function_name, "the function name", false));
    c.function = function_name;
    if (c.function.empty()) return InvalidArgument("the function name is empty");
  } else if (function_name != nullptr) {
    return InvalidArgument("a function name is given but {} is not QWENRT_TOOL_CHOICE_FUNCTION",
                           what);
  }
  *out = std::move(c);
  return OkStatus();
}

// A caller's sampling and generate params, checked and converted to the core's GenerateRequest.
// `sampling` is the call's argument; params->sampling is the other place it may come from.
Status ReadGenerate(const qwenrt_sampling_params* sampling, const qwenrt_generate_params* params,
                    GenerateRequest* out) {
  constexpr size_t v2 = kGenerateParamsV1Size + 1;  // any struct larger than ABI 1's has them all
  qwenrt_generate_params g;
  QWENRT_RETURN_IF_ERROR(
      ReadParams(params, DefaultGenerateParams(), &g,
                 {QWENRT_FIELD(qwenrt_generate_params, max_tokens),
                  QWENRT_FIELD(qwenrt_generate_params, stop_strings),
                  QWENRT_FIELD(qwenrt_generate_params, n_stop_strings),
                  QWENRT_FIELD(qwenrt_generate_params, callback),
                  QWENRT_FIELD(qwenrt_generate_params, user_data),
                  QWENRT_FIELD_SINCE(qwenrt_generate_params, sampling, v2),
                  QWENRT_FIELD_SINCE(qwenrt_generate_params, constraint, v2),
                  QWENRT_FIELD_SINCE(qwenrt_generate_params, tool_choice, v2),
                  QWENRT_FIELD_SINCE(qwenrt_generate_params, tool_function, v2),
                  QWENRT_FIELD_SINCE(qwenrt_generate_params, max_reasoning_tokens, v2)},
                 "params", "qwenrt_generate_params"));
  if (sampling != nullptr && g.sampling != nullptr) {
    return InvalidArgument(
        "sampling is given twice: as the sampling argument and as params->sampling (pass NULL "
        "for one)");
  }
  qwenrt_sampling_params sp;
  QWENRT_RETURN_IF_ERROR(ReadSamplingParams(sampling != nullptr ? sampling : g.sampling, &sp));
  out->sampling = ToSamplerParams(sp);
  if (g.max_tokens < -1)
    return InvalidArgument("params->max_tokens is {} (-1 = until the context is full)",
                           g.max_tokens);
  out->max_tokens = g.max_tokens;
  if (g.n_stop_strings > 0 && g.stop_strings == nullptr) {
    return InvalidArgument("params->stop_strings is NULL but n_stop_strings is {}",
                           g.n_stop_strings);
  }
  for (size_t i = 0; i < g.n_stop_strings; ++i) {
    const std::string what = fmt::format("params->stop_strings[{}]", i);
    QWENRT_RETURN_IF_ERROR(CheckCString(g.stop_strings[i], what.c_str(), false));
    out->stop_strings.emplace_back(g.stop_strings[i]);
  }
  if (g.callback != nullptr) {
    qwenrt_stream_callback cb = g.callback;
    void* user = g.user_data;
    // NUL-terminated copy for the callback; the scratch string keeps its capacity across pieces.
    auto scratch = std::make_shared<std::string>();
    out->on_piece = [cb, user, scratch](PieceKind kind, std::string_view text) {
      scratch->assign(text);
      const qwenrt_piece_kind k = kind == PieceKind::kReasoning  ? QWENRT_PIECE_REASONING
                                  : kind == PieceKind::kToolCall ? QWENRT_PIECE_TOOL_CALL
                                                                 : QWENRT_PIECE_CONTENT;
      return cb(k, scratch->c_str(), scratch->size(), user);
    };
  }
  if (g.constraint != nullptr) {
    QWENRT_RETURN_IF_ERROR(
        CheckHandle(g.constraint, HandleKind::kConstraint, "params->constraint"));
    out->constraint = g.constraint->grammar;
  }
  QWENRT_RETURN_IF_ERROR(
      ToToolChoice(g.tool_choice, g.tool_function, "params->tool_choice", &out->tool_choice));
  if (g.max_reasoning_tokens < 0) {
    return InvalidArgument("params->max_reasoning_tokens is {} (0 = no limit)",
                           g.max_reasoning_tokens);
  }
  out->max_reasoning_tokens = g.max_reasoning_tokens;
  return OkStatus();
}

// The deprecated session settings (qwenrt_session_set_constraint / _reasoning_budget /
// _tool_choice) fill the generation options the params left at their defaults.
void AddSessionOptions(const qwenrt_session& s, GenerateRequest* gen) {
  if (gen->constraint == nullptr) gen->constraint = s.constraint;
  if (gen->max_reasoning_tokens == 0) gen->max_reasoning_tokens = s.max_reasoning_tokens;
  if (gen->tool_choice.mode == ToolChoiceMode::kFree) gen->tool_choice = s.tool_choice;
}

Status WriteReport(const qwenrt_session* s, qwenrt_report* report) {
  if (report == nullptr) return OkStatus();
  return WriteOut(ToCReport(s->chat->report()), report, "report", "qwenrt_report");
}

Status CheckReport(const qwenrt_report* report) {
  if (report == nullptr) return OkStatus();
  return CheckStructSize(report->struct_size, sizeof *report, "report", "qwenrt_report");
}

// The session's engine turn ended: its "call" leaves (a free requested meanwhile happens now).
void ReleaseEngineTurn(const qwenrt_session* s) {
  bool last = false;
  WithRegistryLock([&] { last = --s->calls == 0 && s->free_pending; });
  if (last) delete s;
}

}  // namespace
}  // namespace qwenrt::capi

using namespace qwenrt;        // NOLINT: shims only
using namespace qwenrt::capi;  // NOLINT

extern "C" {

qwenrt_status qwenrt_constraint_compile(qwenrt_constraint_kind kind, const char* text, size_t len,
                                        qwenrt_constraint** out_constraint) {
  return Guard(__func__, [&]() -> Status {
    if (out_constraint == nullptr) return InvalidArgument("out_constraint is NULL");
    *out_constraint = nullptr;
    if (text == nullptr) return InvalidArgument("text is NULL");
    const std::string_view source(text, len);
    QWENRT_RETURN_IF_ERROR(CheckUtf8(source, "text"));
    StatusOr<std::shared_ptr<const Grammar>> g =
        InvalidArgument("kind {} is not a qwenrt_constraint_kind", EnumValue(kind));
    switch (EnumValue(kind)) {
      case QWENRT_CONSTRAINT_GBNF:
        g = Grammar::FromGbnf(source);
        break;
      case QWENRT_CONSTRAINT_JSON_SCHEMA:
        g = Grammar::FromJsonSchema(source);
        break;
      case QWENRT_CONSTRAINT_JSON_SCHEMA_COMPACT: {
        JsonSchemaOptions o;
        o.compact = true;
        g = Grammar::FromJsonSchema(source, o);
        break;
      }
      case QWENRT_CONSTRAINT_REGEX:
        g = Grammar::FromRegex(source);
        break;
    }
    if (!g.ok()) return g.status();
    auto h = std::make_unique<qwenrt_constraint>();
    h->grammar = std::move(g).value();
    RegisterHandle(h.get(), HandleKind::kConstraint);
    *out_constraint = h.release();
    return OkStatus();
  });
}

void qwenrt_constraint_free(qwenrt_constraint* constraint) {
  GuardValue(__func__, 0, [&]() {
    if (constraint != nullptr && UnregisterHandle(constraint, HandleKind::kConstraint))
      delete constraint;
    return 0;
  });
}

qwenrt_status qwenrt_session_set_constraint(qwenrt_session* session,
                                            const qwenrt_constraint* constraint) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (constraint == nullptr) {
      session->constraint = nullptr;
      return OkStatus();
    }
    QWENRT_RETURN_IF_ERROR(CheckHandle(constraint, HandleKind::kConstraint, "constraint"));
    session->constraint = constraint->grammar;
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_set_reasoning_budget(qwenrt_session* session,
                                                  int32_t max_reasoning_tokens) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (max_reasoning_tokens < 0)
      return InvalidArgument("max_reasoning_tokens is {} (0 = no limit)", max_reasoning_tokens);
    session->max_reasoning_tokens = max_reasoning_tokens;
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_set_tool_choice(qwenrt_session* session, qwenrt_tool_choice choice,
                                             const char* function_name) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    ToolChoice c;
    QWENRT_RETURN_IF_ERROR(ToToolChoice(choice, function_name, "choice", &c));
    session->tool_choice = std::move(c);
    return OkStatus();
  });
}

qwenrt_status qwenrt_chat_render(const qwenrt_model* model, const qwenrt_chat* chat, char* buf,
                                 size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0)
      return InvalidArgument("buf is NULL but capacity is {}", capacity);
    ChatRequest request;
    QWENRT_RETURN_IF_ERROR(ReadChat(chat, &request));
    QWENRT_ASSIGN_OR_RETURN(std::string text, model->model->Render(request));
    return CopyString(text, buf, capacity, needed);
  });
}

qwenrt_status qwenrt_session_feed_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                       qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    QWENRT_RETURN_IF_ERROR(CheckReport(report));
    ChatRequest request;
    QWENRT_RETURN_IF_ERROR(ReadChat(chat, &request));
    QWENRT_RETURN_IF_ERROR(session->chat->FeedChat(request));
    return WriteReport(session, report);
  });
}

qwenrt_status qwenrt_session_generate(qwenrt_session* session,
                                      const qwenrt_sampling_params* sampling,
                                      const qwenrt_generate_params* params,
                                      qwenrt_stop_reason* stop_reason) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    GenerateRequest gen;
    QWENRT_RETURN_IF_ERROR(ReadGenerate(sampling, params, &gen));
    AddSessionOptions(*session, &gen);
    Status st = session->chat->Generate(gen);
    const bool ran = st.ok() || st.code() == StatusCode::kCancelled;
    if (stop_reason != nullptr && ran)
      *stop_reason = ToCReport(session->chat->report()).stop_reason;
    return st;
  });
}

qwenrt_status qwenrt_session_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                  const qwenrt_sampling_params* sampling,
                                  const qwenrt_generate_params* params, qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    QWENRT_RETURN_IF_ERROR(CheckReport(report));
    GenerateRequest gen;
    QWENRT_RETURN_IF_ERROR(ReadGenerate(sampling, params, &gen));  // before feeding: fail early
    AddSessionOptions(*session, &gen);
    ChatRequest request;
    QWENRT_RETURN_IF_ERROR(ReadChat(chat, &request));
    Status st = session->chat->Chat(request, gen);
    Status w = WriteReport(session, report);
    return st.ok() ? w : st;
  });
}

qwenrt_status qwenrt_session_get_reply(const qwenrt_session* session, qwenrt_piece_kind kind,
                                       char* buf, size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_CAPI_ENTER(session);
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0)
      return InvalidArgument("buf is NULL but capacity is {}", capacity);
    const ChatState& st = session->chat->state();
    switch (EnumValue(kind)) {
      case QWENRT_PIECE_CONTENT:
        return CopyString(st.reply_content, buf, capacity, needed);
      case QWENRT_PIECE_REASONING:
        return CopyString(st.reply_reasoning, buf, capacity, needed);
      case QWENRT_PIECE_TOOL_CALL:
        return CopyString(st.reply_tool_calls, buf, capacity, needed);
    }
    return InvalidArgument("kind {} is not a qwenrt_piece_kind", EnumValue(kind));
  });
}

qwenrt_status qwenrt_engine_create(qwenrt_model* model, const qwenrt_engine_params* params,
                                   qwenrt_engine** out_engine) {
  return Guard(__func__, [&]() -> Status {
    if (out_engine == nullptr) return InvalidArgument("out_engine is NULL");
    *out_engine = nullptr;
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    qwenrt_engine_params p;
    QWENRT_RETURN_IF_ERROR(ReadParams(params, DefaultEngineParams(), &p,
                                      {QWENRT_FIELD(qwenrt_engine_params, n_threads),
                                       QWENRT_FIELD(qwenrt_engine_params, step_tokens),
                                       QWENRT_FIELD(qwenrt_engine_params, max_sessions)},
                                      "params", "qwenrt_engine_params"));
    EngineParams ep;
    ep.n_threads = p.n_threads;
    ep.step_tokens = p.step_tokens;
    ep.max_sessions = p.max_sessions;
    auto h = std::make_unique<qwenrt_engine>();
    h->model = model->model;
    QWENRT_ASSIGN_OR_RETURN(h->engine, Engine::Create(h->model, ep));
    RegisterHandle(h.get(), HandleKind::kEngine);
    *out_engine = h.release();
    return OkStatus();
  });
}

void qwenrt_engine_free(qwenrt_engine* engine) {
  GuardValue(__func__, 0, [&]() {
    // Outside the registry lock: ending the turns releases their sessions, which takes it.
    if (engine != nullptr && UnregisterHandle(engine, HandleKind::kEngine)) delete engine;
    return 0;
  });
}

qwenrt_status qwenrt_engine_submit_chat(qwenrt_engine* engine, qwenrt_session* session,
                                        const qwenrt_chat* chat,
                                        const qwenrt_sampling_params* sampling,
                                        const qwenrt_generate_params* params) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(engine, HandleKind::kEngine, "engine"));
    GenerateRequest gen;
    QWENRT_RETURN_IF_ERROR(ReadGenerate(sampling, params, &gen));
    ChatRequest request;
    QWENRT_RETURN_IF_ERROR(ReadChat(chat, &request));
    // Take the session for the engine: one call, owned by no thread, until the turn ends.
    QWENRT_RETURN_IF_ERROR(
        WithLiveHandle(session, HandleKind::kSession, "session", [&]() -> Status {
          if (session->calls > 0) {
            return InvalidArgument("session is busy: a call or an engine turn is running on it");
          }
          if (session->turn != nullptr) {
            return InvalidArgument(
                "the session's last engine turn was not collected (qwenrt_session_wait_turn)");
          }
          ++session->calls;
          session->owner = std::thread::id();
          return OkStatus();
        }));
    AddSessionOptions(*session, &gen);
    StatusOr<std::shared_ptr<EngineTurn>> t = engine->engine->Submit(
        *session->chat, request, gen, [session] { ReleaseEngineTurn(session); });
    if (!t.ok()) {
      ReleaseEngineTurn(session);
      return t.status();
    }
    WithRegistryLock([&] { session->turn = *t; });
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_wait_turn(qwenrt_session* session, qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckReport(report));
    std::shared_ptr<EngineTurn> t;
    QWENRT_RETURN_IF_ERROR(
        WithLiveHandle(session, HandleKind::kSession, "session", [&]() -> Status {
          t = session->turn;
          if (t == nullptr) return InvalidArgument("the session has no submitted engine turn");
          return OkStatus();
        }));
    const Status st = t->Wait();
    QWENRT_RETURN_IF_ERROR(
        WithLiveHandle(session, HandleKind::kSession, "session", [&]() -> Status {
          if (session->turn == t) session->turn.reset();
          return OkStatus();
        }));
    const Status w = WriteReport(session, report);
    return st.ok() ? w : st;
  });
}

qwenrt_status qwenrt_session_turn_done(const qwenrt_session* session, bool* done) {
  return Guard(__func__, [&]() -> Status {
    if (done == nullptr) return InvalidArgument("done is NULL");
    return WithLiveHandle(session, HandleKind::kSession, "session", [&]() -> Status {
      if (session->turn == nullptr) {
        return InvalidArgument("the session has no submitted engine turn");
      }
      *done = session->turn->done();
      return OkStatus();
    });
  });
}

}  // extern "C"
