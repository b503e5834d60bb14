#include "testing/soak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_session.h"
#include "chat/constraint/grammar.h"
#include "chat/engine.h"
#include "ops/kv_view.h"
#include "text/json.h"

namespace qwenrt::testing {

int64_t ResidentKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

namespace {

using Clock = std::chrono::steady_clock;

// Bit-identical float spans. memcmp only over a non-empty span: an empty session's logits may have
// no storage, and memcmp with a null pointer is undefined even for 0 bytes (UBSan reports it).
bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Bounded value grammars: a random-weight model never ends free text on its own.
const char kToolsJson[] = R"([{"type": "function", "function": {"name": "pick", "parameters":
  {"type": "object", "properties": {"n": {"type": "integer", "minimum": -5, "maximum": 5}},
   "required": ["n"]}}}])";

const char kSchemaJson[] = R"({"type": "object", "additionalProperties": false,
  "required": ["ok", "n"], "properties": {"ok": {"type": "boolean"},
  "n": {"type": "integer", "minimum": 0, "maximum": 99}}})";

const char* const kWords[] = {"hello", "what",   "is",  "the",  "weather", "tell", "me",   "a",
                              "story", "count",  "to",  "ten",  "why",     "blue", "sky",  "please",
                              "short", "answer", "two", "plus", "four",    "code", "json", "now"};

// Converting KV rows between these types changes no value (f16 <-> f32 on the CPU path: rows are
// rounded to f16 values before they enter the cache); to or from q8_0 does.
bool Lossless(KvType a, KvType b) { return a == b || (a != KvType::kQ8_0 && b != KvType::kQ8_0); }

enum class TurnKind { kChat, kSchema, kRegex, kTools, kTokens };

struct Slot {
  std::unique_ptr<ChatSession> chat;
  std::vector<ChatMessage> messages;  // the conversation sent to the next chat turn
  std::shared_ptr<EngineTurn> turn;   // running, or null
  TurnKind kind = TurnKind::kChat;
  int64_t cancel_at = -1;            // loop tick at which the turn is cancelled; -1: never
  std::vector<int32_t> tokens;       // a token turn's sequence (the engine holds a view)
  bool exact = true;                 // no lossy KV conversion since the session was empty
  std::vector<std::string> history;  // the last actions, for failure reports
  int64_t held_kib = 0;  // what the session held when last seen idle (a busy one is not read)
};

class Soak {
 public:
  explicit Soak(const SoakParams& p) : p_(p), rng_(p.seed) {}

  StatusOr<SoakResult> Run();

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  double Now() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  ChatSessionParams SessionParams(KvType kv) const;
  KvType RandomKv();
  int64_t RandomBudget() const;
  void Note(Slot& s, std::string what);
  // Counts an operation's status; false when it is not OK.
  bool Record(const char* op, const Status& st, Slot* s);
  void Fail(std::string what, const Slot* s);

  void Create(Slot& s);
  void ResetSlot(Slot& s, const char* why);
  void Act();
  void SubmitTurn(Slot& s);
  void Fork(Slot& from);
  void SaveLoad(Slot& s);
  void Harvest();
  void Check(Slot& s);
  void Sample(bool report);
  int64_t Held();
  void MeasureQuiet(int64_t* rss, int64_t* held);
  Slot* RandomIdle(const Slot* except);

  SoakParams p_;
  std::mt19937_64 rng_;
  std::unique_ptr<Engine> engine_;
  std::vector<Slot> slots_;
  std::shared_ptr<const Grammar> schema_, regex_;
  Json tools_;
  std::vector<int32_t> eog_;
  int64_t n_vocab_ = 0;
  size_t state_bytes_ = 0;
  int64_t tick_ = 0;        // loop iterations: the clock of the cancel points
  int64_t next_check_ = 0;  // actions count of the next state check
  Clock::time_point t0_;
  double next_rss_ = 0, next_report_ = 0, warmup_ = 0;
  int64_t held_kib_ = 0;  // the sum of the slots' held_kib at the last sample
  SoakResult r_;
};

