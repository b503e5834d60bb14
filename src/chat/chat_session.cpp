// The chat engine (see chat_session.h): feeding with the checkpoint policy and the report, the
// generation loop with its sampler, reply stream and stop reasons, and the chat state of fork,
// save and load.
#include "chat/chat_session.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "chat/constraint/matcher.h"
#include "session/mtp_draft.h"

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

// Printable ASCII as is, every other byte as \xNN (a token's bytes in an error message).
std::string Escaped(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (b >= 0x20 && b < 0x7F && c != '\\')
      out += c;
    else
      out += fmt::format("\\x{:02X}", b);
  }
  return out;
}

std::atomic<internal::ConstraintMaskHook> g_mask_hook{nullptr};

}  // namespace

namespace internal {
void SetConstraintMaskHookForTesting(ConstraintMaskHook hook) { g_mask_hook.store(hook); }
ConstraintMaskHook ConstraintMaskHookForTesting() {
  return g_mask_hook.load(std::memory_order_relaxed);
}
}  // namespace internal

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
  if (params.max_draft < 0 || params.max_draft > kMaxVerifyDraft)
    return InvalidArgument("ChatSession: max_draft {} is outside [0, {}]", params.max_draft,
                           kMaxVerifyDraft);
  if (params.max_draft > 0) params.session.mtp = true;  // the head drafts
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                          Session::Create(model->model(), params.session));
  return std::unique_ptr<ChatSession>(
      new ChatSession(std::move(model), std::move(params), std::move(session)));
}

