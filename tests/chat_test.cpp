// The chat engine (src/chat/chat_session.h) on the tiny fixture model: tool-call markup, message
// rendering, and multi-turn conversations — in template mode turns 2 and 3 prefill only the
// re-rendered previous reply and the new message (resumed from the checkpoint after the previous
// `<|im_start|>assistant\n`), with logits equal to a full re-prefill; transcript mode appends only
// the new turn; fixed seeds reproduce; streamed text is always whole UTF-8 characters; bad requests
// are errors that leave the session as it was.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "chat/chat_model.h"
#include "chat/chat_session.h"
#include "chat/constraint/grammar.h"
#include "chat/tool_call.h"
#include "model/model.h"
#include "session/session.h"
#include "test_util.h"
#include "text/tokenizer.h"

namespace qwenrt {
namespace {

using Json = qwenrt::Json;
const std::string kData = QWENRT_TEST_DATA;

using test::IsValidUtf8;
using test::ParseJson;

TEST_CASE("tool-call markup: schema-typed arguments, Python literals, garbage refused", "[chat]") {
  const Json tools = ParseJson(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "metric": {"type": "boolean"}, "days": {"type": "integer"}, "zip": {"type": "string"},
      "opts": {"type": "object"}}}}}])");
  auto c = ParseToolCall(
      "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=metric>\nTrue\n"
      "</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=zip>\n75001\n</parameter>\n"
      "<parameter=opts>\n{\"a\": [1, \"x\"]}\n</parameter>\n</function>\n",
      tools);
  REQUIRE(c);
  CHECK(c->name == "get_weather");
  CHECK(c->arguments.dump() ==
        R"({"city":"Paris","metric":true,"days":3,"zip":"75001","opts":{"a":[1,"x"]}})");
  auto noop = ParseToolCall("<function=noop>\n</function>", tools);
  REQUIRE(noop);
  CHECK(noop->arguments.empty());
  // Without a schema values are JSON when they parse, Python literals included, else strings.
  auto call = ParseToolCall(
      "<function=f>\n<parameter=a>\n42\n</parameter>\n"
      "<parameter=b>\nFalse\n</parameter>\n<parameter=c>\nhello world\n"
      "</parameter>\n<parameter=d>\nline1\nline2\n</parameter>\n</function>",
      nullptr);
  REQUIRE(call);
  CHECK(call->arguments.dump() == R"({"a":42,"b":false,"c":"hello world","d":"line1\nline2"})");
  CHECK_FALSE(ParseToolCall("not a call", nullptr));
  CHECK_FALSE(
      ParseToolCall("<function=f>\n<parameter=a>\n1\n</function>", nullptr));  // unclosed parameter
  CHECK_FALSE(ParseToolCall("<function=>\n</function>", nullptr));
  // Tool definitions of any shape never crash the typing.
  CHECK(ParseToolCall("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>",
                      ParseJson(R"([1, "x", {"function": 3}])")));
}

struct Fixture {
  std::shared_ptr<const ChatModel> model;

  Fixture() {
    auto m = Model::Load(kData + "/tiny-s1-q4km.gguf");
    REQUIRE(m.ok());
    auto cm = ChatModel::Create(*m);
    REQUIRE(cm.ok());
    model = *cm;
    Calibrate();
  }
  const Tokenizer& tok() const { return model->tokenizer(); }

  ChatSessionParams Params(HistoryMode mode) const {
    ChatSessionParams p;
    p.session.backend = BackendKind::kCpu;
    p.session.n_threads = 2;
    p.session.split_invariant = true;  // a resumed prefill equals a full one bit for bit
    p.session.checkpoint_tail = 0;     // only the chat engine's checkpoints
    p.history = mode;
    return p;
  }

  std::unique_ptr<ChatSession> NewChat(HistoryMode mode = HistoryMode::kTemplate) const {
    auto s = ChatSession::Create(model, Params(mode));
    REQUIRE(s.ok());
    return std::move(*s);
  }

  GenerateRequest Gen() const {
    GenerateRequest g;
    g.max_tokens = 24;
    g.sampling.temperature = 10.0f;
    g.sampling.frequency_penalty = 20.0f;
    g.sampling.seed = 2026;
    g.sampling.logit_bias = bias;
    return g;
  }