ChatSessionParams Soak::SessionParams(KvType kv) const {
  ChatSessionParams p;
  p.session.backend = BackendKind::kCpu;
  p.session.n_threads = p_.threads;
  p.session.ubatch = 64;
  p.session.max_context = p_.max_context;
  p.session.initial_capacity = 128;
  p.session.kv_page_rows = 64;  // forks share pages; small pages make copy-on-write common
  p.session.kv_type = kv;
  p.session.split_invariant = true;  // the engine requires it; and resumed == full prefill
  p.session.checkpoint_every = 32;   // many checkpoints against a small budget: eviction
  p.session.checkpoint_budget_bytes = RandomBudget();
  return p;
}

KvType Soak::RandomKv() {
  // q8_0 seldom: a session whose rows it converts is no longer compared.
  const uint64_t k = Below(10);
  return k < 5 ? KvType::kF16 : k < 9 ? KvType::kF32 : KvType::kQ8_0;
}

// Room for one to three recurrent-state snapshots (-1 before the first session told its size).
int64_t Soak::RandomBudget() const {
  if (state_bytes_ == 0) return static_cast<int64_t>(64) << 10;
  return static_cast<int64_t>(state_bytes_) * static_cast<int64_t>(1 + tick_ % 3);
}

void Soak::Note(Slot& s, std::string what) {
  s.history.push_back(std::to_string(tick_) + ":" + std::move(what));
  if (s.history.size() > 10) s.history.erase(s.history.begin());
}

void Soak::Fail(std::string what, const Slot* s) {
  if (r_.failures.size() >= 20) return;
  if (s != nullptr) {
    what += " [slot history:";
    for (const std::string& h : s->history) what += " " + h;
    what += "]";
  }
  r_.failures.push_back(std::move(what));
}

bool Soak::Record(const char* op, const Status& st, Slot* s) {
  if (st.ok()) return true;
  ++r_.errors[std::string(op) + " " + StatusCodeName(st.code())];
  if (st.code() != StatusCode::kCancelled) {
    ++r_.unexpected_errors;
    Fail(std::string(op) + ": " + st.ToString(), s);
  }
  return false;
}

void Soak::ResetSlot(Slot& s, const char* why) {
  ++r_.actions_by_kind["reset"];
  Note(s, why);
  Record("reset", s.chat->Reset(), &s);
  s.messages.clear();
  s.exact = true;
}

void Soak::Create(Slot& s) {
  const KvType kv = RandomKv();
  auto c = ChatSession::Create(p_.model, SessionParams(kv));
  ++r_.actions_by_kind["create"];
  s.messages.clear();
  s.exact = true;
  s.history.clear();
  if (!Record("create", c.status(), &s)) return;
  s.chat = std::move(*c);
  Note(s, std::string("create ") + KvTypeName(kv));
}

Slot* Soak::RandomIdle(const Slot* except) {
  std::vector<Slot*> idle;
  for (Slot& s : slots_) {
    if (&s != except && s.turn == nullptr) idle.push_back(&s);
  }
  return idle.empty() ? nullptr : idle[Below(idle.size())];
}