ChatSession::ChatSession(std::shared_ptr<const ChatModel> model, ChatSessionParams params,
                         std::unique_ptr<Session> session)
    : model_(std::move(model)), params_(std::move(params)), session_(std::move(session)) {
  if (params_.max_draft > 0 && params_.adaptive_draft)
    draft_policy_ = std::make_unique<DraftLengthPolicy>(params_.max_draft);
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

// The generation of a turn: what the per-token steps share.
struct ChatTurn::Generation {
  int64_t requested = 0;  // max_tokens as asked (-1 = until the context is full)
  bool chat = false;      // the transcript ends with a chat prompt the bookkeeping knows
  std::optional<ReplyStream> stream;
  std::optional<Sampler> sampler;
  Status sampler_error;
  // Tokens fed without sampling: the close of the reasoning when the thinking budget runs out.
  std::vector<int32_t> forced;
  size_t next_forced = 0;
  bool last_forced = false;  // the token being handled is markup the engine fed, not output
  int64_t reasoning_tokens = 0;
  int64_t forced_tokens = 0;  // the only token the constraint's mask allowed: not sampled
  bool budget_hit = false;
  // The constraint's matcher: it sees every content token, none of the reasoning. A grammar with
  // special tokens (tool calls) also takes a <tool_call> that ends the reasoning. tool_choice
  // auto: the matcher starts at the <tool_call> the model samples.
  std::optional<Matcher> matcher;
  bool matching = false;
  bool takes_tool_call = false;
  int32_t tool_call_id = -1;
  std::vector<uint32_t> mask;
  std::chrono::steady_clock::time_point t0, t_first;
  bool first = true;
  GenerateOptions go;
  std::vector<int32_t> out;
  GenerateReport report;
  GenerateJob job;
  // Speculative (ChatSessionParams::max_draft > 0): the reply runs as one Session::Generate with
  // the head as draft source (alone: NextPiece runs it), `job` unused.
  MtpDraftSource draft;
  bool speculative = false;
  Status speculative_status;
};

ChatTurn::ChatTurn() = default;
ChatTurn::~ChatTurn() = default;

// Starts feeding turn.plan_ with checkpoints at the pending positions plus the plan's.
Status ChatSession::StartFeed(ChatTurn& turn) {
  QWENRT_RETURN_IF_ERROR(TakeCancel("before the feed started"));
  std::vector<int64_t>& positions = turn.positions_;
  positions.assign(pending_checkpoints_.begin(), pending_checkpoints_.end());
  positions.insert(positions.end(), turn.plan_.checkpoints.begin(), turn.plan_.checkpoints.end());
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  FeedOptions options;
  options.checkpoint_positions = positions;
  options.cancel = &cancel_;
  options.progress = params_.prefill_progress;
  turn.chat_ = this;
  turn.feed_t0_ = std::chrono::steady_clock::now();
  QWENRT_RETURN_IF_ERROR(
      session_->BeginFeed(turn.plan_.tokens, options, &turn.feed_report_, &turn.feed_));
  turn.phase_ = ChatTurn::Phase::kFeed;
  return OkStatus();
}

// Ends the feed: the report, the chat bookkeeping.
Status ChatSession::FinishFeed(ChatTurn& turn) {
  turn.phase_ = ChatTurn::Phase::kDone;
  Status st = session_->EndFeed(turn.feed_);
  if (st.code() == StatusCode::kCancelled) cancel_.store(false);  // the request was honoured
  const double ms = MsSince(turn.feed_t0_);
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

  const FeedReport& fr = turn.feed_report_;
  report_ = TurnReport();
  report_.feed = fr;
  report_.prefill_ms = ms;
  report_.ttft_ms = ms;
  RefreshMemory();
  report_line_ = FormatFeedLine(fr);
  if (params_.log) params_.log(report_line_);

  state_.ClearReply();
  if (turn.assistants_fed_ >= 0) {  // a chat prompt (FeedTokens leaves the history cleared)
    state_.assistants_fed = turn.assistants_fed_;
    state_.tools = turn.tools_;
  }
  return OkStatus();
}

StatusOr<TurnPlan> ChatSession::PlanChat(const ChatRequest& request) const {
  return PlanTurn(*model_, request, params_.history, state_, session_->transcript());
}

void ChatSession::RunAlone(ChatTurn& turn) {
  turn.alone_ = true;
  SessionPiece piece;
  while (NextPiece(turn, INT64_MAX, &piece)) {
    session_->RunPiece(piece);
    PieceDone(turn, piece);
  }
}

Status ChatSession::FeedChat(const ChatRequest& request) {
  QWENRT_CHAT_BUSY("FeedChat");
  return FeedChatLocked(request);
}

Status ChatSession::FeedChatLocked(const ChatRequest& request) {
  ChatTurn turn;
  QWENRT_ASSIGN_OR_RETURN(turn.plan_, PlanChat(request));
  turn.assistants_fed_ = CountAssistants(request.messages);
  turn.tools_ = request.tools;
  QWENRT_RETURN_IF_ERROR(StartFeed(turn));
  RunAlone(turn);
  return EndChat(turn);
}

Status ChatSession::FeedTokens(std::span<const int32_t> tokens) {
  QWENRT_CHAT_BUSY("FeedTokens");
  if (tokens.empty()) return InvalidArgument("the token sequence is empty");
  ChatTurn turn;
  turn.plan_.tokens.assign(tokens.begin(), tokens.end());
  QWENRT_RETURN_IF_ERROR(StartFeed(turn));
  RunAlone(turn);
  return EndChat(turn);
}

Status ChatSession::Generate(const GenerateRequest& request) {
  QWENRT_CHAT_BUSY("Generate");
  return GenerateLocked(request);
}

Status ChatSession::GenerateLocked(const GenerateRequest& request) {
  ChatTurn turn;
  turn.chat_ = this;
  turn.gen_ = request;
  QWENRT_RETURN_IF_ERROR(StartGenerate(turn));
  RunAlone(turn);
  return EndChat(turn);
}

Status ChatSession::Chat(const ChatRequest& request, const GenerateRequest& gen) {
  ChatTurn turn;
  QWENRT_RETURN_IF_ERROR(BeginChat(request, gen, &turn));
  // An exception on the way (bad_alloc in a callback or the stream; the C ABI's guard turns it
  // into OUT_OF_MEMORY) must not leave the session busy: the state is consistent after any piece.
  struct Release {
    ChatSession& chat;
    ChatTurn& turn;
    ~Release() { chat.ReleaseBusy(turn); }
  } release{*this, turn};
  RunAlone(turn);
  return EndChat(turn);
}

void ChatSession::ReleaseBusy(ChatTurn& turn) {
  if (turn.owns_busy_) {
    turn.owns_busy_ = false;
    busy_.store(false);
  }
}

Status ChatSession::BeginChat(const ChatRequest& request, const GenerateRequest& gen,
                              ChatTurn* turn) {
  if (turn->running()) return InvalidArgument("BeginChat: the turn is already running");
  if (busy_.load()) return BeginTurn(gen, turn);  // refused there, before planning
  // Fail before planning when the generation could not start anyway.
  QWENRT_RETURN_IF_ERROR(Sampler::Create(gen.sampling, model_->tokenizer().n_vocab()).status());
  QWENRT_RETURN_IF_ERROR(CheckLengths(gen));
  QWENRT_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, ReplyGrammar(gen, request.tools));
  StatusOr<TurnPlan> plan = PlanChat(request);
  if (!plan.ok()) return plan.status();
  turn->plan_ = std::move(plan).value();
  turn->assistants_fed_ = CountAssistants(request.messages);
  turn->tools_ = request.tools;
  turn->grammar_ = std::move(grammar);
  return BeginTurn(gen, turn);
}

