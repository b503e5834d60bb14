// C ABI shims for chats and generation: render a conversation, feed it (with checkpoints at the turn
// boundaries so the next turn reuses this one), generate a streamed reply split into reasoning /
// content / tool calls, and read the reply back.
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "guard.h"
#include "handle_registry.h"
#include "handles.h"
#include "qwenrt/qwenrt.h"
#include "reply_stream.h"
#include "sampling_capi.h"
#include "session_capi.h"
#include "validate.h"

namespace qwenrt::capi {
namespace {

using Json = nlohmann::ordered_json;

const char* RoleName(qwenrt_role r) {
  switch (r) {
    case QWENRT_ROLE_SYSTEM: return "system";
    case QWENRT_ROLE_USER: return "user";
    case QWENRT_ROLE_ASSISTANT: return "assistant";
    case QWENRT_ROLE_TOOL: return "tool";
  }
  return nullptr;
}

// A caller's chat, checked and converted to the template's inputs.
struct ChatInput {
  qwenrt_chat chat{};
  Json messages = Json::array();
  Json tools;  // null when absent
};

Status ParseJson(const char* text, const char* what, Json* out) {
  QWENRT_RETURN_IF_ERROR(CheckCString(text, what, false));
  *out = Json::parse(text, nullptr, false);
  if (out->is_discarded()) return InvalidArgument("{} is not valid JSON: {:.80}", what, text);
  return OkStatus();
}

Status ReadChat(const qwenrt_chat* in, ChatInput* out) {
  if (in == nullptr) return InvalidArgument("chat is NULL");
  qwenrt_chat defaults = qwenrt_chat_default();
  QWENRT_RETURN_IF_ERROR(ReadParams(in, defaults, &out->chat,
                                    {QWENRT_FIELD(qwenrt_chat, messages), QWENRT_FIELD(qwenrt_chat, n_messages),
                                     QWENRT_FIELD(qwenrt_chat, tools_json),
                                     QWENRT_FIELD(qwenrt_chat, enable_thinking),
                                     QWENRT_FIELD(qwenrt_chat, add_generation_prompt)},
                                    "chat", "qwenrt_chat"));
  const qwenrt_chat& c = out->chat;
  if (c.n_messages == 0) return InvalidArgument("the conversation is empty (chat->n_messages == 0)");
  if (c.messages == nullptr) return InvalidArgument("chat->messages is NULL but n_messages is {}", c.n_messages);
  if (c.n_messages > 1000000) return InvalidArgument("chat->n_messages {} is implausible", c.n_messages);
  if (c.tools_json != nullptr) {
    QWENRT_RETURN_IF_ERROR(ParseJson(c.tools_json, "chat->tools_json", &out->tools));
    if (!out->tools.is_array()) return InvalidArgument("chat->tools_json must be a JSON array of tools");
    if (out->tools.empty()) out->tools = nullptr;
  }
  // Messages are walked with the stride the caller's header used (see docs/c-abi.md).
  uint32_t stride = c.messages[0].struct_size;
  QWENRT_RETURN_IF_ERROR(CheckStructSize(stride, sizeof(qwenrt_message), "chat->messages[0]", "qwenrt_message"));
  const auto* base = reinterpret_cast<const unsigned char*>(c.messages);
  qwenrt_message zero{};
  zero.struct_size = sizeof zero;
  zero.role = QWENRT_ROLE_USER;
  for (size_t i = 0; i < c.n_messages; ++i) {
    const auto* raw = reinterpret_cast<const qwenrt_message*>(base + i * stride);
    if (raw->struct_size != stride) {
      return InvalidArgument("chat->messages[{}].struct_size is {} but messages[0]'s is {}", i, raw->struct_size,
                             stride);
    }
    qwenrt_message m;
    std::string what = fmt::format("chat->messages[{}]", i);
    QWENRT_RETURN_IF_ERROR(ReadParams(raw, zero, &m,
                                      {QWENRT_FIELD(qwenrt_message, role), QWENRT_FIELD(qwenrt_message, content),
                                       QWENRT_FIELD(qwenrt_message, reasoning),
                                       QWENRT_FIELD(qwenrt_message, tool_calls),
                                       QWENRT_FIELD(qwenrt_message, n_tool_calls)},
                                      what.c_str(), "qwenrt_message"));
    const int role_value = EnumValue(m.role);
    if (role_value < QWENRT_ROLE_SYSTEM || role_value > QWENRT_ROLE_TOOL) {
      return InvalidArgument("{}.role {} is not a qwenrt_role", what, role_value);
    }
    const char* role = RoleName(m.role);
    QWENRT_RETURN_IF_ERROR(CheckCString(m.content, (what + ".content").c_str(), true));
    Json msg;
    msg["role"] = role;
    msg["content"] = m.content == nullptr ? "" : m.content;
    if (m.reasoning != nullptr) {
      QWENRT_RETURN_IF_ERROR(CheckCString(m.reasoning, (what + ".reasoning").c_str(), false));
      msg["reasoning_content"] = m.reasoning;
    }
    if (m.n_tool_calls > 0) {
      if (m.tool_calls == nullptr) return InvalidArgument("{}.tool_calls is NULL but n_tool_calls is {}", what, m.n_tool_calls);
      if (m.role != QWENRT_ROLE_ASSISTANT) return InvalidArgument("{}: only assistant messages have tool calls", what);
      Json calls = Json::array();
      for (size_t k = 0; k < m.n_tool_calls; ++k) {
        const qwenrt_tool_call& tc = m.tool_calls[k];
        std::string w = fmt::format("{}.tool_calls[{}]", what, k);
        QWENRT_RETURN_IF_ERROR(CheckCString(tc.name, (w + ".name").c_str(), false));
        Json args = Json::object();
        if (tc.arguments_json != nullptr) {
          QWENRT_RETURN_IF_ERROR(ParseJson(tc.arguments_json, (w + ".arguments_json").c_str(), &args));
          if (!args.is_object()) return InvalidArgument("{}.arguments_json must be a JSON object", w);
        }
        Json call;
        call["type"] = "function";
        call["function"]["name"] = tc.name;
        call["function"]["arguments"] = std::move(args);
        calls.push_back(std::move(call));
      }
      msg["tool_calls"] = std::move(calls);
    }
    out->messages.push_back(std::move(msg));
  }
  return OkStatus();
}

StatusOr<std::string> Render(const ModelBundle& b, const ChatInput& in) {
  if (b.chat_template == nullptr) {
    if (!b.template_error.empty()) return Unsupported("the model's chat template cannot be used: {}", b.template_error);
    return Unsupported("the model has no chat template (tokenizer.chat_template)");
  }
  return b.chat_template->RenderChat(in.messages, in.tools, in.chat.add_generation_prompt,
                                     in.chat.enable_thinking);
}

// Checkpoint positions a chat prompt asks for: the start of every message (<|im_start|>, so that a
// change of system prompt or tools reuses what precedes it) and the point right after each
// "<|im_start|>assistant\n" (where a re-rendered history first differs from what was generated).
std::vector<int64_t> ChatBoundaries(const Tokenizer& tok, std::span<const int32_t> tokens) {
  std::vector<int64_t> out;
  const int32_t im_start = tok.special_ids().im_start;
  if (im_start < 0) return out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != im_start) continue;
    if (i > 0) out.push_back(static_cast<int64_t>(i));
    // The role line: tokens up to the first one whose text ends with a newline.
    std::string role;
    for (size_t j = i + 1; j < tokens.size() && j < i + 16; ++j) {
      role.append(tok.TokenToPiece(tokens[j]));
      if (!role.empty() && role.back() == '\n') {
        if (role == "assistant\n") out.push_back(static_cast<int64_t>(j + 1));
        break;
      }
    }
  }
  return out;
}

