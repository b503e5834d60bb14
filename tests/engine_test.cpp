// Batching (docs/batching.md): ForwardBatch gives each sequence the logits it gets alone, bit for
// bit, in any batch and position; the Engine gives each chat turn the tokens, text and logits of
// ChatSession::Chat alone, with joins and leaves between steps, chunked prefill next to decoding
// sessions, a cancelled session and one whose context fills up next to the others, and hosts
// submitting from several threads.
#include "chat/engine.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_session.h"
#include "model/backend_choice.h"
#include "model/forward.h"
#include "session_test_util.h"
#include "test_util.h"

using namespace qwenrt;
using namespace qwenrt::test;

namespace {

std::shared_ptr<const Model> TinyModel() {
  static std::shared_ptr<const Model> m = [] {
    auto r = Model::Load(DataPath("tiny-s1-q4km.gguf"));  // also from a copied tree (GPU check)
    REQUIRE(r.ok());
    return *r;
  }();
  return m;
}

std::shared_ptr<const ChatModel> TinyChatModel() {
  static std::shared_ptr<const ChatModel> cm = [] {
    auto r = ChatModel::Create(TinyModel());
    REQUIRE(r.ok());
    return *r;
  }();
  return cm;
}

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One sequence run through ForwardBatch: its caches, tokens and logits.
struct Seq {
  KvCache kv;
  RecurrentState rec;
  std::vector<float> logits;
};

Seq NewSeq(const ModelConfig& c) {
  auto kv = KvCache::Create(c, 256, 16);
  auto rec = RecurrentState::Create(c);
  REQUIRE(kv.ok());
  REQUIRE(rec.ok());
  return Seq{std::move(*kv), std::move(*rec), {}};
}

std::unique_ptr<ForwardContext> NewContext(const Model& m, ThreadPool& pool, int64_t ubatch,
                                           int64_t seqs) {
  ForwardContext::Options o;
  o.max_ubatch = ubatch;
  o.max_sequences = seqs;
  o.backend.gdn_chunk_min_tokens = INT64_MAX;
  auto ctx = ForwardContext::Create(m, BackendKind::kCpu, &pool, o);
  REQUIRE(ctx.ok());
  return std::move(*ctx);
}

}  // namespace

TEST_CASE(
    "ForwardBatch: each sequence's logits are bit-identical to running it alone, in any position",
    "[cpu][batch]") {
  auto model = TinyModel();
  const ModelConfig& c = model->config();
  const int64_t V = c.n_vocab;
  ThreadPool pool(2);
  // Three sequences: a prefill of 13, a prefill of 5 with all logits, and a single token, then
  // two decode steps each. Ubatches of 8 rows: the batch is cut inside sequences.
  const std::vector<std::vector<int32_t>> prompts = {RandomTokens(13, 1), RandomTokens(5, 2),
                                                     RandomTokens(1, 3)};
  const std::vector<bool> all = {false, true, false};

  // Alone: each sequence on its own context.
  std::vector<std::vector<std::vector<float>>> alone(3);  // [seq][step] logits
  for (size_t i = 0; i < 3; ++i) {
    auto ctx = NewContext(*model, pool, 8, 1);
    Seq s = NewSeq(c);
    s.logits.resize(static_cast<size_t>((all[i] ? prompts[i].size() : 1) * V));
    REQUIRE(Forward(*ctx, s.kv, s.rec, prompts[i], all[i], s.logits.data()).ok());
    alone[i].push_back(s.logits);
    for (int32_t t : {7, 11}) {
      std::vector<float> l(static_cast<size_t>(V));
      REQUIRE(Forward(*ctx, s.kv, s.rec, std::span<const int32_t>(&t, 1), false, l.data()).ok());
      alone[i].push_back(l);
    }
  }

  const std::vector<std::vector<size_t>> orders = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
  for (const auto& order : orders) {
    auto ctx = NewContext(*model, pool, 8, 4);
    std::vector<Seq> seqs;
    for (size_t i = 0; i < 3; ++i) seqs.push_back(NewSeq(c));
    std::vector<SequenceStep> steps(3);
    for (size_t j = 0; j < 3; ++j) {
      const size_t i = order[j];
      seqs[i].logits.resize(static_cast<size_t>((all[i] ? prompts[i].size() : 1) * V));
      steps[j] = SequenceStep{&seqs[i].kv, &seqs[i].rec,          prompts[i],
                              all[i],      seqs[i].logits.data(), OkStatus()};
    }
    REQUIRE(ForwardBatch(*ctx, steps).ok());
    for (size_t i = 0; i < 3; ++i) CHECK(SameBits(seqs[i].logits, alone[i][0]));
    int32_t toks[2] = {7, 11};
    for (int k = 0; k < 2; ++k) {
      for (size_t j = 0; j < 3; ++j) {
        const size_t i = order[j];
        seqs[i].logits.resize(static_cast<size_t>(V));
        steps[j] =
            SequenceStep{&seqs[i].kv, &seqs[i].rec,          std::span<const int32_t>(&toks[k], 1),
                         false,       seqs[i].logits.data(), OkStatus()};
      }
      REQUIRE(ForwardBatch(*ctx, steps).ok());
      for (size_t i = 0; i < 3; ++i)
        CHECK(SameBits(seqs[i].logits, alone[i][static_cast<size_t>(k + 1)]));
    }
  }
}

