// The chat engine (see chat_session.h): feeding with the checkpoint policy and the report, the
// generation loop with its sampler, reply stream and stop reasons, and the chat state of fork,
// save and load.
#include "chat/chat_session.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "chat/constraint/matcher.h"

namespace qwenrt {
namespace {

constexpr size_t kMaxPendingCheckpoints = 256;

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The sampler of one generation, reseeded from `p.seed` each time. The penalty window starts with
// the end of the transcript (the prompt, and earlier replies), as if those tokens had been sampled:
// the one penalty-window rule.
StatusOr<Sampler> MakeReplySampler(const SamplerParams& p, const Tokenizer& tokenizer,
                                   std::span<const int32_t> history) {
  QWENRT_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(p, tokenizer.n_vocab()));
  QWENRT_RETURN_IF_ERROR(sampler.SetBanned(tokenizer.unused_ids()));
  const size_t window = static_cast<size_t>(std::max(p.penalty_last_n, 0));
  const size_t from = history.size() > window ? history.size() - window : 0;
  for (size_t i = from; i < history.size(); ++i) sampler.Accept(history[i]);
  return sampler;
}

// The request's token counts: max_tokens >= -1, max_reasoning_tokens >= 0.
Status CheckLengths(const GenerateRequest& r) {
  if (r.max_tokens < -1)
    return InvalidArgument("max_tokens is {} (-1 = until the context is full)", r.max_tokens);
  if (r.max_reasoning_tokens < 0) {
    return InvalidArgument("max_reasoning_tokens is {} (0 = no limit)", r.max_reasoning_tokens);
  }
  return OkStatus();
}

// The one token a mask allows, or -1 (none or several).
int32_t OnlyToken(const std::vector<uint32_t>& mask) {
  int32_t only = -1;
  for (size_t w = 0; w < mask.size(); ++w) {
    if (mask[w] == 0) continue;
    if (only >= 0 || (mask[w] & (mask[w] - 1)) != 0) return -1;
    only = static_cast<int32_t>(w * 32) + __builtin_ctz(mask[w]);
  }
  return only;
}

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kEndOfGeneration:
      return "eog";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kStopString:
      return "stop_string";
    case StopReason::kCallback:
      return "callback";
    case StopReason::kContextFull:
      return "context_full";
  }
  return "none";
}

// Holds the busy flag for one call; a nested or concurrent call sees it taken.
class ChatSession::BusyScope {
 public:
  BusyScope(const ChatSession& s, const char* what) : s_(s) {
    if (s_.busy_.exchange(true)) {
      status_ = InvalidArgument(
          "{}: the session is busy (a call on it is running: from another thread, or this "
          "is a call from inside its own callback)",
          what);
      owns_ = false;
    }
  }
  ~BusyScope() {
    if (owns_) s_.busy_.store(false);
  }
  const Status& status() const { return status_; }

 private:
  const ChatSession& s_;
  Status status_;
  bool owns_ = true;
};

#define QWENRT_CHAT_BUSY(what)       \
  BusyScope busy_scope(*this, what); \
  QWENRT_RETURN_IF_ERROR(busy_scope.status())

StatusOr<std::unique_ptr<ChatSession>> ChatSession::Create(std::shared_ptr<const ChatModel> model,
                                                           ChatSessionParams params) {
  if (model == nullptr) return InvalidArgument("ChatSession: model is null");
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                          Session::Create(model->model(), params.session));
  return std::unique_ptr<ChatSession>(
      new ChatSession(std::move(model), std::move(params), std::move(session)));
}

ChatSession::ChatSession(std::shared_ptr<const ChatModel> model, ChatSessionParams params,
                         std::unique_ptr<Session> session)
    : model_(std::move(model)), params_(std::move(params)), session_(std::move(session)) {
  report_.feed.checkpoint_pos = -1;
}

Status ChatSession::TakeCancel(const char* when) {
  if (cancel_.exchange(false)) return Cancelled("cancelled by qwenrt_session_cancel {}", when);
  return OkStatus();
}

void ChatSession::RefreshMemory() {
  report_.n_checkpoints = static_cast<int64_t>(session_->checkpoints().size());
  report_.checkpoint_bytes = session_->checkpoint_bytes();
  report_.state_bytes = session_->kv_bytes() + session_->state_bytes();
}