StatusOr<std::shared_ptr<const Grammar>> ChatSession::ReplyGrammar(const GenerateRequest& request,
                                                                   const Json& tools) const {
  const ToolChoiceMode mode = request.tool_choice.mode;
  if (mode == ToolChoiceMode::kFree || mode == ToolChoiceMode::kNone) return request.constraint;
  if (request.constraint != nullptr) {
    return InvalidArgument("tool_choice {} and a constraint exclude each other",
                           ToolChoiceModeName(mode));
  }
  const Tokenizer::SpecialIds& ids = model_->tokenizer().special_ids();
  return ToolCallGrammar(tools, request.tool_choice, ids.tool_call, ids.tool_call_end);
}

Status ChatSession::BeginTokens(std::span<const int32_t> tokens, const GenerateRequest& gen,
                                ChatTurn* turn) {
  if (turn->running()) return InvalidArgument("BeginTokens: the turn is already running");
  if (tokens.empty()) return InvalidArgument("the token sequence is empty");
  turn->plan_ = TurnPlan();
  turn->plan_.tokens.assign(tokens.begin(), tokens.end());
  turn->assistants_fed_ = -1;
  turn->tools_ = nullptr;
  turn->grammar_.reset();
  return BeginTurn(gen, turn);
}

Status ChatSession::BeginTurn(const GenerateRequest& gen, ChatTurn* turn) {
  if (busy_.exchange(true)) {
    return InvalidArgument(
        "Chat: the session is busy (a call on it is running: from another thread, or this is a "
        "call from inside its own callback)");
  }
  turn->owns_busy_ = true;
  turn->chat_ = this;
  const auto fail = [&](Status st) {
    turn->owns_busy_ = false;
    turn->phase_ = ChatTurn::Phase::kIdle;
    busy_.store(false);
    return st;
  };
  try {  // an exception (bad_alloc) gives the flag back too: nothing has run yet
    // Fail before feeding when the generation could not start anyway.
    Status st = Sampler::Create(gen.sampling, model_->tokenizer().n_vocab()).status();
    if (st.ok()) st = CheckLengths(gen);
    if (!st.ok()) return fail(st);
    turn->then_generate_ = true;
    turn->gen_ = gen;
    st = StartFeed(*turn);
    if (!st.ok()) return fail(st);
  } catch (...) {
    (void)fail(OkStatus());
    throw;
  }
  return OkStatus();
}

