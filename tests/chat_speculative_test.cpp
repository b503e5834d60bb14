// Speculative decoding through the chat layer (ChatSessionParams::max_draft, docs/speculative.md):
// every reply, and the whole session after it, is bit for bit the reply without speculation — with
// constraints, tool choice, a reasoning budget, stop strings and seeded sampling — and the batching
// engine refuses a speculating session in one explicit place.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "chat/constraint/grammar.h"
#include "chat/engine.h"
#include "qwenrt/qwenrt.h"
#include "test_util.h"
#include "testing/synth_model.h"

namespace qwenrt::test {
namespace {

// The tiny shape with an MTP block, the tiny fixture's tokenizer and chat template, as a file.
const std::string& TinyWithHeadPath() {
  static const std::string path = [] {
    SynthOptions o;
    REQUIRE(FindSynthShape("tiny", &o.shape));
    o.mtp = true;
    o.vocab_from = DataPath("tiny-s1-q4km.gguf");
    std::string p = "/tmp/qwenrt-chat-spec-" + std::to_string(getpid()) + ".gguf";
    ThreadPool pool(2);
    const Status written = WriteSynthModel(o, p, pool);
    INFO(written.ToString());
    REQUIRE(written.ok());
    std::atexit([] { std::remove(TinyWithHeadPath().c_str()); });
    return p;
  }();
  return path;
}

std::shared_ptr<const ChatModel> TinyWithHead() {
  static std::shared_ptr<const ChatModel> model = [] {
    auto m = Model::Load(TinyWithHeadPath());
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    auto cm = ChatModel::Create(*m);
    REQUIRE(cm.ok());
    return *cm;
  }();
  return model;
}

ChatMessage User(std::string text) { return {Role::kUser, std::move(text), std::nullopt, {}}; }

struct Outcome {
  std::vector<std::string> content, reasoning, calls;
  std::vector<StopReason> stops;
  std::vector<int64_t> generated;
  std::vector<int32_t> transcript;
  std::vector<uint8_t> saved;
  int64_t drafted = 0, accepted = 0;
};

// Two turns of one conversation on a session with `max_draft` (the head kept in step either way,
// so the saved sessions compare byte for byte).
Outcome Converse(int64_t max_draft, const GenerateRequest& gen, const Json& tools, bool thinking,
                 bool adaptive = false) {
  ChatSessionParams p;
  p.session.n_threads = 2;
  p.session.mtp = true;
  p.max_draft = max_draft;
  p.adaptive_draft = adaptive;
  auto chat = ChatSession::Create(TinyWithHead(), p).value();
  Outcome o;
  ChatRequest req;
  req.tools = tools;
  req.enable_thinking = thinking;
  for (const char* text : {"What is the capital of Kenya?", "And of Peru?"}) {
    req.messages.push_back(User(text));
    const Status st = chat->Chat(req, gen);
    INFO(st.ToString());
    REQUIRE(st.ok());
    o.content.push_back(chat->state().reply_content);
    o.reasoning.push_back(chat->state().reply_reasoning);
    o.calls.push_back(chat->state().reply_tool_calls);
    o.stops.push_back(chat->report().stop_reason);
    o.generated.push_back(chat->report().generated_tokens);
    o.drafted += chat->report().drafted_tokens;
    o.accepted += chat->report().accepted_tokens;
    CHECK(chat->report().accepted_tokens <= chat->report().drafted_tokens);
    req.messages.push_back({Role::kAssistant, chat->state().reply_content, std::nullopt, {}});
  }
  o.transcript = chat->session().transcript();
  o.saved = chat->session().SaveToMemory().value();
  return o;
}

// Everything observable equals plain decoding's, and the run did speculate.
void CheckSameOutcome(const Outcome& spec, const Outcome& plain) {
  CHECK(spec.content == plain.content);
  CHECK(spec.reasoning == plain.reasoning);
  CHECK(spec.calls == plain.calls);
  CHECK(spec.stops == plain.stops);
  CHECK(spec.generated == plain.generated);
  CHECK(spec.transcript == plain.transcript);
  CHECK(spec.saved == plain.saved);
  CHECK(spec.drafted > 0);
}

void CheckSame(const GenerateRequest& gen, const Json& tools = nullptr, bool thinking = false) {
  const Outcome plain = Converse(0, gen, tools, thinking);
  CHECK(plain.drafted == 0);
  for (int64_t k : {1, 3}) {
    INFO("max_draft " << k);
    CheckSameOutcome(Converse(k, gen, tools, thinking), plain);
  }
  // The adaptive draft length (DraftLengthPolicy: 0..3 per pass, chosen from measured costs, so
  // timing-dependent) changes only how fast; its first pass drafts the maximum.
  INFO("adaptive, max_draft 3");
  CheckSameOutcome(Converse(3, gen, tools, thinking, /*adaptive=*/true), plain);
}

GenerateRequest Greedy(int64_t max_tokens) {
  GenerateRequest g;
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  return g;
}

TEST_CASE("chat speculation: replies equal plain decoding, greedy and seeded sampling",
          "[speculative]") {
  CheckSame(Greedy(24));
  GenerateRequest sampled = Greedy(24);
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.top_k = 20;
  sampled.sampling.seed = 7;
  sampled.sampling.repetition_penalty = 1.1f;
  CheckSame(sampled);
}

TEST_CASE("chat speculation: a JSON Schema constraint, reasoning budget and stop strings",
          "[speculative]") {
  GenerateRequest json = Greedy(40);
  json.constraint = Grammar::FromJsonSchema(
                        R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},)"
                        R"("age":{"type":"integer"}},"required":["name","age"]})")
                        .value();
  CheckSame(json);
  GenerateRequest think = Greedy(30);
  think.max_reasoning_tokens = 5;  // the budget closes the reasoning: forced tokens in a draft
  CheckSame(think, nullptr, true);
  GenerateRequest stop = Greedy(30);
  stop.stop_strings = {"a", "e"};
  CheckSame(stop);
}