// Feeds `tokens` asking for checkpoints at the pending positions plus `boundaries`; fills the
// report.
Status ChatSession::FeedPlanned(std::span<const int32_t> tokens,
                                std::span<const int64_t> boundaries) {
  QWENRT_RETURN_IF_ERROR(TakeCancel("before the feed started"));
  std::vector<int64_t> positions(pending_checkpoints_.begin(), pending_checkpoints_.end());
  positions.insert(positions.end(), boundaries.begin(), boundaries.end());
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  FeedOptions options;
  options.checkpoint_positions = positions;
  options.cancel = &cancel_;
  const auto t0 = std::chrono::steady_clock::now();
  FeedReport fr;
  Status st = session_->Feed(tokens, options, &fr);
  if (st.code() == StatusCode::kCancelled) cancel_.store(false);  // the request was honoured
  const double ms = MsSince(t0);
  // These errors are refused before the state is touched (Session::Feed): everything stays.
  const StatusCode code = st.code();
  if (code == StatusCode::kInvalidArgument || code == StatusCode::kContextFull ||
      code == StatusCode::kOutOfMemory) {
    return st;
  }
  // Otherwise the transcript no longer ends with a chat reply the bookkeeping knows.
  state_.ClearHistory();
  if (!st.ok()) return st;

  // Requested positions that now hold a checkpoint are done; the others wait for a later feed.
  std::vector<int64_t> held;
  for (const CheckpointInfo& c : session_->checkpoints()) held.push_back(c.pos);
  std::erase_if(pending_checkpoints_,
                [&](int64_t p) { return std::binary_search(held.begin(), held.end(), p); });

  report_ = TurnReport();
  report_.feed = fr;
  report_.prefill_ms = ms;
  report_.ttft_ms = ms;
  RefreshMemory();
  report_line_ = FormatFeedLine(fr);
  if (params_.log) params_.log(report_line_);
  return OkStatus();
}

StatusOr<TurnPlan> ChatSession::PlanChat(const ChatRequest& request) const {
  return PlanTurn(*model_, request, params_.history, state_, session_->transcript());
}

Status ChatSession::FeedChat(const ChatRequest& request) {
  QWENRT_CHAT_BUSY("FeedChat");
  return FeedChatLocked(request);
}

Status ChatSession::FeedChatLocked(const ChatRequest& request) {
  QWENRT_ASSIGN_OR_RETURN(TurnPlan plan, PlanChat(request));
  QWENRT_RETURN_IF_ERROR(FeedPlanned(plan.tokens, plan.checkpoints));
  state_.ClearReply();
  state_.assistants_fed = CountAssistants(request.messages);
  state_.tools = request.tools;
  return OkStatus();
}

Status ChatSession::FeedTokens(std::span<const int32_t> tokens) {
  QWENRT_CHAT_BUSY("FeedTokens");
  if (tokens.empty()) return InvalidArgument("the token sequence is empty");
  QWENRT_RETURN_IF_ERROR(FeedPlanned(tokens, {}));
  state_.ClearReply();
  return OkStatus();
}

Status ChatSession::Generate(const GenerateRequest& request) {
  QWENRT_CHAT_BUSY("Generate");
  return GenerateLocked(request);
}

Status ChatSession::Chat(const ChatRequest& request, const GenerateRequest& gen) {
  QWENRT_CHAT_BUSY("Chat");
  // Fail before feeding when the generation could not start anyway.
  QWENRT_RETURN_IF_ERROR(Sampler::Create(gen.sampling, model_->tokenizer().n_vocab()).status());
  QWENRT_RETURN_IF_ERROR(CheckLengths(gen));
  QWENRT_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, ReplyGrammar(gen, request.tools));
  QWENRT_RETURN_IF_ERROR(FeedChatLocked(request));
  return GenerateLocked(gen, &grammar);
}