int64_t CountAssistants(const Json& messages) {
  int64_t n = 0;
  for (const Json& m : messages) n += m["role"] == "assistant";
  return n;
}

// Transcript history: the exact tokens of the earlier turns (prompt and generated reply, as the
// session holds them), the end token of the last reply, then what the template renders for the
// messages after that reply. nullopt when the session holds no chat reply to extend or the
// conversation does not continue it (then the whole conversation is rendered instead).
StatusOr<std::optional<std::vector<int32_t>>> TranscriptPrompt(qwenrt_session* s, const ChatInput& in,
                                                                const std::string& full) {
  const Session& session = *s->session;
  if (s->transcript_assistants < 0 || s->transcript_reply_end <= 0 ||
      s->transcript_reply_end > session.size() || CountAssistants(in.messages) < s->transcript_assistants) {
    return std::optional<std::vector<int32_t>>();
  }
  constexpr std::string_view kHeader = "<|im_start|>assistant", kEnd = "<|im_end|>\n";
  size_t pos = 0;
  for (int64_t k = 0; k < s->transcript_assistants; ++k) {
    pos = full.find(kHeader, pos);
    if (pos == std::string::npos) return std::optional<std::vector<int32_t>>();
    pos += kHeader.size();
  }
  pos = full.find(kEnd, pos);
  if (pos == std::string::npos) return std::optional<std::vector<int32_t>>();
  const Tokenizer& tok = *s->bundle->tokenizer;
  std::vector<int32_t> tokens(session.transcript().begin(), session.transcript().begin() + s->transcript_reply_end);
  tok.Encode(kEnd, SpecialTokens::kAll, &tokens);  // the reply's end token was sampled, not fed
  tok.Encode(std::string_view(full).substr(pos + kEnd.size()), SpecialTokens::kAll, &tokens);
  return std::optional<std::vector<int32_t>>(std::move(tokens));
}