void Soak::SubmitTurn(Slot& s) {
  ChatSession& chat = *s.chat;
  if (chat.session().size() > p_.max_context / 2) {  // long conversations end now and then
    ResetSlot(s, "reset(long)");
    return;
  }
  GenerateRequest gen;
  gen.sampling.temperature = Chance(0.2) ? 0.0f : 1.0f + 0.5f * static_cast<float>(Below(3));
  gen.sampling.seed = rng_();
  if (Chance(0.3)) gen.sampling.top_k = 1 + static_cast<int32_t>(Below(40));
  if (Chance(0.2)) gen.sampling.repetition_penalty = 1.1f;
  gen.max_tokens = 1 + static_cast<int64_t>(Below(32));
  for (int32_t e : eog_) gen.sampling.logit_bias.push_back({e, -1e9f});
  ChatRequest req;
  const uint64_t k = Below(20);
  s.kind = k < 10   ? TurnKind::kChat
           : k < 13 ? TurnKind::kSchema
           : k < 15 ? TurnKind::kRegex
           : k < 18 ? TurnKind::kTools
                    : TurnKind::kTokens;
  req.enable_thinking = s.kind == TurnKind::kChat && Chance(0.5);
  if (req.enable_thinking && Chance(0.5))
    gen.max_reasoning_tokens = 1 + static_cast<int64_t>(Below(8));
  const char* name = "chat";
  if (s.kind == TurnKind::kSchema || s.kind == TurnKind::kRegex) {
    name = s.kind == TurnKind::kSchema ? "schema" : "regex";
    gen.constraint = s.kind == TurnKind::kSchema ? schema_ : regex_;
    gen.sampling.logit_bias.clear();  // the end comes where the constraint is complete
    gen.max_tokens = 48;
  } else if (s.kind == TurnKind::kTools) {
    name = "tools";
    req.tools = tools_;
    const uint64_t m = Below(3);
    gen.tool_choice.mode = m == 0   ? ToolChoiceMode::kRequired
                           : m == 1 ? ToolChoiceMode::kAuto
                                    : ToolChoiceMode::kFunction;
    if (m == 2) gen.tool_choice.function = "pick";  // the one tool, by name
    if (m != 1) gen.sampling.logit_bias.clear();
    gen.max_tokens = 48;
  }
  std::string text;
  const uint64_t n_words = 1 + Below(12);
  for (uint64_t i = 0; i < n_words; ++i) {
    if (i > 0) text += ' ';
    text += kWords[Below(std::size(kWords))];
  }
  // A cancel point in loop ticks: before admission (0), in the prefill or in the decode.
  s.cancel_at = Chance(0.15) ? tick_ + static_cast<int64_t>(Below(40)) : -1;
  StatusOr<std::shared_ptr<EngineTurn>> t = InternalError("soak: no turn");
  if (s.kind == TurnKind::kTokens) {
    // The transcript and some random ids (or random ids only): raw tokens after the chat.
    s.tokens.clear();
    if (Chance(0.7) && chat.session().size() + 40 + gen.max_tokens < p_.max_context)
      s.tokens = chat.session().transcript();
    const uint64_t n = 1 + Below(40);
    for (uint64_t i = 0; i < n; ++i) s.tokens.push_back(static_cast<int32_t>(Below(n_vocab_)));
    name = "tokens";
    t = engine_->SubmitTokens(chat, s.tokens, gen);
    s.messages.clear();  // the chat layer renders the next conversation whole
  } else {
    s.messages.push_back({Role::kUser, text, std::nullopt, {}});
    req.messages = s.messages;
    // A conversation that would not fit (the tool definitions alone are long) starts over.
    auto plan = chat.PlanChat(req);
    if (plan.ok() &&
        static_cast<int64_t>(plan->tokens.size()) + gen.max_tokens + 8 > p_.max_context) {
      s.messages.erase(s.messages.begin(), s.messages.end() - 1);
      req.messages = s.messages;
    }
    t = engine_->Submit(chat, req, gen);
  }
  ++r_.actions_by_kind[name];
  Note(s, std::string(name) +
              (s.cancel_at >= 0 ? "(cancel@" + std::to_string(s.cancel_at) + ")" : std::string()));
  if (!Record("submit", t.status(), &s)) {
    if (s.kind != TurnKind::kTokens) s.messages.pop_back();
    return;
  }
  s.turn = std::move(*t);
}