StatusOr<std::shared_ptr<const Grammar>> ChatSession::ReplyGrammar(
    const GenerateRequest& request, const nlohmann::ordered_json& tools) const {
  const ToolChoiceMode mode = request.tool_choice.mode;
  if (mode == ToolChoiceMode::kFree || mode == ToolChoiceMode::kNone) return request.constraint;
  if (request.constraint != nullptr) {
    return InvalidArgument("tool_choice {} and a constraint exclude each other",
                           ToolChoiceModeName(mode));
  }
  const Tokenizer::SpecialIds& ids = model_->tokenizer().special_ids();
  return ToolCallGrammar(tools, request.tool_choice, ids.tool_call, ids.tool_call_end);
}

Status ChatSession::GenerateLocked(const GenerateRequest& request,
                                   const std::shared_ptr<const Grammar>* tool_grammar) {
  Session& session = *session_;
  if (session.size() == 0)
    return InvalidArgument("the session holds no tokens: feed a prompt first");
  if (session.last_logits().empty())
    return InvalidArgument("no logits for the last position: feed first");
  QWENRT_RETURN_IF_ERROR(CheckLengths(request));
  QWENRT_RETURN_IF_ERROR(TakeCancel("before the generation started"));
  const Tokenizer& tok = model_->tokenizer();
  const bool chat = state_.assistants_fed >= 0;
  std::shared_ptr<const Grammar> grammar;
  if (tool_grammar != nullptr) {
    grammar = *tool_grammar;
  } else {
    QWENRT_ASSIGN_OR_RETURN(grammar,
                            ReplyGrammar(request, chat ? state_.tools : nlohmann::ordered_json()));
  }
  state_.ClearReply();

  const int64_t requested = request.max_tokens;
  const int64_t room = session.max_context() - session.size();
  const int64_t limit = requested < 0 ? room : std::min<int64_t>(requested, room);
  report_.generated_tokens = 0;
  report_.reasoning_tokens = 0;
  report_.reasoning_budget_hit = false;
  report_.stop_reason = StopReason::kNone;
  if (limit <= 0) {
    report_.stop_reason = requested == 0 ? StopReason::kMaxTokens : StopReason::kContextFull;
    return OkStatus();
  }

  ReplyStream stream(tok, ReplyStream::EndsInsideThink(tok, session.transcript()),
                     request.stop_strings, chat ? state_.tools : nlohmann::ordered_json(),
                     [&](PieceKind kind, std::string_view text) {
                       return request.on_piece == nullptr || request.on_piece(kind, text);
                     });
  QWENRT_ASSIGN_OR_RETURN(Sampler sampler,
                          MakeReplySampler(request.sampling, tok, session.transcript()));
  const int32_t tool_call_id = tok.special_ids().tool_call;
  if (request.tool_choice.mode == ToolChoiceMode::kNone && tool_call_id >= 0) {
    std::vector<int32_t> banned(tok.unused_ids().begin(), tok.unused_ids().end());
    banned.push_back(tool_call_id);
    QWENRT_RETURN_IF_ERROR(sampler.SetBanned(banned));
  }
  Status sampler_error;
  // Tokens fed without sampling: the close of the reasoning when the thinking budget runs out.
  std::vector<int32_t> forced;
  size_t next_forced = 0;
  bool last_forced = false;  // the token being handled is markup the engine fed, not output
  int64_t reasoning_tokens = 0;
  int64_t forced_tokens = 0;
  bool budget_hit = false;
  const int64_t budget = request.max_reasoning_tokens;
  // The constraint's matcher: it sees every content token, none of the reasoning. A grammar with
  // special tokens (tool calls) also takes a <tool_call> that ends the reasoning. tool_choice
  // auto: the matcher starts at the <tool_call> the model samples.
  std::optional<Matcher> matcher;
  std::vector<uint32_t> mask;
  if (grammar != nullptr) {
    QWENRT_ASSIGN_OR_RETURN(std::shared_ptr<const TokenTrie> trie, model_->token_trie());
    matcher.emplace(grammar, std::move(trie));
  }
  bool matching = matcher.has_value() && request.tool_choice.mode != ToolChoiceMode::kAuto;
  const bool takes_tool_call = grammar != nullptr && !grammar->special_tokens().empty();
  const auto constrained = [&] { return matching && !stream.in_reasoning(); };

  const auto t0 = std::chrono::steady_clock::now();
  auto t_first = t0;
  bool first = true;
  GenerateOptions go;
  go.max_tokens = limit;
  go.sampler = [&](const float* logits, int64_t n) -> int32_t {
    if (next_forced == forced.size() && budget > 0 && !budget_hit && stream.in_reasoning() &&
        reasoning_tokens >= budget) {
      budget_hit = true;
      tok.Encode("\n</think>\n\n", SpecialTokens::kAll, &forced);  // as the template closes it
    }
    int32_t id;
    last_forced = next_forced < forced.size();
    if (last_forced) {
      id = forced[next_forced++];
    } else {
      const uint32_t* allowed = nullptr;
      if (constrained()) {
        matcher->FillMask(&mask);
        mask.resize(static_cast<size_t>((n + 31) / 32), 0u);
        if (matcher->CanEnd()) {
          for (int32_t e : tok.eog_ids()) mask[static_cast<size_t>(e) >> 5] |= 1u << (e & 31);
        }
        if (std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; })) {
          sampler_error =
              InternalError("constraint: no token can continue the output{}",
                            matcher->failed() ? " (the matcher exceeded its memory limits)" : "");
          return -1;
        }
        allowed = mask.data();
      }
      const int32_t only = allowed != nullptr ? OnlyToken(mask) : -1;
      if (only >= 0) {
        id = only;  // forced by the constraint: every sampler would draw it (greedy: the argmax)
        ++forced_tokens;
      } else {
        StatusOr<int32_t> sampled =
            sampler.Sample(std::span<const float>(logits, static_cast<size_t>(n)), allowed);
        if (!sampled.ok()) {
          sampler_error = sampled.status();
          return -1;  // stops Session::Generate; reported below
        }
        id = *sampled;
      }
    }
    sampler.Accept(id);
    return id;
  };
  go.stop_tokens = tok.eog_ids();
  go.cancel = &cancel_;
  go.on_token = [&](int32_t token) {
    if (first) {
      first = false;
      t_first = std::chrono::steady_clock::now();
    }
    if (tok.IsEog(token)) return false;
    const bool opens_call = takes_tool_call && token == tool_call_id;
    if (opens_call && !last_forced) matching = true;  // auto: the call is constrained from here
    if (!last_forced && (constrained() || (matching && opens_call)) &&
        !matcher->Accept(token)) {  // the mask allowed it
      sampler_error = InternalError("constraint: token {} is not allowed here", token);
      return false;
    }
    const bool reasoning = stream.in_reasoning() || token == tok.special_ids().think;
    const bool go_on = stream.Push(token);
    if (reasoning) ++reasoning_tokens;  // the closing </think> counts, the opening <think> too
    return go_on;
  };
  std::vector<int32_t> out;
  GenerateReport gr;
  Status st = session.Generate(go, &out, &gr);
  if (st.code() == StatusCode::kCancelled) cancel_.store(false);
  if (!sampler_error.ok()) st = sampler_error;
  if (st.code() == StatusCode::kContextFull) st = OkStatus();  // a full context ends the reply
  if (st.ok() || st.code() == StatusCode::kCancelled) stream.Finish();

  if (chat) {  // the transcript now holds this reply exactly
    state_.transcript_assistants = state_.assistants_fed + 1;
    state_.transcript_reply_end = session.size();
  }
  state_.reply_content = stream.content();
  state_.reply_reasoning = stream.reasoning();
  state_.reply_tool_calls = stream.tool_calls_json();
  TurnReport& r = report_;
  r.generated_tokens =
      gr.n_sampled - (gr.hit_stop ? 1 : 0);  // the end token is not part of the reply
  r.reasoning_tokens = reasoning_tokens;
  r.reasoning_budget_hit = budget_hit;
  r.forced_tokens = forced_tokens;
  if (gr.hit_stop) {
    r.stop_reason = StopReason::kEndOfGeneration;
  } else if (stream.stopped_by_string()) {
    r.stop_reason = StopReason::kStopString;
  } else if (stream.stopped_by_sink()) {
    r.stop_reason = StopReason::kCallback;
  } else if (requested >= 0 && gr.n_sampled >= requested) {
    r.stop_reason = StopReason::kMaxTokens;
  } else {
    r.stop_reason = StopReason::kContextFull;
  }
  const double total_ms = MsSince(t0);
  const double first_ms =
      first ? total_ms : std::chrono::duration<double, std::milli>(t_first - t0).count();
  r.ttft_ms = r.prefill_ms + first_ms;
  r.decode_ms = total_ms - first_ms;
  r.decode_tokens_per_s =
      gr.n_sampled >= 2 && r.decode_ms > 0 ? (gr.n_sampled - 1) * 1000.0 / r.decode_ms : 0.0;
  RefreshMemory();
  return st;
}