Status FeedChat(qwenrt_session* s, const qwenrt_chat* chat) {
  ChatInput in;
  QWENRT_RETURN_IF_ERROR(ReadChat(chat, &in));
  QWENRT_ASSIGN_OR_RETURN(std::string text, Render(*s->bundle, in));
  std::vector<int32_t> tokens;
  if (s->params.history_mode == QWENRT_HISTORY_TRANSCRIPT) {
    QWENRT_ASSIGN_OR_RETURN(std::optional<std::vector<int32_t>> t, TranscriptPrompt(s, in, text));
    if (t) tokens = std::move(*t);
  }
  if (tokens.empty()) s->bundle->tokenizer->Encode(text, SpecialTokens::kAll, &tokens);
  if (tokens.empty()) return InvalidArgument("the conversation renders to no tokens");
  std::vector<int64_t> boundaries = ChatBoundaries(*s->bundle->tokenizer, tokens);
  FeedReport fr;
  QWENRT_RETURN_IF_ERROR(FeedTokens(s, tokens, boundaries, &fr));
  ClearReply(s);
  s->chat_assistants_fed = CountAssistants(in.messages);
  s->chat_tools = in.tools;
  return OkStatus();
}

struct GenerateInput {
  qwenrt_sampling_params sampling{};
  qwenrt_generate_params gen{};
  std::vector<std::string> stops;
};