void Soak::Fork(Slot& from) {
  Slot* to = RandomIdle(&from);
  if (to == nullptr) return;
  ++r_.actions_by_kind["fork"];
  auto f = from.chat->Fork();
  Note(from, "fork->" + std::to_string(to - slots_.data()));
  if (!Record("fork", f.status(), &from)) return;
  to->chat = std::move(*f);
  to->messages = from.messages;
  to->exact = from.exact;
  to->history = from.history;
  Note(*to, "forked<-" + std::to_string(&from - slots_.data()));
}

void Soak::SaveLoad(Slot& s) {
  ++r_.actions_by_kind["save_load"];
  const Session& from = s.chat->session();
  const std::vector<int32_t> transcript = from.transcript();
  const std::vector<float> logits(from.last_logits().begin(), from.last_logits().end());
  const KvType saved_type = from.kv_type();
  auto blob = s.chat->SaveToMemory();
  if (!Record("save", blob.status(), &s)) return;
  // Into the same session, or into a fresh one in another idle slot (of a random KV type).
  Slot* to = Chance(0.5) ? RandomIdle(&s) : nullptr;
  if (to == nullptr) {
    to = &s;
    Note(s, "save_load");
  } else {
    auto c = ChatSession::Create(p_.model, SessionParams(RandomKv()));
    if (!Record("create", c.status(), to)) return;
    to->chat = std::move(*c);
    to->messages = s.messages;
    to->history = s.history;
    Note(*to, "loaded<-" + std::to_string(&s - slots_.data()));
  }
  if (!Record("load", to->chat->LoadFromMemory(*blob), to)) return;
  const Session& loaded = to->chat->session();
  to->exact = s.exact && (transcript.empty() || Lossless(saved_type, loaded.kv_type()));
  const std::span<const float> got = loaded.last_logits();
  if (loaded.transcript() != transcript || !SameBits(got, logits)) {
    ++r_.mismatches;
    Fail("save/load round trip changed the transcript or the last logits (" +
             std::to_string(transcript.size()) + " tokens)",
         to);
  }
}

void Soak::Act() {
  Slot* s = RandomIdle(nullptr);
  if (s == nullptr) return;
  ++r_.actions;
  if (s->chat == nullptr) {
    Create(*s);
    return;
  }
  const uint64_t k = Below(100);
  if (k < 60) {
    SubmitTurn(*s);
  } else if (k < 68) {
    Fork(*s);
  } else if (k < 76) {
    SaveLoad(*s);
  } else if (k < 80) {
    ResetSlot(*s, "reset");
  } else if (k < 84) {
    ++r_.actions_by_kind["free"];
    s->chat.reset();
    s->history.clear();
  } else if (k < 92) {
    const KvType before = s->chat->session().kv_type(), after = RandomKv();
    ++r_.actions_by_kind["kv_type"];
    Note(*s, std::string("kv ") + KvTypeName(after));
    const bool empty = s->chat->session().size() == 0;
    if (Record("set_kv_type", s->chat->session().SetKvType(after), s)) {
      s->exact = s->exact && (empty || Lossless(before, after));
    }
  } else {
    ++r_.actions_by_kind["budget"];
    const int64_t b = RandomBudget();
    Note(*s, "budget " + std::to_string(b));
    Record("set_checkpoint_budget", s->chat->SetCheckpointBudget(b), s);
  }
}

void Soak::Harvest() {
  for (Slot& s : slots_) {
    if (s.turn == nullptr) continue;
    if (s.cancel_at >= 0 && tick_ >= s.cancel_at) {
      engine_->Cancel(*s.turn);
      s.cancel_at = -1;
    }
    if (!s.turn->done()) continue;
    const Status st = s.turn->status();
    s.turn.reset();
    const ChatState& state = s.chat->state();
    if (st.ok()) {
      ++r_.turns_ok;
      if (s.kind != TurnKind::kTokens)
        s.messages.push_back({Role::kAssistant, state.reply_content, std::nullopt, {}});
    } else {
      if (st.code() == StatusCode::kCancelled) ++r_.turns_cancelled;
      Record("turn", st, &s);
      // The host drops the unanswered message; the next turn diverges from the transcript there.
      if (s.kind != TurnKind::kTokens && !s.messages.empty()) s.messages.pop_back();
    }
  }
}

