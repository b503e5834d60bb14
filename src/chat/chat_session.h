// ChatSession: the one chat engine. It drives a Session the way the C ABI promises: the host sends
// the whole conversation each turn (ChatRequest); the turn planner turns it into prompt tokens and
// checkpoint positions (turn_planner.h); the Session prefills only what it does not already hold;
// the reply streams through the one reply splitter (reply_stream.h) as reasoning / content /
// tool-call pieces; and the turn's report (reuse, checkpoints, stop reason, timings) is kept for
// the host to read. `qwenrt_session` is a ChatSession; `chat_repl` and C++ hosts run this same
// code.
//
//   QWENRT_ASSIGN_OR_RETURN(auto chat, ChatSession::Create(chat_model, {}));
//   ChatRequest req;  req.messages = {{Role::kUser, "Hello"}};
//   GenerateRequest gen;  gen.on_piece = [](PieceKind k, std::string_view text) { ...; return true;
//   }; QWENRT_RETURN_IF_ERROR(chat->Chat(req, gen));       // turn 1
//   req.messages.push_back({Role::kAssistant, chat->state().reply_content});
//   req.messages.push_back({Role::kUser, "More"});
//   QWENRT_RETURN_IF_ERROR(chat->Chat(req, gen));       // turn 2: reuses turn 1
//
// Thread safety: one thread at a time per ChatSession. Cancel() may be called from any thread
// while another runs a call. A call made while another is running on the same ChatSession (from
// another thread, or from inside a streaming callback) is refused with InvalidArgument and changes
// nothing (the busy flag).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_model.h"
#include "chat/chat_state.h"
#include "chat/constraint/grammar.h"
#include "chat/constraint/tool_grammar.h"
#include "chat/messages.h"
#include "chat/reply_stream.h"
#include "chat/sampler.h"
#include "chat/turn_planner.h"
#include "session/draft_policy.h"
#include "session/session.h"
#include "text/json.h"

namespace qwenrt {

struct ChatSessionParams {
  SessionParams session;  // backend, threads, context, checkpoint budget, ...
  HistoryMode history = HistoryMode::kTemplate;
  // One line per feed (FormatFeedLine), called on the session's thread. May be null.
  std::function<void(const std::string&)> log;
  // Passed to every Feed as FeedOptions::progress (done, total per prefill batch; false cancels
  // like Cancel()). May be null.
  std::function<bool(int64_t done, int64_t total)> prefill_progress;
  // Speculative decoding with the model's MTP head (docs/speculative.md): up to this many drafts
  // per verify pass, 0 = off. > 0 creates the session with SessionParams::mtp (InvalidArgument when
  // the model has no MTP block). Every reply is then bit for bit the reply without it (greedy or
  // seeded sampling, constraints, tool choice, reasoning budget, stop strings, cancel).
  // At most kMaxVerifyDraft. Run alone only: the batching engine refuses such a session.
  int64_t max_draft = 0;
  // With max_draft > 0: each verify pass drafts 0..max_draft tokens, as the session's
  // DraftLengthPolicy finds fastest from the acceptance and pass costs it has measured (so
  // speculation that does not pay falls back to plain decoding); false: max_draft every pass.
  bool adaptive_draft = true;
};

// Why a generation ended.
enum class StopReason {
  kNone,             // no generation yet
  kEndOfGeneration,  // the model produced an end-of-generation token (not part of the reply)
  kMaxTokens,
  kStopString,
  kCallback,     // the piece callback returned false
  kContextFull,  // the session's context is full
};
const char* StopReasonName(StopReason reason);  // "none", "eog", "max_tokens", "stop_string", ...

struct GenerateRequest {
  SamplerParams sampling;    // greedy by default
  int64_t max_tokens = 512;  // -1 = until the context is full
  std::vector<std::string> stop_strings;
  // Thinking budget: at most this many reasoning tokens, then "\n</think>\n\n" is fed without
  // sampling and the answer follows (TurnReport::reasoning_budget_hit). 0 = no limit.
  int64_t max_reasoning_tokens = 0;
  // The reply's content must match this grammar (GBNF, JSON Schema or regex, compiled once and
  // shared): tokens it cannot continue with are masked after the penalties, and the end of
  // generation is allowed only where it accepts. Reasoning is free; the constraint starts after
  // </think> (or at the start when thinking is off). Null = free text.
  std::shared_ptr<const Grammar> constraint;
  // With the chat's tools: kNone never samples <tool_call>; kAuto constrains each call from the
  // <tool_call> the model opens (ToolCallGrammar); kRequired / kFunction constrain the whole
  // content to calls. kAuto / kRequired / kFunction exclude `constraint` (InvalidArgument).
  // kFree (default): tool calls are not constrained.
  ToolChoice tool_choice;
  // Each piece as it streams (text valid during the call); false stops the reply. May be null.
  std::function<bool(PieceKind kind, std::string_view text)> on_piece;
};

// What the last step did (a feed and the generation that followed it).
struct TurnReport {
  FeedReport feed;            // prompt, common prefix, reused, prefilled, checkpoint, miss reason
  int64_t n_checkpoints = 0;  // held after the step
  uint64_t checkpoint_bytes = 0;
  uint64_t state_bytes = 0;      // KV cache + recurrent state
  int64_t generated_tokens = 0;  // after the feed (the end token not counted)
  StopReason stop_reason = StopReason::kNone;
  double prefill_ms = 0;  // the feed's wall time
  double ttft_ms = 0;     // feed + first sampled token
  double decode_ms = 0;
  double decode_tokens_per_s = 0;
  // Speculative decoding (ChatSessionParams::max_draft > 0): drafts checked and kept, verify
  // passes.
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
  int64_t verify_passes = 0;
  int64_t reasoning_tokens = 0;       // generated inside <think>...</think>
  bool reasoning_budget_hit = false;  // max_reasoning_tokens closed the reasoning
  // Tokens the constraint forced (the only one its mask allowed): fed without sampling. Greedy
  // output is unchanged by it; a random sampler's draws after it shift by the draws not made.
  int64_t forced_tokens = 0;
};

class ChatSession;
class Matcher;

namespace internal {
// Tests only: called on each constrained mask ([ceil(V/32)] bits) before the token is drawn, so a
// test can let through a token the grammar refuses and see the run-time guard (the reply ends
// with Internal, the session as before that token). Null (the default) = no hook. Set it while no
// generation runs.
using ConstraintMaskHook = void (*)(std::vector<uint32_t>* mask);
void SetConstraintMaskHookForTesting(ConstraintMaskHook hook);
ConstraintMaskHook ConstraintMaskHookForTesting();
}  // namespace internal

// One turn of a ChatSession in progress: the step machine behind Chat, FeedChat, FeedTokens and
// Generate (plan -> prefill pieces -> per token: sample, evaluate, stream, stop). ChatSession runs
// it alone, one piece at a time; the Engine (engine.h) runs the pieces of many turns in one
// forward batch. Made by ChatSession::BeginChat; not movable (the generation's callbacks point
// into it).
class ChatTurn {
 public:
  ChatTurn();
  ~ChatTurn();
  ChatTurn(const ChatTurn&) = delete;
  ChatTurn& operator=(const ChatTurn&) = delete;

