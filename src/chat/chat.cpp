// The chat layer (see chat.h): prompt building per history mode, the streaming reply parser and
// the turn loop over Session::Feed / Session::Generate.
#include "chat/chat.h"

#include <algorithm>
#include <array>
#include <utility>

namespace qwenrt {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";

// The JSON-schema type of a tool parameter ("" when unknown).
std::string ParameterType(const nlohmann::ordered_json& tools, std::string_view function,
                          const std::string& parameter) {
  if (!tools.is_array()) return "";
  for (const auto& tool : tools) {
    const auto& fn = tool.contains("function") ? tool["function"] : tool;
    if (!fn.is_object() || fn.value("name", "") != function) continue;
    const auto params = fn.find("parameters");
    if (params == fn.end() || !params->is_object()) return "";
    const auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    const auto prop = props->find(parameter);
    if (prop == props->end() || !prop->is_object()) return "";
    const auto type = prop->find("type");
    return type != prop->end() && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

// A parameter value as the template would have written it back: strings verbatim, everything
// else JSON, booleans and null in Python spelling (True/False/None).
nlohmann::ordered_json ParseValue(std::string_view text, const std::string& type) {
  if (type == "string") return std::string(text);
  if (text == "True") return true;
  if (text == "False") return false;
  if (text == "None") return nullptr;
  auto parsed = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::string(text);
  return parsed;
}

nlohmann::ordered_json ToolCallJson(const ToolCall& call) {
  return {{"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

// ---- ReplyParser

ReplyParser::ReplyParser(bool in_reasoning, nlohmann::ordered_json tools)
    : state_(in_reasoning ? State::kReasoning : State::kContent), tools_(std::move(tools)) {}

bool ReplyParser::Part::Append(std::string_view s, ChatEvent::Kind kind, const ChatCallback& emit) {
  if (text.empty()) {
    while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);  // leading whitespace
  }
  if (s.empty()) return true;
  size_t last = s.size();
  while (last > 0 && IsSpace(s[last - 1])) --last;
  if (last == 0) {  // only whitespace: keep it until something follows
    pending_ws.append(s);
    return true;
  }
  std::string out = std::move(pending_ws);
  pending_ws.assign(s.substr(last));
  out.append(s.substr(0, last));
  text += out;
  return emit ? emit(ChatEvent{kind, out, nullptr}) : true;
}

bool ReplyParser::Push(std::string_view text, const ChatCallback& emit) {
  held_.append(text);
  return Process(false, emit);
}

bool ReplyParser::Finish(const ChatCallback& emit) {
  bool go = Process(true, emit);
  if (state_ == State::kToolCall) {  // never closed: keep it as text
    go = content_.Append(std::string(kToolCall) + call_text_, ChatEvent::Kind::kContent, emit) && go;
    call_text_.clear();
    state_ = State::kContent;
  }
  return go;
}

bool ReplyParser::Process(bool final, const ChatCallback& emit) {
  bool go = true;
  while (true) {
    std::array<std::string_view, 2> markers{};
    size_t n_markers = 0;
    if (state_ == State::kReasoning) markers = {kThinkEnd, kToolCall}, n_markers = 2;
    if (state_ == State::kContent) markers = {kToolCall, {}}, n_markers = 1;
    if (state_ == State::kToolCall) markers = {kToolCallEnd, {}}, n_markers = 1;
    size_t at = std::string::npos;
    std::string_view marker;
    for (size_t i = 0; i < n_markers; ++i) {
      const size_t pos = held_.find(markers[i]);
      if (pos < at) at = pos, marker = markers[i];
    }
    // Text that is surely not (part of) a marker goes to the current part.
    size_t take = at;
    if (at == std::string::npos) {
      size_t keep = 0;
      if (!final) {
        for (size_t i = 0; i < n_markers; ++i) {
          for (size_t len = std::min(markers[i].size() - 1, held_.size()); len > keep; --len) {
            if (held_.compare(held_.size() - len, len, markers[i], 0, len) == 0) {
              keep = len;
              break;
            }
          }
        }
      }
      take = held_.size() - keep;
    }
    const std::string_view before(held_.data(), take);
    switch (state_) {
      case State::kReasoning: go = reasoning_.Append(before, ChatEvent::Kind::kReasoning, emit) && go; break;
      case State::kContent: go = content_.Append(before, ChatEvent::Kind::kContent, emit) && go; break;
      case State::kToolCall: call_text_.append(before); break;
    }
    if (at == std::string::npos) {
      held_.erase(0, take);
      return go;
    }
    held_.erase(0, at + marker.size());
    if (marker == kThinkEnd) {
      state_ = State::kContent;
    } else if (marker == kToolCall) {
      state_ = State::kToolCall;
      call_text_.clear();
    } else {  // </tool_call>
      state_ = State::kContent;
      if (auto call = ParseToolCall(call_text_, tools_)) {
        calls_.push_back(std::move(*call));
        if (emit) go = emit(ChatEvent{ChatEvent::Kind::kToolCall, {}, &calls_.back()}) && go;
      } else {  // not a well-formed call: keep the text
        go = content_.Append(std::string(kToolCall) + call_text_ + std::string(kToolCallEnd),
                             ChatEvent::Kind::kContent, emit) && go;
      }
      call_text_.clear();
    }
  }
}

std::optional<ToolCall> ReplyParser::ParseToolCall(std::string_view block, const nlohmann::ordered_json& tools) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParameter = "<parameter=", kParameterEnd = "</parameter>";
  std::string_view s = Trim(block);
  if (s.substr(0, kFunction.size()) != kFunction) return std::nullopt;
  s.remove_prefix(kFunction.size());
  const size_t close = s.find('>');
  if (close == std::string_view::npos || close == 0) return std::nullopt;
  ToolCall call;
  call.name = std::string(s.substr(0, close));
  if (call.name.find_first_of("<\n") != std::string::npos) return std::nullopt;
  s.remove_prefix(close + 1);
  while (true) {
    s = Trim(s);
    if (s == kFunctionEnd) return call;
    if (s.substr(0, kParameter.size()) != kParameter) return std::nullopt;
    s.remove_prefix(kParameter.size());
    const size_t key_end = s.find('>');
    if (key_end == std::string_view::npos || key_end == 0) return std::nullopt;
    const std::string key(s.substr(0, key_end));
    s.remove_prefix(key_end + 1);
    const size_t value_end = s.find(kParameterEnd);
    if (value_end == std::string_view::npos) return std::nullopt;
    std::string_view value = s.substr(0, value_end);
    // The template writes "<parameter=K>\nVALUE\n</parameter>": drop exactly those newlines.
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    call.arguments[key] = ParseValue(value, ParameterType(tools, call.name, key));
    s.remove_prefix(value_end + kParameterEnd.size());
  }
}

// ---- Conversation

StatusOr<std::unique_ptr<Conversation>> Conversation::Create(Session& session, const Tokenizer& tokenizer,
                                                             const ChatTemplate& tmpl, ChatOptions options) {
  if (!options.tools.is_null() && !options.tools.is_array()) {
    return InvalidArgument("chat: tools must be a JSON array or null");
  }
  if (tokenizer.n_vocab() > session.n_vocab()) {
    return InvalidArgument("chat: the tokenizer has {} tokens, the model only {} logits", tokenizer.n_vocab(),
                           session.n_vocab());
  }
  if (options.max_tokens <= 0) return InvalidArgument("chat: max_tokens must be positive");
  if (tokenizer.special_ids().im_start < 0 || tokenizer.special_ids().im_end < 0) {
    return InvalidArgument("chat: the vocabulary has no <|im_start|> / <|im_end|> tokens");
  }
  QWENRT_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampling, static_cast<int32_t>(session.n_vocab())));
  if (options.ban_unused_tokens) QWENRT_RETURN_IF_ERROR(sampler.SetBanned(tokenizer.unused_ids()));
  return std::unique_ptr<Conversation>(
      new Conversation(session, tokenizer, tmpl, std::move(options), std::move(sampler)));
}

Conversation::Conversation(Session& session, const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                           ChatOptions options, Sampler sampler)
    : session_(session), tokenizer_(tokenizer), tmpl_(tmpl), options_(std::move(options)), sampler_(std::move(sampler)) {
  assistant_header_ = tokenizer_.Encode("<|im_start|>assistant", /*parse_special=*/true);
}

nlohmann::ordered_json Conversation::MessagesJson() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages_) {
    nlohmann::ordered_json j = {{"role", RoleName(m.role)}, {"content", m.content}};
    if (m.reasoning_content) j["reasoning_content"] = *m.reasoning_content;
    if (!m.tool_calls.empty()) {
      j["tool_calls"] = nlohmann::ordered_json::array();
      for (const ToolCall& c : m.tool_calls) j["tool_calls"].push_back(ToolCallJson(c));
    }
    out.push_back(std::move(j));
  }
  return out;
}