void Soak::Check(Slot& s) {
  const Session& ses = s.chat->session();
  if (ses.size() == 0) return;
  const std::span<const float> logits = ses.last_logits();
  if (!s.exact || logits.empty()) {
    ++r_.checks_skipped;
    return;
  }
  ++r_.checks;
  auto ref = ChatSession::Create(p_.model, SessionParams(ses.kv_type()));
  if (!Record("check_create", ref.status(), &s)) return;
  std::vector<int32_t> tokens = ses.transcript();
  if (p_.perturb_reference_for_testing) tokens.back() = (tokens.back() + 1) % n_vocab_;
  if (!Record("check_feed", (*ref)->FeedTokens(tokens), &s)) return;
  const std::span<const float> want = (*ref)->session().last_logits();
  if (!SameBits(want, logits)) {
    ++r_.mismatches;
    Fail("slot " + std::to_string(&s - slots_.data()) + ": last logits of " +
             std::to_string(ses.size()) + " tokens (kv " + KvTypeName(ses.kv_type()) +
             ") differ from a fresh prefill of the transcript",
         &s);
  }
}

// Sums what the sessions hold: accurate when every slot is idle; a busy session (the engine's to
// touch) counts what it held when last seen idle.
int64_t Soak::Held() {
  int64_t held = 0;
  for (Slot& s : slots_) {
    if (s.chat == nullptr) {
      s.held_kib = 0;
    } else if (s.turn == nullptr) {
      const Session& ses = s.chat->session();
      s.held_kib = static_cast<int64_t>(ses.kv_prorated_bytes() + ses.checkpoint_prorated_bytes() +
                                        ses.state_bytes() + ses.spare_checkpoint_bytes()) /
                   1024;
    }
    held += s.held_kib;
  }
  return held;
}

// RSS and what the sessions hold at a quiet point (no turn running), after handing the allocator's
// free pages back, so that RSS - held is what the process holds besides the sessions.
void Soak::MeasureQuiet(int64_t* rss, int64_t* held) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  *rss = ResidentKib();
  *held = Held();
}

void Soak::Sample(bool report) {
  const double now = Now();
  if (now >= next_rss_ || report) {
    r_.rss_final_kib = ResidentKib();
    held_kib_ = Held();
    r_.rss_peak_kib = std::max(r_.rss_peak_kib, r_.rss_final_kib);
    next_rss_ = now + 1.0;
  }
  if (now < next_report_ && !report) return;
  next_report_ = now + p_.report_every_s;
  SoakSample x;
  x.t_s = now;
  x.rss_kib = r_.rss_final_kib;
  x.held_kib = held_kib_;
  x.turns = r_.turns_ok + r_.turns_cancelled;
  x.turns_per_min = now > 0 ? static_cast<double>(x.turns) * 60.0 / now : 0;
  x.checks = r_.checks;
  x.mismatches = r_.mismatches;
  x.unexpected_errors = r_.unexpected_errors;
  r_.samples.push_back(x);
  if (p_.on_report) p_.on_report(x);
}