Status ChatSession::CheckpointAt(int64_t pos) {
  QWENRT_CHAT_BUSY("CheckpointAt");
  if (pos < 1)
    return InvalidArgument("pos {} is not a position (>= 1: the state after pos tokens)", pos);
  if (pos == session_->size()) {
    QWENRT_RETURN_IF_ERROR(session_->Checkpoint());
    RefreshMemory();
    return OkStatus();
  }
  auto& p = pending_checkpoints_;
  if (std::find(p.begin(), p.end(), pos) == p.end()) {
    if (p.size() >= kMaxPendingCheckpoints) p.erase(p.begin());
    p.push_back(pos);
  }
  return OkStatus();
}

Status ChatSession::SetCheckpointBudget(int64_t bytes) {
  QWENRT_CHAT_BUSY("SetCheckpointBudget");
  session_->set_checkpoint_budget(bytes);
  params_.session.checkpoint_budget_bytes = bytes;
  RefreshMemory();
  return OkStatus();
}

Status ChatSession::Reset() {
  QWENRT_CHAT_BUSY("Reset");
  session_->Reset();
  cancel_.store(false);
  pending_checkpoints_.clear();
  report_ = TurnReport();
  report_.feed.checkpoint_pos = -1;
  report_line_.clear();
  state_ = ChatState();
  return OkStatus();
}