TEST_CASE("chat speculation: tool choice required", "[speculative]") {
  const Json tools = ParseJson(
      R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
      R"("properties":{"city":{"type":"string"}},"required":["city"]}}}])");
  GenerateRequest g = Greedy(48);
  g.tool_choice.mode = ToolChoiceMode::kRequired;
  CheckSame(g, tools);
}

TEST_CASE("chat speculation: refusals", "[speculative]") {
  ChatSessionParams p;
  p.session.n_threads = 2;
  p.max_draft = kMaxVerifyDraft + 1;
  CHECK(ChatSession::Create(TinyWithHead(), p).status().code() == StatusCode::kInvalidArgument);
  p.max_draft = -1;
  CHECK(ChatSession::Create(TinyWithHead(), p).status().code() == StatusCode::kInvalidArgument);
  // A model without an MTP block cannot draft.
  auto plain_model = ChatModel::Create(Model::Load(DataPath("tiny-s1-q4km.gguf")).value()).value();
  p.max_draft = 2;
  const auto no_head = ChatSession::Create(plain_model, p);
  CHECK(no_head.status().code() == StatusCode::kInvalidArgument);
  CHECK(no_head.status().message().find("MTP") != std::string::npos);
  // The engine: one explicit refusal at Submit, nothing fed.
  auto chat = ChatSession::Create(TinyWithHead(), p).value();
  EngineParams ep;
  ep.n_threads = 2;
  ep.worker = false;
  auto engine = Engine::Create(TinyWithHead(), ep).value();
  ChatRequest req;
  req.messages.push_back(User("hi"));
  const auto turn = engine->Submit(*chat, req, Greedy(4));
  CHECK(turn.status().code() == StatusCode::kUnsupported);
  CHECK(chat->session().size() == 0);
}