StatusOr<std::string> Conversation::RenderPrompt() const {
  return tmpl_.RenderChat(MessagesJson(), options_.tools, /*add_generation_prompt=*/true, options_.enable_thinking);
}

// The part of the full rendering that follows the last assistant message already in the
// transcript: everything after the `<|im_end|>\n` closing its block (the template renders
// earlier turns differently once a newer query exists, so the full rendering is not an extension
// of the previous prompt, but each block still ends where the next begins).
StatusOr<std::string> Conversation::RenderNewTurn() const {
  QWENRT_ASSIGN_OR_RETURN(std::string full, RenderPrompt());
  size_t assistants = 0;
  for (size_t i = 0; i < transcript_messages_; ++i) assistants += messages_[i].role == Role::kAssistant;
  constexpr std::string_view kHeader = "<|im_start|>assistant", kEnd = "<|im_end|>\n";
  size_t pos = 0;
  for (size_t k = 0; k < assistants; ++k) {
    pos = full.find(kHeader, pos);
    if (pos == std::string::npos) return InternalError("chat: transcript mode lost track of assistant turn {}", k);
    pos += kHeader.size();
  }
  pos = full.find(kEnd, pos);
  if (pos == std::string::npos) return InternalError("chat: transcript mode found no end of the last reply");
  return full.substr(pos + kEnd.size());
}