bool ChatSession::NextPiece(ChatTurn& turn, int64_t max_tokens, SessionPiece* piece) {
  for (;;) {
    switch (turn.phase_) {
      case ChatTurn::Phase::kFeed: {
        if (session_->NextFeedPiece(turn.feed_, max_tokens, piece)) return true;
        turn.status_ = FinishFeed(turn);
        if (!turn.status_.ok() || !turn.then_generate_) return false;
        turn.status_ = StartGenerate(turn);
        if (!turn.status_.ok()) return false;
        break;  // kGenerate, or kDone when there is nothing to generate
      }
      case ChatTurn::Phase::kGenerate: {
        ChatTurn::Generation& g = *turn.g_;
        if (!g.speculative) return session_->NextGeneratePiece(g.job, piece);
        // A verify pass is not one of the engine's pieces: the whole reply runs here, alone (the
        // engine refuses speculating sessions at Submit, so this is the one place it runs).
        g.speculative_status =
            turn.alone_ ? session_->Generate(g.go, &g.out, &g.report)
                        : Unsupported("speculative decoding does not run in the batching engine");
        return false;
      }
      default:
        return false;
    }
  }
}

void ChatSession::PieceDone(ChatTurn& turn, const SessionPiece& piece) {
  if (turn.phase_ == ChatTurn::Phase::kFeed) {
    session_->FeedPieceDone(turn.feed_, piece);
  } else if (turn.phase_ == ChatTurn::Phase::kGenerate) {
    session_->GeneratePieceDone(turn.g_->job, piece);
  }
}

Status ChatSession::EndChat(ChatTurn& turn) {
  if (turn.phase_ == ChatTurn::Phase::kFeed) {  // ended early (an engine shutting down)
    turn.status_ = FinishFeed(turn);
  } else if (turn.phase_ == ChatTurn::Phase::kGenerate) {
    turn.status_ = FinishGenerate(turn);
  }
  turn.phase_ = ChatTurn::Phase::kIdle;
  turn.g_.reset();
  ReleaseBusy(turn);
  return turn.status_;
}