TEST_CASE("ForwardBatch: a bad step gets its own error and the others run", "[cpu][batch]") {
  auto model = TinyModel();
  const ModelConfig& c = model->config();
  ThreadPool pool(1);
  auto ctx = NewContext(*model, pool, 16, 2);
  Seq a = NewSeq(c), b = NewSeq(c);
  a.logits.resize(static_cast<size_t>(c.n_vocab));
  b.logits.resize(static_cast<size_t>(c.n_vocab));
  const std::vector<int32_t> good = RandomTokens(4, 9), bad = {1, static_cast<int32_t>(c.n_vocab)};
  std::vector<SequenceStep> steps = {{&a.kv, &a.rec, bad, false, a.logits.data(), OkStatus()},
                                     {&b.kv, &b.rec, good, false, b.logits.data(), OkStatus()}};
  CHECK(ForwardBatch(*ctx, steps).code() == StatusCode::kInvalidArgument);
  CHECK(steps[0].status.code() == StatusCode::kInvalidArgument);
  CHECK(steps[1].status.ok());
  CHECK(a.kv.size() == 0);
  CHECK(b.kv.size() == 4);
  // Two steps on one sequence, and more steps than the context was made for, are refused.
  std::vector<SequenceStep> twice = {{&a.kv, &a.rec, good, false, a.logits.data(), OkStatus()},
                                     {&a.kv, &a.rec, good, false, b.logits.data(), OkStatus()}};
  CHECK(ForwardBatch(*ctx, twice).code() == StatusCode::kInvalidArgument);
  CHECK(twice[0].status.ok());
  CHECK(a.kv.size() == 4);
  std::vector<SequenceStep> three(
      3, SequenceStep{&b.kv, &b.rec, good, false, b.logits.data(), OkStatus()});
  CHECK(ForwardBatch(*ctx, three).code() == StatusCode::kInvalidArgument);
  CHECK(b.kv.size() == 4);
}

namespace {

ChatSessionParams EngineSessionParams(int64_t max_context = 0) {
  ChatSessionParams p;
  p.session.backend = BackendKind::kCpu;
  p.session.n_threads = 2;
  p.session.ubatch = 32;
  p.session.max_context = max_context;
  p.session.split_invariant = true;
  return p;
}

std::unique_ptr<ChatSession> NewChat(int64_t max_context = 0) {
  auto s = ChatSession::Create(TinyChatModel(), EngineSessionParams(max_context));
  REQUIRE(s.ok());
  return std::move(*s);
}

ChatRequest Request(const std::string& text) {
  ChatRequest r;
  r.messages = {{Role::kUser, text, std::nullopt, {}}};
  return r;
}

// Sampled (not greedy), end of generation banned: every reply runs to max_tokens.
GenerateRequest Gen(uint64_t seed, int64_t max_tokens, std::string* streamed) {
  GenerateRequest g;
  g.max_tokens = max_tokens;
  g.sampling.temperature = 1.5f;
  g.sampling.seed = seed;
  for (int32_t e : TinyChatModel()->tokenizer().eog_ids())
    g.sampling.logit_bias.push_back({e, -1e9f});
  g.on_piece = [streamed](PieceKind, std::string_view text) {
    streamed->append(text);
    return true;
  };
  return g;
}

struct Result {
  Status status;
  std::vector<int32_t> transcript;
  std::string content, streamed;
  std::vector<float> last_logits;
  StopReason stop = StopReason::kNone;
};

Result Collect(const ChatSession& s, Status st, std::string streamed) {
  return Result{
      st,
      s.session().transcript(),
      s.state().reply_content,
      std::move(streamed),
      std::vector<float>(s.session().last_logits().begin(), s.session().last_logits().end()),
      s.report().stop_reason};
}

void CheckSame(const Result& alone, const Result& batched) {
  CHECK(alone.status.code() == batched.status.code());
  CHECK(alone.transcript == batched.transcript);
  CHECK(alone.content == batched.content);
  CHECK(alone.streamed == batched.streamed);
  CHECK(alone.stop == batched.stop);
  CHECK(SameBits(alone.last_logits, batched.last_logits));
}

std::string LongPrompt() {
  std::string s;
  for (int i = 0; i < 40; ++i) s += "word" + std::to_string(i) + " ";
  return s;
}

}  // namespace