  // The weights are random, with a few huge logits ("\n" first). To get replies with both
  // reasoning and content, "\n" is damped and `</think>` lifted to a few logits below the top,
  // measured once on the first prompt.
  std::vector<std::pair<int32_t, float>> bias;
  void Calibrate() {
    const int32_t newline = tok().Encode("\n")[0], think_end = tok().special_ids().think_end;
    auto s = NewChat();
    const auto prompt = tok().Encode(
        "<|im_start|>user\nHello world<|im_end|>\n<|im_start|>assistant\n<think>\n", true);
    REQUIRE(s->FeedTokens(prompt).ok());
    const auto l = s->session().last_logits();
    float top = -1e30f;
    for (size_t i = 0; i < l.size(); ++i) {
      if (static_cast<int32_t>(i) != newline) top = std::max(top, l[i]);
    }
    bias = {{newline, -1000.0f}, {think_end, top - l[static_cast<size_t>(think_end)] - 15.0f}};
  }
};

Fixture& GetFixture() {
  static Fixture f;
  return f;
}

ChatMessage User(std::string text) { return {Role::kUser, std::move(text), std::nullopt, {}}; }
ChatMessage Tool(std::string text) { return {Role::kTool, std::move(text), std::nullopt, {}}; }

int64_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return static_cast<int64_t>(n);
}

// One turn as a host runs it, with what the tests look at.
struct Turn {
  std::vector<int32_t> prompt;       // the planned prompt
  std::vector<float> prompt_logits;  // after the feed
  std::vector<int32_t> transcript;   // after the reply
  TurnReport report;
  ChatState reply;
  std::string streamed_content, streamed_reasoning;
};

Turn RunTurn(ChatSession& chat, const ChatRequest& req, GenerateRequest gen) {
  Turn t;
  auto plan = chat.PlanChat(req);
  REQUIRE(plan.ok());
  t.prompt = plan->tokens;
  REQUIRE(chat.FeedChat(req).ok());
  CHECK(chat.session().transcript() == t.prompt);
  const auto l = chat.session().last_logits();
  t.prompt_logits.assign(l.begin(), l.end());
  bool all_valid = true;
  gen.on_piece = [&](PieceKind kind, std::string_view text) {
    all_valid = all_valid && IsValidUtf8(text);
    if (kind == PieceKind::kContent) t.streamed_content += text;
    if (kind == PieceKind::kReasoning) t.streamed_reasoning += text;
    return true;
  };
  REQUIRE(chat.Generate(gen).ok());
  CHECK(all_valid);  // streaming never splits a UTF-8 character
  t.report = chat.report();
  t.reply = chat.state();
  t.transcript = chat.session().transcript();
  CHECK(t.streamed_content == t.reply.reply_content);
  CHECK(t.streamed_reasoning == t.reply.reply_reasoning);
  return t;
}

const char* kUsers[] = {"Hello world", "Tell me more about it.", "Thanks! One last question?"};

std::vector<Turn> RunThreeTurns(HistoryMode mode) {
  Fixture& f = GetFixture();
  auto chat = f.NewChat(mode);
  ChatRequest req;
  std::vector<Turn> turns;
  for (const char* user : kUsers) {
    req.messages.push_back(User(user));
    turns.push_back(RunTurn(*chat, req, f.Gen()));
    const ChatState& r = turns.back().reply;
    ChatMessage a{Role::kAssistant, r.reply_content, std::nullopt, {}};
    if (!r.reply_reasoning.empty()) a.reasoning = r.reply_reasoning;
    req.messages.push_back(std::move(a));
  }
  return turns;
}

