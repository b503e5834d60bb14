// One generation path: the same conversation driven through the C ABI (qwenrt.h) and through the
// core's ChatSession (what C++ hosts and capi/ both run) gives the same streamed pieces, the same
// checkpoints, the same reports and report lines, turn after turn, in both history modes.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "model/model.h"
#include "qwenrt/qwenrt.h"
#include "test_util.h"

namespace qwenrt {
namespace {

using test::ParseJson;

const std::string kModel = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";
const char* kUsers[] = {"Hello world", "Tell me more about it.", "And a tool?", "Thanks!"};

struct Piece {
  int kind;  // 0 content, 1 reasoning, 2 tool call
  std::string text;
  bool operator==(const Piece&) const = default;
};

struct TurnResult {
  std::vector<Piece> pieces;
  std::vector<int64_t> checkpoints;
  std::vector<int32_t> transcript;
  std::string report_line, content, reasoning, tool_calls;
  int64_t prompt = 0, common = 0, reused = 0, prefilled = 0, checkpoint = 0, generated = 0;
  int miss = 0, stop = 0, n_checkpoints = 0, budget_hit = 0;
  int64_t reasoning_tokens = 0;
  uint64_t checkpoint_bytes = 0;
};

void Append(std::vector<Piece>& pieces, int kind, std::string_view text) {
  if (!pieces.empty() && pieces.back().kind == kind && kind != 2) {
    pieces.back().text.append(text);
  } else {
    pieces.push_back({kind, std::string(text)});
  }
}

constexpr int32_t kMaxTokens = 20;
int32_t g_reasoning_budget = 0;  // max_reasoning_tokens of both runs
constexpr uint64_t kSeed = 7;
constexpr float kTemperature = 1.5f;

// ---- through the C ABI

bool CollectC(qwenrt_piece_kind kind, const char* text, size_t len, void* user) {
  const int k = kind == QWENRT_PIECE_CONTENT ? 0 : kind == QWENRT_PIECE_REASONING ? 1 : 2;
  Append(*static_cast<std::vector<Piece>*>(user), k, std::string_view(text, len));
  return true;
}

std::string ReplyC(qwenrt_session* s, qwenrt_piece_kind kind) {
  size_t n = 0;
  qwenrt_session_get_reply(s, kind, nullptr, 0, &n);
  std::string out(n + 1, '\0');
  REQUIRE(qwenrt_session_get_reply(s, kind, out.data(), out.size(), &n) == QWENRT_OK);
  out.resize(std::strlen(out.c_str()));  // `n` counts the terminating NUL
  return out;
}

std::vector<TurnResult> RunC(qwenrt_history_mode mode, const char* tools_json) {
  qwenrt_model* model = nullptr;
  REQUIRE(qwenrt_model_load(kModel.c_str(), nullptr, &model) == QWENRT_OK);
  qwenrt_session_params sp;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &sp) == QWENRT_OK);
  sp.backend = QWENRT_BACKEND_CPU;
  sp.n_threads = 2;
  sp.history_mode = mode;
  qwenrt_session* s = nullptr;
  REQUIRE(qwenrt_session_create(model, &sp, &s) == QWENRT_OK);
  std::vector<std::string> contents;  // keeps the assistant texts alive
  contents.reserve(8);
  std::vector<qwenrt_message> msgs;
  std::vector<TurnResult> out;
  for (const char* user : kUsers) {
    qwenrt_message m{};
    m.struct_size = sizeof m;
    m.role = QWENRT_ROLE_USER;
    m.content = user;
    msgs.push_back(m);
    qwenrt_chat chat;
    REQUIRE(QWENRT_INIT(qwenrt_chat_init, &chat) == QWENRT_OK);
    chat.messages = msgs.data();
    chat.n_messages = msgs.size();
    chat.tools_json = tools_json;
    qwenrt_sampling_params samp;
    REQUIRE(QWENRT_INIT(qwenrt_sampling_params_init, &samp) == QWENRT_OK);
    samp.temperature = kTemperature;
    samp.seed = kSeed;
    qwenrt_generate_params gp;
    REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
    gp.max_tokens = kMaxTokens;
    gp.max_reasoning_tokens = g_reasoning_budget;
    TurnResult t;
    gp.callback = CollectC;
    gp.user_data = &t.pieces;
    qwenrt_report r{};
    r.struct_size = sizeof r;
    REQUIRE(qwenrt_session_chat(s, &chat, &samp, &gp, &r) == QWENRT_OK);
    t.prompt = r.prompt_tokens;
    t.common = r.common_prefix;
    t.reused = r.reused_tokens;
    t.prefilled = r.prefilled_tokens;
    t.checkpoint = r.checkpoint_pos;
    t.generated = r.generated_tokens;
    t.miss = r.miss_reason;
    t.stop = r.stop_reason;
    t.n_checkpoints = r.n_checkpoints;
    t.checkpoint_bytes = r.checkpoint_bytes;
    t.reasoning_tokens = r.reasoning_tokens;
    t.budget_hit = r.reasoning_budget_hit;
    size_t n = 0;
    qwenrt_session_get_checkpoints(s, nullptr, 0, &n);
    t.checkpoints.resize(n);
    REQUIRE(qwenrt_session_get_checkpoints(s, t.checkpoints.data(), n, &n) == QWENRT_OK);
    qwenrt_session_get_tokens(s, nullptr, 0, &n);
    t.transcript.resize(n);
    REQUIRE(qwenrt_session_get_tokens(s, t.transcript.data(), n, &n) == QWENRT_OK);
    qwenrt_session_get_report_line(s, nullptr, 0, &n);
    t.report_line.assign(n + 1, '\0');
    REQUIRE(qwenrt_session_get_report_line(s, t.report_line.data(), t.report_line.size(), &n) ==
            QWENRT_OK);
    t.report_line.resize(std::strlen(t.report_line.c_str()));
    t.content = ReplyC(s, QWENRT_PIECE_CONTENT);
    t.reasoning = ReplyC(s, QWENRT_PIECE_REASONING);
    t.tool_calls = ReplyC(s, QWENRT_PIECE_TOOL_CALL);
    contents.push_back(t.content);
    qwenrt_message a{};
    a.struct_size = sizeof a;
    a.role = QWENRT_ROLE_ASSISTANT;
    a.content = contents.back().c_str();
    msgs.push_back(a);
    out.push_back(std::move(t));
  }
  qwenrt_session_free(s);
  qwenrt_model_free(model);
  return out;
}