StatusOr<SoakResult> Soak::Run() {
  if (p_.model == nullptr) return InvalidArgument("soak: no model");
  if (p_.sessions < 1) return InvalidArgument("soak: sessions must be >= 1");
  EngineParams ep;
  ep.n_threads = p_.threads;
  ep.step_tokens = 64;  // long prompts are prefilled in chunks next to decoding turns
  ep.max_sessions = std::max<int64_t>(2, p_.sessions / 2);  // the rest queue
  ep.worker = p_.worker;
  QWENRT_ASSIGN_OR_RETURN(engine_, Engine::Create(p_.model, ep));
  JsonSchemaOptions compact;
  compact.compact = true;
  QWENRT_ASSIGN_OR_RETURN(schema_, Grammar::FromJsonSchema(kSchemaJson, compact));
  QWENRT_ASSIGN_OR_RETURN(regex_, Grammar::FromRegex("(yes|no) [0-9]{3}"));
  QWENRT_ASSIGN_OR_RETURN(tools_, Json::Parse(kToolsJson, Json::Limits{}));
  const auto eog = p_.model->tokenizer().eog_ids();
  eog_.assign(eog.begin(), eog.end());
  n_vocab_ = p_.model->tokenizer().n_vocab();
  {
    QWENRT_ASSIGN_OR_RETURN(auto probe, ChatSession::Create(p_.model, SessionParams(KvType::kF16)));
    state_bytes_ = probe->session().state_bytes();
  }
  slots_.resize(static_cast<size_t>(p_.sessions));  // never resized: turns point into slots
  warmup_ = p_.warmup_s >= 0 ? p_.warmup_s : std::min(60.0, p_.duration_s / 4);
  t0_ = Clock::now();
  for (Slot& s : slots_) Create(s);
  while (Now() < p_.duration_s && (p_.max_actions == 0 || r_.actions < p_.max_actions)) {
    ++tick_;
    Harvest();
    if (p_.check_every > 0 && r_.actions >= next_check_) {
      Slot* s = RandomIdle(nullptr);
      if (s != nullptr && s->chat != nullptr) {
        Check(*s);
        next_check_ = r_.actions + p_.check_every;
      }
    }
    const int64_t before = r_.actions;
    // At the end of the warm-up no new turn starts until the running ones end: the baseline is
    // measured with every session idle.
    const bool quiesce = r_.rss_baseline_kib == 0 && Now() >= warmup_;
    if (quiesce && std::none_of(slots_.begin(), slots_.end(),
                                [](const Slot& s) { return s.turn != nullptr; })) {
      MeasureQuiet(&r_.rss_baseline_kib, &r_.held_baseline_kib);
    } else if (!quiesce) {
      Act();
    }
    Sample(false);
    if (!p_.worker) {
      engine_->Step();
    } else if (r_.actions == before) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // every slot is busy
    }
  }
  // Drain: the turns still running end (their cancel points still fire), then every idle
  // session is checked.
  while (std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.turn; })) {
    ++tick_;
    Harvest();
    if (!p_.worker) {
      engine_->Step();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (Slot& s : slots_) {
    if (s.chat != nullptr) Check(s);
  }
  r_.seconds = Now();
  Sample(true);
  int64_t rss = 0;
  MeasureQuiet(&rss, &r_.held_final_kib);
  r_.rss_final_kib = rss;
  if (r_.rss_baseline_kib > 0) {
    // The process besides the sessions may grow by rss_growth + rss_slack_mib; the sessions may
    // hold more than at the baseline (longer conversations).
    const int64_t other = r_.rss_baseline_kib - r_.held_baseline_kib;
    r_.rss_bound_kib = r_.held_final_kib +
                       static_cast<int64_t>(static_cast<double>(other) * (1.0 + p_.rss_growth)) +
                       static_cast<int64_t>(p_.rss_slack_mib * 1024);
    r_.rss_ok = r_.rss_final_kib <= r_.rss_bound_kib;
    if (!r_.rss_ok) {
      Fail("resident memory grew from " + std::to_string(r_.rss_baseline_kib) +
               " KiB after warm-up (sessions holding " + std::to_string(r_.held_baseline_kib) +
               " KiB) to " + std::to_string(r_.rss_final_kib) + " KiB (sessions holding " +
               std::to_string(r_.held_final_kib) + " KiB); bound " +
               std::to_string(r_.rss_bound_kib) + " KiB",
           nullptr);
    }
  }
  for (Slot& s : slots_) s.chat.reset();
  engine_.reset();
  return r_;
}

}  // namespace

StatusOr<SoakResult> RunSoak(const SoakParams& params) {
  Soak soak(params);
  return soak.Run();
}

}  // namespace qwenrt::testing