// Sets up the reply of turn.gen_ after what was fed: stream, sampler, constraint, and the
// per-token callbacks Session::Generate calls.
Status ChatSession::StartGenerate(ChatTurn& turn) {
  turn.phase_ = ChatTurn::Phase::kDone;
  const GenerateRequest& request = turn.gen_;
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
  if (turn.grammar_.has_value()) {
    grammar = *turn.grammar_;
  } else {
    QWENRT_ASSIGN_OR_RETURN(grammar, ReplyGrammar(request, chat ? state_.tools : Json()));
  }
  state_.ClearReply();

  const int64_t requested = request.max_tokens;
  const int64_t room = session.max_context() - session.size();
  const int64_t limit = requested < 0 ? room : std::min<int64_t>(requested, room);
  report_.generated_tokens = 0;
  report_.drafted_tokens = 0;
  report_.accepted_tokens = 0;
  report_.verify_passes = 0;
  report_.reasoning_tokens = 0;
  report_.reasoning_budget_hit = false;
  report_.stop_reason = StopReason::kNone;
  if (limit <= 0) {
    report_.stop_reason = requested == 0 ? StopReason::kMaxTokens : StopReason::kContextFull;
    return OkStatus();
  }

  auto g = std::make_unique<ChatTurn::Generation>();
  ChatTurn::Generation* gp = g.get();
  g->requested = requested;
  g->chat = chat;
  g->stream.emplace(tok, ReplyStream::EndsInsideThink(tok, session.transcript()),
                    request.stop_strings, g->chat ? state_.tools : Json(),
                    [&request](PieceKind kind, std::string_view text) {
                      return request.on_piece == nullptr || request.on_piece(kind, text);
                    });
  QWENRT_ASSIGN_OR_RETURN(Sampler sampler,
                          MakeReplySampler(request.sampling, tok, session.transcript()));
  g->tool_call_id = tok.special_ids().tool_call;
  if (request.tool_choice.mode == ToolChoiceMode::kNone && g->tool_call_id >= 0) {
    std::vector<int32_t> banned(tok.unused_ids().begin(), tok.unused_ids().end());
    banned.push_back(g->tool_call_id);
    QWENRT_RETURN_IF_ERROR(sampler.SetBanned(banned));
  }
  g->sampler.emplace(std::move(sampler));
  if (grammar != nullptr) {
    QWENRT_ASSIGN_OR_RETURN(std::shared_ptr<const TokenTrie> trie, model_->token_trie());
    g->matcher.emplace(grammar, std::move(trie));
  }
  g->matching = g->matcher.has_value() && request.tool_choice.mode != ToolChoiceMode::kAuto;
  g->takes_tool_call = grammar != nullptr && !grammar->special_tokens().empty();
  const int64_t budget = request.max_reasoning_tokens;
  const auto constrained = [gp] { return gp->matching && !gp->stream->in_reasoning(); };

  g->t0 = std::chrono::steady_clock::now();
  g->t_first = g->t0;
  GenerateOptions& go = g->go;
  go.max_tokens = limit;
  go.sampler = [gp, &tok, budget, constrained](const float* logits, int64_t n) -> int32_t {
    ChatTurn::Generation& s = *gp;
    if (s.next_forced == s.forced.size() && budget > 0 && !s.budget_hit &&
        s.stream->in_reasoning() && s.reasoning_tokens >= budget) {
      s.budget_hit = true;
      tok.Encode("\n</think>\n\n", SpecialTokens::kAll, &s.forced);  // as the template closes it
    }
    int32_t id;
    s.last_forced = s.next_forced < s.forced.size();
    if (s.last_forced) {
      id = s.forced[s.next_forced++];
    } else {
      const uint32_t* allowed = nullptr;
      if (constrained()) {
        s.matcher->FillMask(&s.mask);
        s.mask.resize(static_cast<size_t>((n + 31) / 32), 0u);
        if (s.matcher->CanEnd()) {
          for (int32_t e : tok.eog_ids()) s.mask[static_cast<size_t>(e) >> 5] |= 1u << (e & 31);
        }
        if (const internal::ConstraintMaskHook hook = internal::ConstraintMaskHookForTesting())
          hook(&s.mask);
        if (std::all_of(s.mask.begin(), s.mask.end(), [](uint32_t w) { return w == 0; })) {
          s.sampler_error =
              InternalError("constraint: no token can continue the output{}",
                            s.matcher->failed() ? " (the matcher exceeded its memory limits)" : "");
          return -1;
        }
        allowed = s.mask.data();
      }
      const int32_t only = allowed != nullptr ? OnlyToken(s.mask) : -1;
      if (only >= 0) {
        id = only;  // forced by the constraint: every sampler would draw it (greedy: the argmax)
      } else {
        StatusOr<int32_t> sampled =
            s.sampler->Sample(std::span<const float>(logits, static_cast<size_t>(n)), allowed);
        if (!sampled.ok()) {
          s.sampler_error = sampled.status();
          return -1;  // stops Session::Generate; reported below
        }
        id = *sampled;
      }
      // The matcher takes the token before it is evaluated, so a token it refuses (the mask let
      // it through: a bug, the mask must be exactly what Accept takes) stops the reply before it:
      // the session, sampler and stream stay as they were after the previous token.
      const bool opens_call = s.takes_tool_call && id == s.tool_call_id;
      const bool was_matching = s.matching;
      if (opens_call) s.matching = true;  // kAuto: the call is constrained from its <tool_call>
      if ((constrained() || (s.matching && opens_call)) && !tok.IsEog(id) &&
          !s.matcher->Accept(id)) {
        s.matching = was_matching;
        s.sampler_error = InternalError(
            "constraint: the mask allowed token {} ('{}') but the grammar refuses it; the reply "
            "stops before it",
            id, Escaped(tok.TokenToPiece(id, false)));
        return -1;  // not appended, not evaluated
      }
      if (only >= 0) ++s.forced_tokens;
    }
    s.sampler->Accept(id);
    return id;
  };
  go.stop_tokens = tok.eog_ids();
  go.cancel = &cancel_;
  go.on_token = [gp, &tok](int32_t token) {
    ChatTurn::Generation& s = *gp;
    if (s.first) {
      s.first = false;
      s.t_first = std::chrono::steady_clock::now();
    }
    if (tok.IsEog(token)) return false;  // the matcher took the token in the sampler
    const bool reasoning = s.stream->in_reasoning() || token == tok.special_ids().think;
    const bool go_on = s.stream->Push(token);
    if (reasoning) ++s.reasoning_tokens;  // the closing </think> counts, the opening <think> too
    return go_on;
  };
  if (params_.max_draft > 0) {
    go.max_draft = params_.max_draft;
    go.draft = &g->draft;
    go.draft_policy = draft_policy_.get();
    g->speculative = true;
  } else {
    QWENRT_RETURN_IF_ERROR(session.BeginGenerate(go, &g->out, &g->report, &g->job));
  }
  turn.g_ = std::move(g);
  turn.phase_ = ChatTurn::Phase::kGenerate;
  return OkStatus();
}