TEST_CASE("template mode: later turns prefill only the previous reply and the new message",
          "[chat][golden]") {
  Fixture& f = GetFixture();
  const Tokenizer& tok = f.tok();
  const std::vector<Turn> r = RunThreeTurns(HistoryMode::kTemplate);
  // At least one reply has both parts, so the re-rendering really drops reasoning.
  CHECK(std::any_of(r.begin(), r.end(),
                    [](const Turn& x) { return !x.reply.reply_reasoning.empty(); }));
  CHECK(std::any_of(r.begin(), r.end(),
                    [](const Turn& x) { return !x.reply.reply_content.empty(); }));

  // Turn 1 starts from scratch.
  CHECK(r[0].report.feed.reused_tokens == 0);
  CHECK(r[0].report.feed.miss_reason == MissReason::kEmpty);
  CHECK(r[0].report.feed.prefilled_tokens == static_cast<int64_t>(r[0].prompt.size()));

  const auto header = tok.Encode("<|im_start|>assistant\n", true);
  for (size_t t = 1; t < 3; ++t) {
    INFO("turn " << t + 1);
    const Turn& prev = r[t - 1];
    const Turn& cur = r[t];
    // The checkpoint right after the previous prompt's last "<|im_start|>assistant\n".
    const int64_t resume = static_cast<int64_t>(prev.prompt.size()) - 2;  // minus "<think>\n"
    REQUIRE(std::equal(header.begin(), header.end(),
                       prev.prompt.begin() + (resume - static_cast<int64_t>(header.size()))));
    const FeedReport& rep = cur.report.feed;
    CHECK(rep.prompt_tokens == static_cast<int64_t>(cur.prompt.size()));
    CHECK(rep.common_prefix == CommonPrefix(cur.prompt, prev.transcript));
    CHECK(rep.checkpoint_pos == resume);
    CHECK(rep.reused_tokens == resume);
    CHECK(rep.miss_reason == MissReason::kNone);
    CHECK(rep.prefilled_tokens == static_cast<int64_t>(cur.prompt.size()) - resume);
    // What was prefilled is exactly the re-rendered previous reply (reasoning dropped) plus the
    // new user message and the generation prompt.
    const std::vector<int32_t> prefilled(cur.prompt.begin() + resume, cur.prompt.end());
    CHECK(tok.Decode(prefilled, true) == prev.reply.reply_content +
                                             "<|im_end|>\n<|im_start|>user\n" + kUsers[t] +
                                             "<|im_end|>\n<|im_start|>assistant\n<think>\n");
    // The resumed prefill gives the logits of a full prefill of the same prompt, bit for bit.
    auto fresh = f.NewChat();
    REQUIRE(fresh->FeedTokens(cur.prompt).ok());
    const auto full = fresh->session().last_logits();
    REQUIRE(cur.prompt_logits.size() == full.size());
    CHECK(std::equal(full.begin(), full.end(), cur.prompt_logits.begin()));
  }
}

TEST_CASE("fixed-seed conversations are reproducible", "[chat]") {
  const std::vector<Turn> a = RunThreeTurns(HistoryMode::kTemplate);
  const std::vector<Turn> b = RunThreeTurns(HistoryMode::kTemplate);
  for (size_t t = 0; t < 3; ++t) {
    CHECK(a[t].transcript == b[t].transcript);
    CHECK(a[t].reply.reply_content == b[t].reply.reply_content);
    CHECK(a[t].reply.reply_reasoning == b[t].reply.reply_reasoning);
  }
}

TEST_CASE("transcript mode appends only the new turn", "[chat]") {
  Fixture& f = GetFixture();
  const std::vector<Turn> r = RunThreeTurns(HistoryMode::kTranscript);
  for (size_t t = 1; t < 3; ++t) {
    INFO("turn " << t + 1);
    const Turn& cur = r[t];
    const auto& before = r[t - 1].transcript;
    // The prompt extends exactly what the model holds (reasoning included) ...
    REQUIRE(cur.prompt.size() > before.size());
    CHECK(std::equal(before.begin(), before.end(), cur.prompt.begin()));
    // ... closed by <|im_end|>\n, then the new message and the generation prompt.
    const std::vector<int32_t> added(cur.prompt.begin() + static_cast<ptrdiff_t>(before.size()),
                                     cur.prompt.end());
    CHECK(f.tok().Decode(added, true) == std::string("<|im_end|>\n<|im_start|>user\n") + kUsers[t] +
                                             "<|im_end|>\n<|im_start|>assistant\n<think>\n");
    CHECK(cur.report.feed.reused_tokens == static_cast<int64_t>(before.size()));
    CHECK(cur.report.feed.prefilled_tokens == static_cast<int64_t>(added.size()));
    CHECK(cur.report.feed.checkpoint_pos == -1);  // the live state was extended
  }
}