// The C ABI: qwenrt_session_params.max_draft and the report's counts; a smaller (ABI 2) params
// struct keeps max_draft 0; a bad value and a model without the head are refused.
struct CChat {
  qwenrt_model* model = nullptr;
  qwenrt_session* session = nullptr;
  ~CChat() {
    qwenrt_session_free(session);
    qwenrt_model_free(model);
  }
};

qwenrt_status CCreate(CChat* c, const std::string& path, int32_t max_draft, uint32_t size) {
  if (qwenrt_model_load(path.c_str(), nullptr, &c->model) != QWENRT_OK) return QWENRT_IO;
  qwenrt_session_params p{};
  p.struct_size = size;
  REQUIRE(qwenrt_session_params_init(&p) == QWENRT_OK);
  p.n_threads = 2;
  p.backend = QWENRT_BACKEND_CPU;
  p.max_draft = max_draft;  // past a smaller struct_size: bytes the library must not read
  return qwenrt_session_create(c->model, &p, &c->session);
}

std::string CReply(CChat& c, qwenrt_report* report) {
  qwenrt_message m{};
  m.struct_size = sizeof m;
  m.role = QWENRT_ROLE_USER;
  m.content = "What is 12 times 9?";
  qwenrt_chat chat{};
  chat.struct_size = sizeof chat;
  REQUIRE(qwenrt_chat_init(&chat) == QWENRT_OK);
  chat.messages = &m;
  chat.n_messages = 1;
  chat.enable_thinking = false;
  qwenrt_sampling_params sp{};
  sp.struct_size = sizeof sp;
  REQUIRE(qwenrt_sampling_params_init(&sp) == QWENRT_OK);
  sp.temperature = 0;
  qwenrt_generate_params gp{};
  gp.struct_size = sizeof gp;
  REQUIRE(qwenrt_generate_params_init(&gp) == QWENRT_OK);
  gp.max_tokens = 20;
  report->struct_size = sizeof *report;
  REQUIRE(qwenrt_session_chat(c.session, &chat, &sp, &gp, report) == QWENRT_OK);
  std::string text(4096, '\0');
  size_t needed = 0;
  REQUIRE(qwenrt_session_get_reply(c.session, QWENRT_PIECE_CONTENT, text.data(), text.size(),
                                   &needed) == QWENRT_OK);
  text.resize(needed - 1);
  return text;
}

TEST_CASE("chat speculation: through the C ABI", "[speculative][capi]") {
  CHECK(qwenrt_abi_version() >= 3);
  CChat plain, spec, old;
  REQUIRE(CCreate(&plain, TinyWithHeadPath(), 0, sizeof(qwenrt_session_params)) == QWENRT_OK);
  REQUIRE(CCreate(&spec, TinyWithHeadPath(), 3, sizeof(qwenrt_session_params)) == QWENRT_OK);
  // A host built against the ABI 2 header: its struct ends before max_draft.
  REQUIRE(CCreate(&old, TinyWithHeadPath(), 3,
                  static_cast<uint32_t>(offsetof(qwenrt_session_params, max_draft))) == QWENRT_OK);
  qwenrt_report rp{}, rs{}, ro{};
  const std::string a = CReply(plain, &rp), b = CReply(spec, &rs), c = CReply(old, &ro);
  CHECK(a == b);
  CHECK(a == c);
  CHECK(rp.generated_tokens == rs.generated_tokens);
  CHECK(rs.drafted_tokens > 0);
  CHECK(rs.accepted_tokens <= rs.drafted_tokens);
  CHECK(rp.drafted_tokens == 0);
  CHECK(ro.drafted_tokens == 0);
  CChat bad, headless;
  CHECK(CCreate(&bad, TinyWithHeadPath(), 15, sizeof(qwenrt_session_params)) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(CCreate(&bad, TinyWithHeadPath(), -1, sizeof(qwenrt_session_params)) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(CCreate(&headless, DataPath("tiny-s1-q4km.gguf"), 2, sizeof(qwenrt_session_params)) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(headless.session == nullptr);
}
}  // namespace
}  // namespace qwenrt::test