TEST_CASE("Engine: turns batched with joins, leaves and chunked prefill equal each turn alone",
          "[cpu][engine]") {
  struct Job {
    std::string prompt;
    uint64_t seed;
    int64_t max_tokens;
  };
  const std::vector<Job> jobs = {{"Hello there", 1, 12},
                                 {"What is two plus two?", 2, 5},
                                 {LongPrompt(), 3, 8},
                                 {"Short", 4, 10}};
  std::vector<Result> alone;
  for (const Job& j : jobs) {
    auto s = NewChat();
    std::string streamed;
    const Status st = s->Chat(Request(j.prompt), Gen(j.seed, j.max_tokens, &streamed));
    INFO(st.ToString());
    REQUIRE(st.ok());
    REQUIRE(s->report().generated_tokens == j.max_tokens);
    alone.push_back(Collect(*s, st, streamed));
  }

  EngineParams ep;
  ep.n_threads = 2;
  ep.step_tokens = 16;  // the long prompt (> 100 tokens) is prefilled in chunks next to the others
  ep.max_sessions = 3;  // the fourth waits for a free place
  ep.worker = false;
  auto engine = Engine::Create(TinyChatModel(), ep);
  REQUIRE(engine.ok());
  std::vector<std::unique_ptr<ChatSession>> chats;
  std::vector<std::string> streamed(jobs.size());
  std::vector<std::shared_ptr<EngineTurn>> turns;
  for (size_t i = 0; i < jobs.size(); ++i) chats.push_back(NewChat());
  const auto submit = [&](size_t i) {
    auto t = (*engine)->Submit(*chats[i], Request(jobs[i].prompt),
                               Gen(jobs[i].seed, jobs[i].max_tokens, &streamed[i]));
    REQUIRE(t.ok());
    turns.push_back(*t);
  };
  submit(0);
  submit(1);
  for (int k = 0; k < 4; ++k) (*engine)->Step();  // 0 and 1 are decoding by now
  CHECK_FALSE(turns[0]->done());
  // A session in a turn is busy: its own calls are refused.
  CHECK(chats[0]->Reset().code() == StatusCode::kInvalidArgument);
  submit(2);  // joins mid-stream: its long prompt goes in chunks
  submit(3);  // queued until 1 leaves
  (*engine)->RunUntilIdle();
  for (size_t i = 0; i < jobs.size(); ++i) {
    REQUIRE(turns[i]->done());
    CheckSame(alone[i], Collect(*chats[i], turns[i]->status(), streamed[i]));
  }
  // The sessions are free again and continue alone as if they had never been batched.
  CHECK(chats[0]->Reset().ok());
}