TEST_CASE("transcript mode: a tool result turn is appended as the template groups it", "[chat]") {
  Fixture& f = GetFixture();
  auto chat = f.NewChat(HistoryMode::kTranscript);
  ChatRequest req;
  req.tools = ParseJson(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  req.messages = {User("Weather in Paris?")};
  const Turn t1 = RunTurn(*chat, req, f.Gen());
  req.messages.push_back({Role::kAssistant, t1.reply.reply_content, std::nullopt, {}});
  req.messages.push_back(Tool("{\"temp\": 20}"));
  req.messages.push_back(Tool("{\"wind\": 3}"));
  const Turn t2 = RunTurn(*chat, req, f.Gen());
  const auto& before = t1.transcript;
  REQUIRE(t2.prompt.size() > before.size());
  CHECK(std::equal(before.begin(), before.end(), t2.prompt.begin()));
  const std::vector<int32_t> added(t2.prompt.begin() + static_cast<ptrdiff_t>(before.size()),
                                   t2.prompt.end());
  CHECK(f.tok().Decode(added, true) ==
        "<|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": "
        "20}\n</tool_response>\n<tool_response>\n"
        "{\"wind\": 3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n");
  CHECK(t2.report.feed.prefilled_tokens == static_cast<int64_t>(added.size()));
}

TEST_CASE("messages render through the model's template; the plan's checkpoints follow the policy",
          "[chat]") {
  Fixture& f = GetFixture();
  ChatRequest req;
  req.tools = ParseJson(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  req.messages = {{Role::kSystem, "Be brief.", std::nullopt, {}}, User("Weather in Paris?")};
  ToolCall call{"get_weather", {{"city", "Paris"}, {"metric", true}}};
  req.messages.push_back({Role::kAssistant, "", std::string("Need the tool."), {call}});
  req.messages.push_back(Tool("{\"temp\": 20}"));
  auto prompt = f.model->Render(req);
  REQUIRE(prompt.ok());
  // docs/spec/tokenizer-and-chat.md §6.7, after the system block.
  const std::string tail =
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<think>\nNeed the "
      "tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nParis\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n</"
      "function>\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n{\"temp\": 20}\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\n";
  REQUIRE(prompt->size() > tail.size());
  CHECK(prompt->substr(prompt->size() - tail.size()) == tail);
  CHECK(prompt->rfind("<|im_start|>system\n# Tools", 0) == 0);
  // Thinking off closes the think block in the generation prompt.
  req.enable_thinking = false;
  auto off = f.model->Render(req);
  REQUIRE(off.ok());
  const std::string off_tail = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  CHECK(off->substr(off->size() - off_tail.size()) == off_tail);
  // The plan asks for a checkpoint at every message start and after every assistant header.
  req.enable_thinking = true;
  auto chat = f.NewChat();
  auto plan = chat->PlanChat(req);
  REQUIRE(plan.ok());
  const int32_t im_start = f.tok().special_ids().im_start;
  const auto header = f.tok().Encode("<|im_start|>assistant\n", true);
  std::vector<int64_t> expected;
  for (size_t i = 0; i < plan->tokens.size(); ++i) {
    if (plan->tokens[i] != im_start) continue;
    if (i > 0) expected.push_back(static_cast<int64_t>(i));
    if (std::equal(header.begin(), header.end(),
                   plan->tokens.begin() + static_cast<ptrdiff_t>(i))) {
      expected.push_back(static_cast<int64_t>(i + header.size()));
    }
  }
  CHECK(plan->checkpoints == expected);
  CHECK(std::count(plan->tokens.begin(), plan->tokens.end(), im_start) ==
        5);  // 4 messages + the prompt
}

TEST_CASE("invalid requests give errors, not crashes, and leave the session as it was", "[chat]") {
  Fixture& f = GetFixture();
  auto chat = f.NewChat();
  ChatRequest req{{User("hi")}};
  REQUIRE(chat->Chat(req, f.Gen()).ok());
  const std::vector<int32_t> held = chat->session().transcript();
  const ChatState state = chat->state();
  auto unchanged = [&] {
    CHECK(chat->session().transcript() == held);
    CHECK(chat->state().reply_content == state.reply_content);
    CHECK(chat->state().transcript_reply_end == state.transcript_reply_end);
  };
  ChatRequest bad = req;
  bad.tools = Json::object();
  CHECK(chat->Chat(bad, f.Gen()).code() == StatusCode::kInvalidArgument);
  unchanged();
  GenerateRequest g = f.Gen();
  g.sampling.top_p = 2.0f;
  CHECK(chat->Chat(req, g).code() == StatusCode::kInvalidArgument);
  unchanged();
  g = f.Gen();
  g.max_tokens = -2;
  CHECK(chat->Chat(req, g).code() == StatusCode::kInvalidArgument);
  unchanged();
  // The template's own errors.
  Status st = chat->FeedChat(ChatRequest{});
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message() == "No messages provided.");
  st = chat->FeedChat(ChatRequest{{{Role::kSystem, "only a system message", std::nullopt, {}}}});
  CHECK(st.message() == "No user query found in messages.");
  CHECK_FALSE(
      chat->FeedChat(
              ChatRequest{{User("hi"), {Role::kSystem, "late system message", std::nullopt, {}}}})
          .ok());
  unchanged();
  // A context too small for the prompt.
  ChatSessionParams p = f.Params(HistoryMode::kTemplate);
  p.session.max_context = 4;
  auto tiny = ChatSession::Create(f.model, p);
  REQUIRE(tiny.ok());
  CHECK((*tiny)->Chat(req, f.Gen()).code() == StatusCode::kContextFull);
  CHECK((*tiny)->session().size() == 0);
}

TEST_CASE("a model's template limits bound its template parse and every render", "[chat]") {
  Fixture& f = GetFixture();
  const ChatRequest req{{User("Hello there, how are you today?")}};
  REQUIRE(f.model->Render(req).ok());
  jinja::TemplateLimits small_output;
  small_output.max_output_bytes = 10;
  auto tight = ChatModel::Create(f.model->model(), small_output);
  REQUIRE(tight.ok());
  StatusOr<std::string> out = (*tight)->Render(req);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::kInvalidArgument);
  CHECK(out.status().message().find("max_output_bytes") != std::string::npos);
  jinja::TemplateLimits small_source;
  small_source.max_template_bytes = 100;
  auto none = ChatModel::Create(f.model->model(), small_source);
  REQUIRE(none.ok());  // the model loads; its chats say why they cannot render
  out = (*none)->Render(req);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::kUnsupported);
  CHECK(out.status().message().find("max_template_bytes") != std::string::npos);
}