  bool running() const { return phase_ != Phase::kIdle; }
  ChatSession* session() const { return chat_; }

 private:
  friend class ChatSession;
  enum class Phase { kIdle, kFeed, kGenerate, kDone };
  struct Generation;  // the reply's stream, sampler, constraint and counters (chat_session.cpp)

  Phase phase_ = Phase::kIdle;
  ChatSession* chat_ = nullptr;
  bool owns_busy_ = false;      // BeginChat took the session's busy flag; EndChat gives it back
  bool then_generate_ = false;  // a Chat turn: the reply follows the feed
  bool alone_ = false;          // run by ChatSession::RunAlone, not by the batching engine
  Status status_;               // the first error; ends the turn
  // Feed.
  TurnPlan plan_;  // the tokens fed (FeedJob holds them by reference)
  std::vector<int64_t> positions_;
  FeedJob feed_;
  FeedReport feed_report_;
  std::chrono::steady_clock::time_point feed_t0_;
  int assistants_fed_ = -1;  // what FeedChat records after the feed (-1: FeedTokens)
  Json tools_;
  // Generate.
  GenerateRequest gen_;
  // The reply's grammar when BeginChat made it (before feeding, so a bad tool_choice fails first);
  // otherwise StartGenerate makes it from the session's tools.
  std::optional<std::shared_ptr<const Grammar>> grammar_;
  std::unique_ptr<Generation> g_;
};

class ChatSession {
 public:
  // Errors: InvalidArgument (null model), those of Session::Create.
  static StatusOr<std::unique_ptr<ChatSession>> Create(std::shared_ptr<const ChatModel> model,
                                                       ChatSessionParams params);

  // Plans the turn and feeds its prompt (prefix reuse, checkpoints of the policy). Errors: the
  // planner's, the Session's (ContextFull, Cancelled, ...); on error the report is unchanged and
  // the session is as Session::Feed leaves it (unchanged, or a consistent prefix after Cancelled).
  Status FeedChat(const ChatRequest& request);
  // Feeds raw tokens (no chat bookkeeping): transcript history then renders the next chat whole.
  Status FeedTokens(std::span<const int32_t> tokens);
  // Generates a reply after what was fed. Errors: InvalidArgument (nothing fed, bad sampling
  // parameters), Cancelled (the reply so far is kept), the Session's. A full context ends the
  // reply (kContextFull), it is not an error.
  Status Generate(const GenerateRequest& request);
  // FeedChat + Generate; the sampling parameters are checked before anything is fed.
  Status Chat(const ChatRequest& request, const GenerateRequest& gen);