Status Conversation::BuildPrompt(std::vector<int32_t>* tokens, std::vector<int64_t>* checkpoints) const {
  tokens->clear();
  checkpoints->clear();
  if (options_.history == HistoryMode::kTranscript && !transcript_.empty()) {
    QWENRT_ASSIGN_OR_RETURN(std::string turn, RenderNewTurn());
    *tokens = transcript_;
    // Close the previous reply the way the template does (its end token was sampled, not fed).
    tokenizer_.Encode("<|im_end|>\n", SpecialTokens::kAll, tokens);
    tokenizer_.Encode(turn, SpecialTokens::kAll, tokens);
  } else {
    QWENRT_ASSIGN_OR_RETURN(std::string prompt, RenderPrompt());
    tokenizer_.Encode(prompt, SpecialTokens::kAll, tokens);
  }
  // Checkpoints just before every assistant header (the divergence point of the next turn lies
  // right after the last one) and at the end of the prompt.
  const auto& h = assistant_header_;
  for (size_t i = 0; i + h.size() <= tokens->size(); ++i) {
    if (std::equal(h.begin(), h.end(), tokens->begin() + static_cast<ptrdiff_t>(i))) {
      checkpoints->push_back(static_cast<int64_t>(i));
    }
  }
  checkpoints->push_back(static_cast<int64_t>(tokens->size()));
  return OkStatus();
}