TEST_CASE("tools and tool-call arguments nested 50,000 deep are refused without recursion",
          "[chat]") {
  Fixture& f = GetFixture();
  auto chat = f.NewChat();
  const int depth = 50000;
  std::string text(depth, '[');
  text += std::string(depth, ']');
  // A C++ host can build values deeper than any parse allows: Json destroys them iteratively, but
  // copies recurse, so the values are only ever moved.
  ChatRequest req{{User("hi")}};
  req.tools = Json::array();
  req.tools.push_back(ParseJson(text));
  Status st = chat->FeedChat(req);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("nests deeper") != std::string::npos);
  ChatRequest call{{User("hi")}};
  ChatMessage assistant{Role::kAssistant, "", std::nullopt, {}};
  assistant.tool_calls.emplace_back();
  assistant.tool_calls.back().name = "f";
  assistant.tool_calls.back().arguments["a"] = ParseJson(text);
  call.messages.push_back(std::move(assistant));
  call.messages.push_back(User("again"));
  CHECK(f.model->Render(call).status().code() == StatusCode::kInvalidArgument);
  CHECK(chat->session().size() == 0);
  // Parsing caller JSON is bounded too: depth, keys per object (ordered objects insert linearly),
  // size.
  CHECK(ParseRequestJson(text, "tools").status().message().find("nests deeper") !=
        std::string::npos);
  std::string wide = "{";
  for (int i = 0; i < 200000; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  wide += "}";
  const auto t0 = std::chrono::steady_clock::now();
  auto parsed = ParseRequestJson(wide, "tools");
  CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(ParseRequestJson(std::string(2 << 20, ' '), "tools").status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(ParseRequestJson("[1, {\"a\": [true]}]", "tools").ok());
  // The limit leaves real schemas alone.
  Json nested = Json::object();
  for (int i = 0; i < 100; ++i) nested = Json::object({{"properties", nested}});
  CHECK(CheckJsonDepth(nested, kMaxJsonDepth, "schema").ok());
}

TEST_CASE("thinking budget: the reasoning is closed after N tokens and the answer follows",
          "[chat]") {
  Fixture& f = GetFixture();
  const Tokenizer& tok = f.tok();
  ChatRequest req{{User("Hello world")}};
  GenerateRequest g = f.Gen();
  g.max_tokens = 40;
  g.sampling.logit_bias = {
      {tok.Encode("\n")[0], -1000.0f}};  // no early </think>: the budget must end it
  g.sampling.logit_bias.push_back({tok.special_ids().think_end, -1000.0f});
  {
    auto free_run = f.NewChat();
    REQUIRE(free_run->Chat(req, g).ok());
    CHECK_FALSE(free_run->report().reasoning_budget_hit);
    REQUIRE(free_run->report().reasoning_tokens ==
            free_run->report().generated_tokens);  // never closed
  }
  for (int64_t budget : {1, 5, 12}) {
    INFO("budget " << budget);
    auto chat = f.NewChat();
    g.max_reasoning_tokens = budget;
    std::string streamed_reasoning, streamed_content;
    g.on_piece = [&](PieceKind k, std::string_view text) {
      (k == PieceKind::kReasoning ? streamed_reasoning : streamed_content) += text;
      return true;
    };
    REQUIRE(chat->Chat(req, g).ok());
    const TurnReport& r = chat->report();
    CHECK(r.reasoning_budget_hit);
    const std::vector<int32_t> forced = tok.Encode("\n</think>\n\n", true);
    CHECK(r.reasoning_tokens == budget + 2);  // the budget, then "\n" and "</think>"
    // The transcript holds exactly the forced close after `budget` sampled reasoning tokens.
    const auto& t = chat->session().transcript();
    const size_t at = static_cast<size_t>(r.feed.prompt_tokens + budget);
    REQUIRE(t.size() >= at + forced.size());
    CHECK(std::equal(forced.begin(), forced.end(), t.begin() + static_cast<ptrdiff_t>(at)));
    CHECK(chat->state().reply_reasoning == streamed_reasoning);
    CHECK(chat->state().reply_content == streamed_content);
    CHECK(r.generated_tokens >
          budget + static_cast<int64_t>(forced.size()));  // the answer followed
  }
  g.max_reasoning_tokens = -1;
  CHECK(f.NewChat()->Chat(req, g).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a JSON Schema constraint: every reply parses and validates, reasoning stays free",
          "[chat][constraint]") {
  Fixture& f = GetFixture();
  JsonSchemaOptions compact;
  compact.compact = true;
  auto schema =
      Grammar::FromJsonSchema(R"({"type": "object", "properties": {"ok": {"type": "boolean"},
      "pick": {"enum": ["red", "green", 7]}}, "required": ["ok", "pick"], "additionalProperties": false})",
                              compact);
  REQUIRE(schema.ok());
  for (bool thinking : {false, true}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      INFO("thinking " << thinking << " seed " << seed);
      auto chat = f.NewChat();
      ChatRequest req{{User("Answer in JSON")}};
      req.enable_thinking = thinking;
      GenerateRequest g = f.Gen();
      g.sampling.seed = seed;
      g.max_tokens = 200;
      g.max_reasoning_tokens = 8;  // with thinking on, the budget closes the reasoning
      g.constraint = *schema;
      const Status st = chat->Chat(req, g);
      INFO(st.ToString());
      REQUIRE(st.ok());
      CHECK(chat->report().stop_reason ==
            StopReason::kEndOfGeneration);  // ended where the grammar is complete
      const std::string& content = chat->state().reply_content;
      const Json j = ParseJson(content);
      CHECK(j.size() == 2);
      CHECK(j["ok"].is_boolean());
      CHECK((j["pick"] == "red" || j["pick"] == "green" || j["pick"] == 7));
      if (thinking) CHECK(chat->report().reasoning_tokens > 0);
    }
  }
}