StatusOr<std::unique_ptr<ChatSession>> ChatSession::Fork() const {
  QWENRT_CHAT_BUSY("Fork");
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Session> copy, session_->Fork());
  std::unique_ptr<ChatSession> f(new ChatSession(model_, params_, std::move(copy)));
  f->report_ = report_;
  f->report_line_ = report_line_;
  f->state_ = state_;
  f->pending_checkpoints_ = pending_checkpoints_;
  return f;
}

Status ChatSession::SaveToFile(const std::string& path) const {
  QWENRT_CHAT_BUSY("SaveToFile");
  return session_->SaveToFile(path, EncodeChatState(state_));
}

StatusOr<std::vector<uint8_t>> ChatSession::SaveToMemory() const {
  QWENRT_CHAT_BUSY("SaveToMemory");
  return session_->SaveToMemory(EncodeChatState(state_));
}

// After a successful load: the saved chat state, a fresh report, no pending requests or cancel.
Status ChatSession::Restore(std::span<const uint8_t> blob) {
  QWENRT_ASSIGN_OR_RETURN(ChatState state, DecodeChatState(blob, session_->size()));
  state_ = std::move(state);
  cancel_.store(false);
  pending_checkpoints_.clear();
  report_ = TurnReport();
  report_.feed.checkpoint_pos = -1;
  report_line_.clear();
  RefreshMemory();
  return OkStatus();
}

namespace {
Status CheckChatState(std::span<const uint8_t> blob, int64_t n_tokens) {
  return DecodeChatState(blob, n_tokens).status();
}
}  // namespace

Status ChatSession::LoadFromFile(const std::string& path) {
  QWENRT_CHAT_BUSY("LoadFromFile");
  std::vector<uint8_t> blob;
  QWENRT_RETURN_IF_ERROR(session_->LoadFromFile(path, &blob, CheckChatState));
  return Restore(blob);
}

Status ChatSession::LoadFromMemory(std::span<const uint8_t> bytes) {
  QWENRT_CHAT_BUSY("LoadFromMemory");
  std::vector<uint8_t> blob;
  QWENRT_RETURN_IF_ERROR(session_->LoadFromMemory(bytes, &blob, CheckChatState));
  return Restore(blob);
}

}  // namespace qwenrt