// ---- through the core, as a C++ host

std::vector<TurnResult> RunCore(HistoryMode mode, const char* tools_json) {
  auto loaded = Model::Load(kModel);
  REQUIRE(loaded.ok());
  auto model = ChatModel::Create(*loaded);
  REQUIRE(model.ok());
  ChatSessionParams p;
  p.session.backend = BackendKind::kCpu;
  p.session.n_threads = 2;
  p.history = mode;
  auto chat = ChatSession::Create(*model, p);
  REQUIRE(chat.ok());
  ChatSession& s = **chat;
  ChatRequest req;
  if (tools_json != nullptr) req.tools = ParseJson(tools_json);
  std::vector<TurnResult> out;
  for (const char* user : kUsers) {
    req.messages.push_back({Role::kUser, user, std::nullopt, {}});
    GenerateRequest gen;
    gen.max_tokens = kMaxTokens;
    gen.max_reasoning_tokens = g_reasoning_budget;
    gen.sampling.temperature = kTemperature;
    gen.sampling.seed = kSeed;
    TurnResult t;
    gen.on_piece = [&](PieceKind kind, std::string_view text) {
      Append(t.pieces,
             kind == PieceKind::kContent     ? 0
             : kind == PieceKind::kReasoning ? 1
                                             : 2,
             text);
      return true;
    };
    REQUIRE(s.Chat(req, gen).ok());
    const TurnReport& r = s.report();
    t.prompt = r.feed.prompt_tokens;
    t.common = r.feed.common_prefix;
    t.reused = r.feed.reused_tokens;
    t.prefilled = r.feed.prefilled_tokens;
    t.checkpoint = r.feed.checkpoint_pos;
    t.generated = r.generated_tokens;
    t.miss = r.feed.miss_reason == MissReason::kNone           ? QWENRT_MISS_NONE
             : r.feed.miss_reason == MissReason::kEmpty        ? QWENRT_MISS_EMPTY
             : r.feed.miss_reason == MissReason::kNoCheckpoint ? QWENRT_MISS_NO_CHECKPOINT
                                                               : QWENRT_MISS_OTHER;
    t.stop = r.stop_reason == StopReason::kEndOfGeneration ? QWENRT_STOP_EOG
             : r.stop_reason == StopReason::kMaxTokens     ? QWENRT_STOP_MAX_TOKENS
             : r.stop_reason == StopReason::kStopString    ? QWENRT_STOP_STRING
             : r.stop_reason == StopReason::kCallback      ? QWENRT_STOP_CALLBACK
             : r.stop_reason == StopReason::kContextFull   ? QWENRT_STOP_CONTEXT_FULL
                                                           : QWENRT_STOP_NONE;
    t.n_checkpoints = static_cast<int>(r.n_checkpoints);
    t.checkpoint_bytes = r.checkpoint_bytes;
    t.reasoning_tokens = r.reasoning_tokens;
    t.budget_hit = r.reasoning_budget_hit ? 1 : 0;
    for (const CheckpointInfo& c : s.session().checkpoints()) t.checkpoints.push_back(c.pos);
    t.transcript = s.session().transcript();
    t.report_line = s.report_line();
    t.content = s.state().reply_content;
    t.reasoning = s.state().reply_reasoning;
    t.tool_calls = s.state().reply_tool_calls;
    req.messages.push_back({Role::kAssistant, t.content, std::nullopt, {}});
    out.push_back(std::move(t));
  }
  return out;
}