// Deterministic: <tool_call> is biased far above every other token, so free sampling opens a call
// at its first content token on every seed. kNone must mask it out (the mask comes after the bias);
// kAuto must let the model open it and then constrain the call, which parses and validates.
TEST_CASE(
    "tool_choice none masks a <tool_call> the logits force; auto lets it open and constrains it",
    "[chat][constraint][tool_choice]") {
  Fixture& f = GetFixture();
  const int32_t open = f.tok().special_ids().tool_call;
  REQUIRE(open >= 0);
  ChatRequest req{{User("Call a tool")}};
  req.enable_thinking = false;
  req.tools = ParseJson(R"([{"type": "function", "function": {"name": "pick", "parameters":
      {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
       "required": ["n"], "additionalProperties": false}}}])");
  for (uint64_t seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    GenerateRequest g = f.Gen();
    g.sampling.seed = seed;
    g.max_tokens = 60;
    g.sampling.logit_bias = {{open, 1000.0f}};
    auto free_chat = f.NewChat();
    REQUIRE(free_chat->Chat(req, g).ok());
    // The bias opened a call (a random model rarely closes it: then it stays in the content).
    INFO(free_chat->state().reply_content);
    CHECK((free_chat->state().reply_tool_calls != "[]" ||
           free_chat->state().reply_content.find("<tool_call>") != std::string::npos));

    g.tool_choice = {ToolChoiceMode::kNone, ""};
    auto none = f.NewChat();
    REQUIRE(none->Chat(req, g).ok());
    CHECK(none->state().reply_tool_calls == "[]");
    CHECK(none->state().reply_content.find("<tool_call>") == std::string::npos);
    CHECK_FALSE(none->state().reply_content.empty());  // it answered in text instead

    g.tool_choice = {ToolChoiceMode::kAuto, ""};
    g.max_tokens = 200;
    g.sampling.logit_bias.clear();
    g.sampling.logit_bias.push_back({open, 1000.0f});
    auto automatic = f.NewChat();
    REQUIRE(automatic->Chat(req, g).ok());
    const Json calls = ParseJson(automatic->state().reply_tool_calls);
    REQUIRE(calls.size() >= 1);
    for (const Json& c : calls) {
      INFO(c.dump());
      CHECK(c.value("name", "") == "pick");
      REQUIRE(c.contains("arguments"));
      REQUIRE(c["arguments"].contains("n"));
      CHECK(c["arguments"]["n"].is_number_integer());
      CHECK(c["arguments"].size() == 1);
    }
  }
}