  // --- stepping (ChatTurn); Chat = BeginChat; while (NextPiece) { run the piece; PieceDone }
  // EndChat BeginChat takes the busy flag (held until EndChat) and returns Chat's up-front errors
  // (the turn is then not running); EndChat returns Chat's result. `max_tokens` caps a prefill
  // piece.
  Status BeginChat(const ChatRequest& request, const GenerateRequest& gen, ChatTurn* turn);
  // The same turn on raw tokens (FeedTokens + Generate as one call).
  Status BeginTokens(std::span<const int32_t> tokens, const GenerateRequest& gen, ChatTurn* turn);
  bool NextPiece(ChatTurn& turn, int64_t max_tokens, SessionPiece* piece);
  void PieceDone(ChatTurn& turn, const SessionPiece& piece);
  Status EndChat(ChatTurn& turn);
  // Gives back the busy flag BeginChat took, if the turn still holds it (EndChat does; also for a
  // turn abandoned by an exception: the session is consistent after every piece).
  void ReleaseBusy(ChatTurn& turn);
  // The piece is a prefill (true) or the decode of one sampled token.
  static bool InFeed(const ChatTurn& turn) { return turn.phase_ == ChatTurn::Phase::kFeed; }

  // The plan FeedChat would feed now (for hosts and tests; changes nothing).
  StatusOr<TurnPlan> PlanChat(const ChatRequest& request) const;

  // Snapshot at `pos` (>= 1): now when pos == size(), else when a later feed reaches it.
  Status CheckpointAt(int64_t pos);
  Status SetCheckpointBudget(int64_t bytes);  // -1 = room for 8 snapshots
  Status Reset();  // forgets everything: transcript, state, checkpoints, reply, report
  // Asks the running (or, if none runs, the next) call to stop. Any thread.
  void Cancel() { cancel_.store(true); }

  StatusOr<std::unique_ptr<ChatSession>> Fork() const;
  Status SaveToFile(const std::string& path) const;
  StatusOr<std::vector<uint8_t>> SaveToMemory() const;
  // On error the session is unchanged (the chat state is checked before the load commits).
  Status LoadFromFile(const std::string& path);
  Status LoadFromMemory(std::span<const uint8_t> bytes);

  const TurnReport& report() const { return report_; }
  const std::string& report_line() const { return report_line_; }  // the last feed's trace line
  const ChatState& state() const { return state_; }                // includes the last reply
  const Session& session() const { return *session_; }
  Session& session() { return *session_; }
  const ChatModel& model() const { return *model_; }
  const std::shared_ptr<const ChatModel>& model_ptr() const { return model_; }
  const ChatSessionParams& params() const { return params_; }

 private:
  ChatSession(std::shared_ptr<const ChatModel> model, ChatSessionParams params,
              std::unique_ptr<Session> session);
  // The busy flag: held for the duration of every call that reads or changes the session.
  class BusyScope;
  Status TakeCancel(const char* when);
  Status FeedChatLocked(const ChatRequest& request);
  Status GenerateLocked(const GenerateRequest& request);
  // The phases of a turn: the feed of turn.plan_.tokens, then (optionally) the generation.
  Status StartFeed(ChatTurn& turn);
  Status FinishFeed(ChatTurn& turn);
  Status StartGenerate(ChatTurn& turn);
  Status FinishGenerate(ChatTurn& turn);
  void RunAlone(ChatTurn& turn);
  // BeginChat / BeginTokens after the plan: takes the busy flag, checks `gen`, starts the feed.
  Status BeginTurn(const GenerateRequest& gen, ChatTurn* turn);
  // The grammar of the reply: request.constraint, or the tool-call grammar of its tool_choice.
  StatusOr<std::shared_ptr<const Grammar>> ReplyGrammar(const GenerateRequest& request,
                                                        const Json& tools) const;
  void RefreshMemory();
  Status Restore(std::span<const uint8_t> blob);

  std::shared_ptr<const ChatModel> model_;
  ChatSessionParams params_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<DraftLengthPolicy> draft_policy_;  // max_draft > 0 and adaptive_draft
  std::atomic<bool> cancel_{false};
  mutable std::atomic<bool> busy_{false};
  TurnReport report_;
  std::string report_line_;
  ChatState state_;
  std::vector<int64_t> pending_checkpoints_;  // CheckpointAt positions not reached yet
};

}  // namespace qwenrt