void CheckSame(const std::vector<TurnResult>& c, const std::vector<TurnResult>& core) {
  REQUIRE(c.size() == core.size());
  for (size_t i = 0; i < c.size(); ++i) {
    INFO("turn " << i + 1);
    CHECK(c[i].pieces == core[i].pieces);
    CHECK(c[i].checkpoints == core[i].checkpoints);
    CHECK(c[i].transcript == core[i].transcript);
    CHECK(c[i].report_line == core[i].report_line);
    CHECK(c[i].content == core[i].content);
    CHECK(c[i].reasoning == core[i].reasoning);
    CHECK(c[i].tool_calls == core[i].tool_calls);
    CHECK(c[i].prompt == core[i].prompt);
    CHECK(c[i].common == core[i].common);
    CHECK(c[i].reused == core[i].reused);
    CHECK(c[i].prefilled == core[i].prefilled);
    CHECK(c[i].checkpoint == core[i].checkpoint);
    CHECK(c[i].generated == core[i].generated);
    CHECK(c[i].miss == core[i].miss);
    CHECK(c[i].stop == core[i].stop);
    CHECK(c[i].n_checkpoints == core[i].n_checkpoints);
    CHECK(c[i].checkpoint_bytes == core[i].checkpoint_bytes);
    CHECK(c[i].reasoning_tokens == core[i].reasoning_tokens);
    CHECK(c[i].budget_hit == core[i].budget_hit);
  }
  // Later turns really reused earlier ones (the comparison is not between two empty runs).
  CHECK(core.back().reused > 0);
  CHECK(core.back().prefilled < core.back().prompt);
}

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])";

TEST_CASE("C ABI and C++ host: same pieces, checkpoints and reports (template history)",
          "[chat][capi]") {
  CheckSame(RunC(QWENRT_HISTORY_TEMPLATE, nullptr), RunCore(HistoryMode::kTemplate, nullptr));
}

TEST_CASE("C ABI and C++ host: same pieces, checkpoints and reports (transcript history, tools)",
          "[chat][capi]") {
  CheckSame(RunC(QWENRT_HISTORY_TRANSCRIPT, kTools), RunCore(HistoryMode::kTranscript, kTools));
}

TEST_CASE("C ABI and C++ host: the same with a thinking budget", "[chat][capi]") {
  g_reasoning_budget = 3;
  const auto c = RunC(QWENRT_HISTORY_TEMPLATE, nullptr);
  const auto core = RunCore(HistoryMode::kTemplate, nullptr);
  g_reasoning_budget = 0;
  CheckSame(c, core);
  CHECK(core[0].budget_hit == 1);
  CHECK(core[0].reasoning_tokens == 5);
}

}  // namespace
}  // namespace qwenrt