TEST_CASE("a call from inside the stream callback is refused and changes nothing", "[chat]") {
  Fixture& f = GetFixture();
  auto chat = f.NewChat();
  ChatRequest req{{User("hi")}};
  GenerateRequest g = f.Gen();
  std::vector<Status> nested;
  g.on_piece = [&](PieceKind, std::string_view) {
    if (nested.empty()) {
      nested.push_back(chat->FeedChat(req));
      nested.push_back(chat->Reset());
      nested.push_back(chat->Generate(f.Gen()));
      nested.push_back(chat->SaveToMemory().status());
      nested.push_back(chat->Fork().status());
    }
    return true;
  };
  REQUIRE(chat->Chat(req, g).ok());
  REQUIRE(nested.size() == 5);
  for (const Status& s : nested) {
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("busy") != std::string::npos);
  }
  CHECK(chat->report().generated_tokens > 0);
  // Afterwards the session is usable again.
  CHECK(chat->FeedChat(req).ok());
}

TEST_CASE(
    "fork, save and load carry the chat state: transcript history continues without re-prefill",
    "[chat]") {
  Fixture& f = GetFixture();
  auto chat = f.NewChat(HistoryMode::kTranscript);
  ChatRequest req{{User("Hello world")}};
  const Turn t1 = RunTurn(*chat, req, f.Gen());
  req.messages.push_back({Role::kAssistant, t1.reply.reply_content, std::nullopt, {}});
  req.messages.push_back(User("More?"));
  auto blob = chat->SaveToMemory();
  REQUIRE(blob.ok());
  auto fork = chat->Fork();
  REQUIRE(fork.ok());
  auto loaded = f.NewChat(HistoryMode::kTranscript);
  REQUIRE(loaded->LoadFromMemory(*blob).ok());
  CHECK(loaded->state().reply_content == t1.reply.reply_content);
  const Turn a = RunTurn(*chat, req, f.Gen());
  const Turn b = RunTurn(**fork, req, f.Gen());
  const Turn c = RunTurn(*loaded, req, f.Gen());
  CHECK(a.report.feed.reused_tokens == static_cast<int64_t>(t1.transcript.size()));
  for (const Turn* x : {&b, &c}) {
    CHECK(x->prompt == a.prompt);
    CHECK(x->report.feed.reused_tokens == a.report.feed.reused_tokens);
    CHECK(x->transcript == a.transcript);
    CHECK(x->reply.reply_content == a.reply.reply_content);
  }
  // A damaged chat state is refused before anything changes.
  std::vector<uint8_t> bytes = *blob;
  const std::vector<int32_t> held = loaded->session().transcript();
  CHECK_FALSE(
      loaded->LoadFromMemory(std::span<const uint8_t>(bytes.data(), bytes.size() / 2)).ok());
  CHECK(loaded->session().transcript() == held);
}