Status ReadGenerate(const qwenrt_sampling_params* sampling, const qwenrt_generate_params* params,
                    GenerateInput* out) {
  QWENRT_RETURN_IF_ERROR(ReadSamplingParams(sampling, &out->sampling));
  QWENRT_RETURN_IF_ERROR(ReadParams(params, qwenrt_generate_default_params(), &out->gen,
                                    {QWENRT_FIELD(qwenrt_generate_params, max_tokens),
                                     QWENRT_FIELD(qwenrt_generate_params, stop_strings),
                                     QWENRT_FIELD(qwenrt_generate_params, n_stop_strings),
                                     QWENRT_FIELD(qwenrt_generate_params, callback),
                                     QWENRT_FIELD(qwenrt_generate_params, user_data)},
                                    "params", "qwenrt_generate_params"));
  const qwenrt_generate_params& g = out->gen;
  if (g.max_tokens < -1) return InvalidArgument("params->max_tokens is {} (-1 = until the context is full)", g.max_tokens);
  if (g.n_stop_strings > 0 && g.stop_strings == nullptr) {
    return InvalidArgument("params->stop_strings is NULL but n_stop_strings is {}", g.n_stop_strings);
  }
  for (size_t i = 0; i < g.n_stop_strings; ++i) {
    std::string what = fmt::format("params->stop_strings[{}]", i);
    QWENRT_RETURN_IF_ERROR(CheckCString(g.stop_strings[i], what.c_str(), false));
    out->stops.emplace_back(g.stop_strings[i]);
  }
  return OkStatus();
}

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Status Generate(qwenrt_session* s, const GenerateInput& in, qwenrt_stop_reason* stop_out) {
  Session& session = *s->session;
  if (session.size() == 0) return InvalidArgument("the session holds no tokens: feed a prompt first");
  if (session.last_logits().empty()) return InvalidArgument("no logits for the last position: feed first");
  QWENRT_RETURN_IF_ERROR(TakeCancel(s, "before the generation started"));
  const Tokenizer& tok = *s->bundle->tokenizer;
  ClearReply(s);

  const int64_t requested = in.gen.max_tokens;  // -1: until the context is full
  const int64_t room = session.max_context() - session.size();
  const int64_t limit = requested < 0 ? room : std::min<int64_t>(requested, room);
  qwenrt_report& r = s->report;
  r.generated_tokens = 0;
  r.stop_reason = QWENRT_STOP_NONE;
  if (limit <= 0) {
    r.stop_reason = requested == 0 ? QWENRT_STOP_MAX_TOKENS : QWENRT_STOP_CONTEXT_FULL;
    if (stop_out != nullptr) *stop_out = r.stop_reason;
    return OkStatus();
  }

  qwenrt_stream_callback cb = in.gen.callback;
  void* user = in.gen.user_data;
  std::string scratch;
  ReplyStream stream(tok, ReplyStream::EndsInsideThink(tok, session.transcript()), in.stops,
                     s->chat_assistants_fed >= 0 ? s->chat_tools : nlohmann::ordered_json(),
                     [&](qwenrt_piece_kind kind, std::string_view text) {
                       if (cb == nullptr) return true;
                       scratch.assign(text);  // NUL-terminated copy for the callback
                       return cb(kind, scratch.c_str(), scratch.size(), user);
                     });
  auto sampler_error = std::make_shared<Status>();
  QWENRT_ASSIGN_OR_RETURN(SamplerFn sampler, MakeSampler(in.sampling, tok, session.transcript(), sampler_error));

  auto t0 = std::chrono::steady_clock::now();
  auto t_first = t0;
  bool first = true;
  GenerateOptions go;
  go.max_tokens = limit;
  go.sampler = std::move(sampler);
  go.stop_tokens = tok.eog_ids();
  go.cancel = &s->cancel;
  go.on_token = [&](int32_t token) {
    if (first) {
      first = false;
      t_first = std::chrono::steady_clock::now();
    }
    if (tok.IsEog(token)) return false;
    return stream.Push(token);
  };
  std::vector<int32_t> out;
  GenerateReport gr;
  Status st = FinishCancellable(s, session.Generate(go, &out, &gr));
  if (!sampler_error->ok()) st = *sampler_error;
  if (st.code() == StatusCode::kContextFull) st = OkStatus();  // a full context ends the reply
  if (st.ok() || st.code() == StatusCode::kCancelled) stream.Finish();

  if (s->chat_assistants_fed >= 0) {  // the transcript now holds this reply exactly
    s->transcript_assistants = s->chat_assistants_fed + 1;
    s->transcript_reply_end = session.size();
  }
  s->reply_content = stream.content();
  s->reply_reasoning = stream.reasoning();
  s->reply_tool_calls = stream.tool_calls_json();
  r.generated_tokens = gr.n_sampled - (gr.hit_stop ? 1 : 0);  // the end token is not part of the reply
  if (gr.hit_stop) {
    r.stop_reason = QWENRT_STOP_EOG;
  } else if (stream.stopped_by_string()) {
    r.stop_reason = QWENRT_STOP_STRING;
  } else if (stream.stopped_by_sink()) {
    r.stop_reason = QWENRT_STOP_CALLBACK;
  } else if (requested >= 0 && gr.n_sampled >= requested) {
    r.stop_reason = QWENRT_STOP_MAX_TOKENS;
  } else {
    r.stop_reason = QWENRT_STOP_CONTEXT_FULL;
  }
  double total_ms = MsSince(t0);
  double first_ms = first ? total_ms : std::chrono::duration<double, std::milli>(t_first - t0).count();
  r.ttft_ms = r.prefill_ms + first_ms;
  r.decode_ms = total_ms - first_ms;
  r.decode_tokens_per_s = gr.n_sampled >= 2 && r.decode_ms > 0 ? (gr.n_sampled - 1) * 1000.0 / r.decode_ms : 0.0;
  RefreshMemory(s);
  if (stop_out != nullptr) *stop_out = r.stop_reason;
  return st;
}

}  // namespace
}  // namespace qwenrt::capi