// Ends the reply: the stop reason, the chat state, the report.
Status ChatSession::FinishGenerate(ChatTurn& turn) {
  turn.phase_ = ChatTurn::Phase::kDone;
  ChatTurn::Generation& g = *turn.g_;
  Session& session = *session_;
  const GenerateReport& gr = g.report;
  Status st = g.speculative ? g.speculative_status : session.EndGenerate(g.job);
  if (st.code() == StatusCode::kCancelled) cancel_.store(false);
  if (!g.sampler_error.ok()) st = g.sampler_error;
  if (st.code() == StatusCode::kContextFull) st = OkStatus();  // a full context ends the reply
  if (st.ok() || st.code() == StatusCode::kCancelled) g.stream->Finish();

  if (g.chat) {  // the transcript now holds this reply exactly
    state_.transcript_assistants = state_.assistants_fed + 1;
    state_.transcript_reply_end = session.size();
  }
  state_.reply_content = g.stream->content();
  state_.reply_reasoning = g.stream->reasoning();
  state_.reply_tool_calls = g.stream->tool_calls_json();
  TurnReport& r = report_;
  r.generated_tokens =
      gr.n_sampled - (gr.hit_stop ? 1 : 0);  // the end token is not part of the reply
  r.reasoning_tokens = g.reasoning_tokens;
  r.reasoning_budget_hit = g.budget_hit;
  r.forced_tokens = g.forced_tokens;
  if (gr.hit_stop) {
    r.stop_reason = StopReason::kEndOfGeneration;
  } else if (g.stream->stopped_by_string()) {
    r.stop_reason = StopReason::kStopString;
  } else if (g.stream->stopped_by_sink()) {
    r.stop_reason = StopReason::kCallback;
  } else if (g.requested >= 0 && gr.n_sampled >= g.requested) {
    r.stop_reason = StopReason::kMaxTokens;
  } else {
    r.stop_reason = StopReason::kContextFull;
  }
  const double total_ms = MsSince(g.t0);
  const double first_ms =
      g.first ? total_ms : std::chrono::duration<double, std::milli>(g.t_first - g.t0).count();
  r.ttft_ms = r.prefill_ms + first_ms;
  r.decode_ms = total_ms - first_ms;
  r.decode_tokens_per_s =
      gr.n_sampled >= 2 && r.decode_ms > 0 ? (gr.n_sampled - 1) * 1000.0 / r.decode_ms : 0.0;
  r.drafted_tokens = gr.drafted;
  r.accepted_tokens = gr.accepted;
  r.verify_passes = gr.verify_passes;
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