TEST_CASE(
    "Engine: constrained turns keep their own constraint state in a batch and equal each turn "
    "alone",
    "[cpu][engine][constraint]") {
  JsonSchemaOptions compact;
  compact.compact = true;
  auto schema = Grammar::FromJsonSchema(
      R"({"type": "object", "additionalProperties": false, "required": ["ok", "n"],
      "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 99}}})",
      compact);
  auto regex = Grammar::FromRegex("(yes|no) [0-9]{3}");
  REQUIRE(schema.ok());
  REQUIRE(regex.ok());
  const std::vector<std::shared_ptr<const Grammar>> constraints = {*schema, nullptr, *regex};
  const auto gen = [&](size_t i, std::string* streamed) {
    GenerateRequest g = Gen(10 + i, 40, streamed);
    if (constraints[i] != nullptr)
      g.sampling.logit_bias.clear();  // the end comes where the constraint is complete
    g.constraint = constraints[i];
    return g;
  };
  const auto request = [](size_t i) {
    ChatRequest r = Request(i == 1 ? "Say anything" : "Answer briefly");
    r.enable_thinking = false;
    return r;
  };
  std::vector<Result> alone;
  for (size_t i = 0; i < constraints.size(); ++i) {
    auto s = NewChat();
    std::string streamed;
    const Status st = s->Chat(request(i), gen(i, &streamed));
    INFO(st.ToString());
    REQUIRE(st.ok());
    alone.push_back(Collect(*s, st, streamed));
  }
  // The constrained replies are complete matches.
  REQUIRE(alone[0].stop == StopReason::kEndOfGeneration);
  const StatusOr<Json> doc = Json::Parse(alone[0].content, Json::Limits{});
  REQUIRE(doc.ok());
  CHECK(doc->size() == 2);
  CHECK((*doc)["ok"].is_boolean());
  CHECK(((*doc)["n"].is_number_integer() && (*doc)["n"].get<int>() <= 99));
  REQUIRE(alone[2].stop == StopReason::kEndOfGeneration);
  CHECK(alone[2].content.size() >= 6);

  EngineParams ep;
  ep.n_threads = 2;
  ep.worker = false;
  auto engine = Engine::Create(TinyChatModel(), ep);
  REQUIRE(engine.ok());
  std::vector<std::unique_ptr<ChatSession>> chats;
  std::vector<std::string> streamed(constraints.size());
  std::vector<std::shared_ptr<EngineTurn>> turns;
  for (size_t i = 0; i < constraints.size(); ++i) {
    chats.push_back(NewChat());
    auto t = (*engine)->Submit(*chats.back(), request(i), gen(i, &streamed[i]));
    REQUIRE(t.ok());
    turns.push_back(*t);
  }
  (*engine)->RunUntilIdle();
  for (size_t i = 0; i < constraints.size(); ++i) {
    REQUIRE(turns[i]->done());
    CheckSame(alone[i], Collect(*chats[i], turns[i]->status(), streamed[i]));
  }
}

TEST_CASE("Engine: a cancelled turn and one whose context fills up end alone; the others go on",
          "[cpu][engine]") {
  const int64_t kFull = 28;  // the prompt of "Hi" is ~10 tokens: the reply hits the context end
  Result alone_ok, alone_full;
  {
    auto s = NewChat();
    std::string st;
    alone_ok = Collect(*s, s->Chat(Request("Tell me a story"), Gen(5, 20, &st)), st);
    REQUIRE(alone_ok.status.ok());
  }
  {
    auto s = NewChat(kFull);
    std::string st;
    alone_full = Collect(*s, s->Chat(Request("Hi"), Gen(6, 40, &st)), st);
    REQUIRE(alone_full.status.ok());
    REQUIRE(alone_full.stop == StopReason::kContextFull);
  }

  EngineParams ep;
  ep.n_threads = 2;
  ep.step_tokens = 64;
  ep.worker = false;
  auto engine = Engine::Create(TinyChatModel(), ep);
  REQUIRE(engine.ok());
  auto ok = NewChat(), full = NewChat(kFull), cancelled = NewChat(), too_long = NewChat(8);
  std::string s_ok, s_full, s_cancel, s_long;
  auto t_ok = (*engine)->Submit(*ok, Request("Tell me a story"), Gen(5, 20, &s_ok));
  auto t_full = (*engine)->Submit(*full, Request("Hi"), Gen(6, 40, &s_full));
  auto t_cancel = (*engine)->Submit(*cancelled, Request("Count to ten"), Gen(7, 30, &s_cancel));
  REQUIRE(t_ok.ok());
  REQUIRE(t_full.ok());
  REQUIRE(t_cancel.ok());
  // Bad input is refused at submit with the session's own error, nothing queued.
  auto t_long = (*engine)->Submit(*too_long, Request(LongPrompt()), Gen(8, 4, &s_long));
  CHECK(t_long.status().code() == StatusCode::kContextFull);
  CHECK(too_long->session().size() == 0);
  for (int k = 0; k < 5; ++k) (*engine)->Step();
  (*engine)->Cancel(**t_cancel);
  (*engine)->RunUntilIdle();
  CHECK((*t_cancel)->status().code() == StatusCode::kCancelled);
  CHECK(cancelled->session().size() > 0);
  CheckSame(alone_ok, Collect(*ok, (*t_ok)->status(), s_ok));
  CheckSame(alone_full, Collect(*full, (*t_full)->status(), s_full));
  // The cancelled session is consistent: a new turn alone works.
  std::string again;
  CHECK(cancelled->Chat(Request("Count to ten"), Gen(7, 3, &again)).ok());
}