TEST_CASE("chat state encoding round-trips; version 1 blobs load; damage is refused", "[chat]") {
  ChatState s;
  s.reply_content = "content";
  s.reply_reasoning = "why";
  s.reply_tool_calls = R"([{"name":"f","arguments":{}}])";
  s.assistants_fed = 2;
  s.transcript_assistants = 3;
  s.transcript_reply_end = 40;
  s.tools = ParseJson(R"([{"type":"function","function":{"name":"f"}}])");
  const std::vector<uint8_t> blob = EncodeChatState(s);
  auto back = DecodeChatState(blob, 100);
  REQUIRE(back.ok());
  CHECK(back->reply_content == s.reply_content);
  CHECK(back->reply_reasoning == s.reply_reasoning);
  CHECK(back->reply_tool_calls == s.reply_tool_calls);
  CHECK(back->transcript_reply_end == 40);
  CHECK(back->tools == s.tools);
  // Marks beyond the session's length are dropped (the next chat renders whole).
  auto short_session = DecodeChatState(blob, 10);
  REQUIRE(short_session.ok());
  CHECK(short_session->transcript_reply_end == -1);
  // Version 1: the same without the tools string.
  std::vector<uint8_t> v1(blob.begin(),
                          blob.end() - 8 - static_cast<ptrdiff_t>(s.tools.dump().size()));
  v1[0] = 1;
  auto old = DecodeChatState(v1, 100);
  REQUIRE(old.ok());
  CHECK(old->reply_content == "content");
  CHECK(old->tools.is_null());
  CHECK(DecodeChatState({}, 0).ok());
  std::vector<uint8_t> future = blob;
  future[0] = 9;
  CHECK(DecodeChatState(future, 100).status().code() == StatusCode::kUnsupported);
  for (size_t cut = 1; cut < blob.size(); cut += 7) {
    CHECK(DecodeChatState(std::span<const uint8_t>(blob.data(), cut), 100).status().code() ==
          StatusCode::kBadFormat);
  }
}

// The run-time guard behind the mask: a hook lets through, on the third constrained mask, only a
// token the grammar refuses. The reply must end with Internal before that token: not appended,
// not evaluated, not streamed, the session exactly where the same reply stopped after two tokens.
namespace guard {
int masks = 0;
int32_t refused = -1;
void LetThroughRefused(std::vector<uint32_t>* mask) {
  if (++masks != 3) return;
  std::fill(mask->begin(), mask->end(), 0u);
  (*mask)[static_cast<size_t>(refused) >> 5] |= 1u << (refused & 31);
}
}  // namespace guard

TEST_CASE("a sampled token the grammar refuses: Internal, the session as before that token",
          "[chat][constraint]") {
  Fixture& f = GetFixture();
  auto grammar = Grammar::FromGbnf("root ::= [a-y]+");
  REQUIRE(grammar.ok());
  const std::vector<int32_t> z = f.tok().Encode("Z");
  REQUIRE(z.size() == 1);
  guard::refused = z[0];
  ChatRequest req{{User("Letters please")}};
  req.enable_thinking = false;
  GenerateRequest g = f.Gen();
  g.max_tokens = 20;
  g.constraint = *grammar;
  std::string streamed;
  g.on_piece = [&streamed](PieceKind, std::string_view text) {
    streamed += text;
    return true;
  };

  auto chat = f.NewChat();
  guard::masks = 0;
  internal::SetConstraintMaskHookForTesting(&guard::LetThroughRefused);
  const Status st = chat->Chat(req, g);
  internal::SetConstraintMaskHookForTesting(nullptr);
  INFO(st.ToString());
  CHECK(st.code() == StatusCode::kInternal);
  CHECK(st.message().find("grammar refuses") != std::string::npos);
  CHECK(guard::masks == 3);
  CHECK(chat->report().generated_tokens == 2);
  CHECK(chat->state().reply_content == streamed);
  CHECK(streamed.find('Z') == std::string::npos);
  const std::vector<int32_t> transcript = chat->session().transcript();
  const std::vector<float> logits(chat->session().last_logits().begin(),
                                  chat->session().last_logits().end());

  // The same turn stopped by max_tokens after the two accepted tokens: the same state.
  auto twin = f.NewChat();
  GenerateRequest g2 = g;
  g2.max_tokens = 2;
  std::string twin_streamed;
  g2.on_piece = [&twin_streamed](PieceKind, std::string_view text) {
    twin_streamed += text;
    return true;
  };
  REQUIRE(twin->Chat(req, g2).ok());
  CHECK(twin->session().transcript() == transcript);
  CHECK(std::equal(logits.begin(), logits.end(), twin->session().last_logits().begin(),
                   twin->session().last_logits().end()));
  CHECK(twin_streamed == streamed);

  // The session goes on: the next turn, without the hook, is constrained and succeeds.
  ChatRequest next = req;
  next.messages.push_back({Role::kAssistant, chat->state().reply_content, std::nullopt, {}});
  next.messages.push_back(User("More"));
  GenerateRequest g3 = g;
  g3.on_piece = nullptr;
  REQUIRE(chat->Chat(next, g3).ok());
  const std::string& content = chat->state().reply_content;
  CHECK(!content.empty());
  CHECK(std::all_of(content.begin(), content.end(), [](char c) { return c >= 'a' && c <= 'y'; }));
}

}  // namespace
}  // namespace qwenrt