using namespace qwenrt;        // NOLINT: shims only
using namespace qwenrt::capi;  // NOLINT

extern "C" {

qwenrt_status qwenrt_chat_render(const qwenrt_model* model, const qwenrt_chat* chat, char* buf,
                                 size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0) return InvalidArgument("buf is NULL but capacity is {}", capacity);
    ChatInput in;
    QWENRT_RETURN_IF_ERROR(ReadChat(chat, &in));
    QWENRT_ASSIGN_OR_RETURN(std::string text, Render(*model->bundle, in));
    return CopyString(text, buf, capacity, needed);
  });
}

qwenrt_status qwenrt_session_feed_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                       qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (report != nullptr) {
      QWENRT_RETURN_IF_ERROR(CheckStructSize(report->struct_size, sizeof *report, "report", "qwenrt_report"));
    }
    QWENRT_RETURN_IF_ERROR(FeedChat(session, chat));
    if (report != nullptr) return WriteOut(session->report, report, "report", "qwenrt_report");
    return OkStatus();
  });
}

qwenrt_status qwenrt_session_generate(qwenrt_session* session, const qwenrt_sampling_params* sampling,
                                      const qwenrt_generate_params* params, qwenrt_stop_reason* stop_reason) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    GenerateInput in;
    QWENRT_RETURN_IF_ERROR(ReadGenerate(sampling, params, &in));
    return Generate(session, in, stop_reason);
  });
}

qwenrt_status qwenrt_session_chat(qwenrt_session* session, const qwenrt_chat* chat,
                                  const qwenrt_sampling_params* sampling, const qwenrt_generate_params* params,
                                  qwenrt_report* report) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (report != nullptr) {
      QWENRT_RETURN_IF_ERROR(CheckStructSize(report->struct_size, sizeof *report, "report", "qwenrt_report"));
    }
    GenerateInput in;
    QWENRT_RETURN_IF_ERROR(ReadGenerate(sampling, params, &in));  // before feeding: fail early
    QWENRT_RETURN_IF_ERROR(FeedChat(session, chat));
    Status st = Generate(session, in, nullptr);
    if (report != nullptr) {
      Status w = WriteOut(session->report, report, "report", "qwenrt_report");
      if (st.ok()) st = w;
    }
    return st;
  });
}

qwenrt_status qwenrt_session_get_reply(const qwenrt_session* session, qwenrt_piece_kind kind, char* buf,
                                       size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckSession(session));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (buf == nullptr && capacity > 0) return InvalidArgument("buf is NULL but capacity is {}", capacity);
    switch (EnumValue(kind)) {
      case QWENRT_PIECE_CONTENT: return CopyString(session->reply_content, buf, capacity, needed);
      case QWENRT_PIECE_REASONING: return CopyString(session->reply_reasoning, buf, capacity, needed);
      case QWENRT_PIECE_TOOL_CALL: return CopyString(session->reply_tool_calls, buf, capacity, needed);
    }
    return InvalidArgument("kind {} is not a qwenrt_piece_kind", EnumValue(kind));
  });
}

}  // extern "C"