TEST_CASE("Engine: hosts on several threads submit turns to one engine worker",
          "[cpu][engine][threads]") {
  const int kHosts = 4;
  std::vector<Result> alone(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    auto s = NewChat();
    std::string st;
    alone[i] =
        Collect(*s, s->Chat(Request("Thread " + std::to_string(i)), Gen(10 + i, 6, &st)), st);
    REQUIRE(alone[i].status.ok());
  }
  EngineParams ep;
  ep.n_threads = 2;
  ep.step_tokens = 32;
  auto engine = Engine::Create(TinyChatModel(), ep);
  REQUIRE(engine.ok());
  std::vector<std::unique_ptr<ChatSession>> chats;
  for (int i = 0; i < kHosts; ++i) chats.push_back(NewChat());
  std::vector<Result> batched(kHosts);
  std::vector<std::thread> hosts;
  for (int i = 0; i < kHosts; ++i) {
    hosts.emplace_back([&, i] {
      std::string st;
      auto t =
          (*engine)->Submit(*chats[i], Request("Thread " + std::to_string(i)), Gen(10 + i, 6, &st));
      if (!t.ok()) {
        batched[i].status = t.status();
        return;
      }
      const Status s = (*t)->Wait();
      batched[i] = Collect(*chats[i], s, st);
    });
  }
  for (auto& h : hosts) h.join();
  for (int i = 0; i < kHosts; ++i) CheckSame(alone[i], batched[i]);
  // Destroying the engine with a turn still running ends that turn Cancelled; the session is free.
  auto late = NewChat();
  std::string st;
  auto t = (*engine)->Submit(*late, Request("Late"), Gen(3, 200, &st));
  REQUIRE(t.ok());
  engine->reset();
  CHECK((*t)->done());
  CHECK(late->Reset().ok());
}

TEST_CASE("Engine::Create refuses a backend that cannot batch, in the one place (CheckBatching)",
          "[engine][backend]") {
  EngineParams ep;
  ep.worker = false;
  ep.backend = BackendKind::kCuda;
  auto e = Engine::Create(TinyChatModel(), ep);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().code() == StatusCode::kUnsupported);
  CHECK(e.status().message() == CheckBatching(BackendKind::kCuda).message());
}

TEST_CASE("Engine on kRef: batched turns equal each turn alone; a CPU session is refused",
          "[engine][backend][ref]") {
  const auto ref_chat = [] {
    ChatSessionParams p = EngineSessionParams();
    p.session.backend = BackendKind::kRef;
    auto s = ChatSession::Create(TinyChatModel(), p);
    REQUIRE(s.ok());
    return std::move(*s);
  };
  std::vector<Result> alone;
  for (uint64_t seed : {1, 2}) {
    auto s = ref_chat();
    std::string streamed;
    const Status st = s->Chat(Request("Hello there"), Gen(seed, 5, &streamed));
    REQUIRE(st.ok());
    alone.push_back(Collect(*s, st, streamed));
  }
  EngineParams ep;
  ep.backend = BackendKind::kRef;
  ep.n_threads = 1;
  ep.step_tokens = 4;  // the prompts go in chunks, next to each other
  ep.max_sessions = 2;
  ep.worker = false;
  auto engine = Engine::Create(TinyChatModel(), ep);
  REQUIRE(engine.ok());
  std::string ignored;
  auto cpu = NewChat();  // another backend than the engine's: refused before anything runs
  CHECK((*engine)->Submit(*cpu, Request("Hello there"), Gen(1, 5, &ignored)).status().code() ==
        StatusCode::kInvalidArgument);
  std::vector<std::unique_ptr<ChatSession>> chats;
  std::vector<std::string> streamed(2);
  std::vector<std::shared_ptr<EngineTurn>> turns;
  for (size_t i = 0; i < 2; ++i) {
    chats.push_back(ref_chat());
    auto t = (*engine)->Submit(*chats[i], Request("Hello there"), Gen(i + 1, 5, &streamed[i]));
    REQUIRE(t.ok());
    turns.push_back(*t);
  }
  (*engine)->RunUntilIdle();
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(turns[i]->done());
    CheckSame(alone[i], Collect(*chats[i], turns[i]->status(), streamed[i]));
  }
}