StatusOr<ChatReply> Conversation::Reply(const ChatCallback& on_event) {
  ChatReply reply;
  std::vector<int64_t> checkpoints;
  QWENRT_RETURN_IF_ERROR(BuildPrompt(&reply.prompt_tokens, &checkpoints));
  FeedOptions feed = options_.feed;
  feed.checkpoint_positions = checkpoints;
  QWENRT_RETURN_IF_ERROR(session_.Feed(reply.prompt_tokens, feed, &reply.feed_report));
  if (options_.keep_prompt_logits) {
    const std::span<const float> logits = session_.last_logits();
    reply.prompt_logits.assign(logits.begin(), logits.end());
  }

  // Penalties look at the end of the prompt too, as the peer's server does.
  sampler_.ClearWindow();
  const size_t n_prompt = reply.prompt_tokens.size();
  const size_t window = static_cast<size_t>(options_.sampling.penalty_last_n);
  for (size_t i = n_prompt - std::min(window, n_prompt); i < n_prompt; ++i) sampler_.Accept(reply.prompt_tokens[i]);

  // The prompt opened a think block (thinking on) when it ends with "<think>\n".
  const std::string_view prompt_end = "<think>\n";
  const std::string prompt_tail = tokenizer_.Decode(
      std::span<const int32_t>(reply.prompt_tokens).last(std::min<size_t>(n_prompt, 4)), true);
  const bool in_reasoning = prompt_tail.size() >= prompt_end.size() &&
                            prompt_tail.compare(prompt_tail.size() - prompt_end.size(), prompt_end.size(), prompt_end) == 0;

  ReplyParser parser(in_reasoning, options_.tools);
  StopStrings stops(options_.stop_strings);
  StreamDecoder stream(tokenizer_);
  std::string text, visible;
  text.reserve(256);
  visible.reserve(256);
  bool callback_stop = false;

  GenerateOptions gen;
  gen.max_tokens = options_.max_tokens;
  gen.stop_tokens = tokenizer_.eog_ids();
  gen.cancel = options_.cancel;
  gen.sampler = [this](const float* logits, int64_t n_vocab) -> int32_t {
    auto id = sampler_.Sample(std::span<const float>(logits, static_cast<size_t>(n_vocab)));
    return id.ok() ? *id : -1;
  };
  gen.on_token = [&](int32_t id) {
    sampler_.Accept(id);
    if (tokenizer_.IsEog(id)) return true;
    text.clear();
    visible.clear();
    stream.Push(id, &text);
    const bool stop_hit = stops.Push(text, &visible);
    if (!parser.Push(visible, on_event)) callback_stop = true;
    return !stop_hit && !callback_stop;
  };
  Status st = session_.Generate(gen, &reply.tokens, &reply.generate_report);
  const bool cancelled = st.code() == StatusCode::kCancelled;
  if (!st.ok() && !cancelled) return st;
  // Drain what the decoder and the stop matcher still hold.
  text.clear();
  visible.clear();
  if (!stops.stopped()) {
    stream.Flush(&text);
    stops.Push(text, &visible);
    stops.Flush(&visible);
  }
  parser.Push(visible, on_event);
  parser.Finish(on_event);

  if (reply.generate_report.hit_stop) {
    reply.finish_reason = "stop";
  } else if (stops.stopped()) {
    reply.finish_reason = "stop_string";
  } else if (callback_stop || cancelled) {
    reply.finish_reason = "cancelled";
  } else {
    reply.finish_reason = "length";
  }
  reply.content = parser.content();
  reply.reasoning_content = parser.reasoning();
  reply.tool_calls = parser.tool_calls();

  ChatMessage message{Role::kAssistant, reply.content, std::nullopt, reply.tool_calls};
  if (!reply.reasoning_content.empty()) message.reasoning_content = reply.reasoning_content;
  messages_.push_back(std::move(message));
  transcript_ = session_.transcript();
  transcript_messages_ = messages_.size();
  return reply;
}

}  // namespace qwenrt
