// Chat layer tests: the streaming reply parser (reasoning / content / tool calls), message
// rendering through the model's template, and multi-turn conversations on the tiny fixture model:
// in template mode turns 2 and 3 prefill only the re-rendered previous reply and the new message,
// with logits equal to a full re-prefill; transcript mode appends only the new turn; fixed seeds
// reproduce; streamed text is always whole UTF-8 characters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat.h"
#include "text/chat_template.h"
#include "model/model.h"
#include "session/session.h"
#include "test_util.h"
#include "text/tokenizer.h"

namespace qwenrt {
namespace {

using Json = nlohmann::ordered_json;
const std::string kData = QWENRT_TEST_DATA;

using test::IsValidUtf8;

// Collects the events of a parse.
struct Events {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
  int n = 0;
  ChatCallback Callback() {
    return [this](const ChatEvent& e) {
      ++n;
      if (e.kind == ChatEvent::Kind::kReasoning) reasoning += e.text;
      if (e.kind == ChatEvent::Kind::kContent) content += e.text;
      if (e.kind == ChatEvent::Kind::kToolCall) calls.push_back(*e.tool_call);
      return true;
    };
  }
};

// Feeds `text` to a parser in pieces of `step` bytes (markers get split).
void ParseInPieces(ReplyParser& p, std::string_view text, size_t step, const ChatCallback& cb) {
  for (size_t i = 0; i < text.size(); i += step) p.Push(text.substr(i, step), cb);
  p.Finish(cb);
}

TEST_CASE("reply parser: reasoning, content and trimming, whatever the chunking", "[chat]") {
  const std::string reply = "\nLet me think.\nStill thinking.  \n</think>\n\nThe answer is 4.\n";
  for (size_t step : {1, 2, 3, 7, 100}) {
    INFO("step " << step);
    Events ev;
    ReplyParser p(/*in_reasoning=*/true, nullptr);
    ParseInPieces(p, reply, step, ev.Callback());
    CHECK(p.reasoning() == "Let me think.\nStill thinking.");
    CHECK(p.content() == "The answer is 4.");
    CHECK(ev.reasoning == p.reasoning());
    CHECK(ev.content == p.content());
    CHECK(p.tool_calls().empty());
  }
  // Thinking off: everything is content; a stray "</think>" is just text there.
  ReplyParser off(false, nullptr);
  off.Push("Hi </think> there", nullptr);
  off.Finish(nullptr);
  CHECK(off.content() == "Hi </think> there");
  CHECK(off.reasoning().empty());
  // Unterminated reasoning stays reasoning.
  ReplyParser open(true, nullptr);
  open.Push("thinking forever <", nullptr);
  open.Finish(nullptr);
  CHECK(open.reasoning() == "thinking forever <");
}

TEST_CASE("reply parser: tool calls with schema-typed arguments", "[chat]") {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "metric": {"type": "boolean"}, "days": {"type": "integer"}, "zip": {"type": "string"},
      "opts": {"type": "object"}}}}}])");
  const std::string reply =
      "Need the tool.\n</think>\n\nChecking.\n\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nParis\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n75001\n</parameter>\n"
      "<parameter=opts>\n{\"a\": [1, \"x\"]}\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=noop>\n</function>\n</tool_call>";
  for (size_t step : {1, 5, 1000}) {
    Events ev;
    ReplyParser p(true, tools);
    ParseInPieces(p, reply, step, ev.Callback());
    CHECK(p.reasoning() == "Need the tool.");
    CHECK(p.content() == "Checking.");
    REQUIRE(p.tool_calls().size() == 2);
    const ToolCall& c = p.tool_calls()[0];
    CHECK(c.name == "get_weather");
    CHECK(c.arguments.dump() == R"({"city":"Paris","metric":true,"days":3,"zip":"75001","opts":{"a":[1,"x"]}})");
    CHECK(p.tool_calls()[1].name == "noop");
    CHECK(p.tool_calls()[1].arguments.empty());
    REQUIRE(ev.calls.size() == 2);
    CHECK(ev.calls[0].arguments == c.arguments);
  }
  // Without a schema values are JSON when they parse, Python literals included, else strings.
  auto call = ReplyParser::ParseToolCall("<function=f>\n<parameter=a>\n42\n</parameter>\n"
                                         "<parameter=b>\nFalse\n</parameter>\n<parameter=c>\nhello world\n"
                                         "</parameter>\n<parameter=d>\nline1\nline2\n</parameter>\n</function>", nullptr);
  REQUIRE(call);
  CHECK(call->arguments.dump() == R"({"a":42,"b":false,"c":"hello world","d":"line1\nline2"})");
  // <tool_call> also ends the reasoning; a malformed block is kept as content.
  ReplyParser p(true, nullptr);
  p.Push("hmm<tool_call>\nnot a call\n</tool_call> after", nullptr);
  p.Finish(nullptr);
  CHECK(p.reasoning() == "hmm");
  CHECK(p.tool_calls().empty());
  CHECK(p.content() == "<tool_call>\nnot a call\n</tool_call> after");
  ReplyParser q(false, nullptr);
  q.Push("x <tool_call>\n<function=f>", nullptr);
  q.Finish(nullptr);  // unterminated
  CHECK(q.content() == "x <tool_call>\n<function=f>");
}

TEST_CASE("reply parser: a callback returning false is reported", "[chat]") {
  ReplyParser p(false, nullptr);
  CHECK_FALSE(p.Push("stop here", [](const ChatEvent&) { return false; }));
}

// ---- on the fixture model

struct Fixture {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ChatTemplate> tmpl;

  Fixture() {
    auto m = Model::Load(kData + "/tiny-s1-q4km.gguf");
    REQUIRE(m.ok());
    model = *m;
    auto t = Tokenizer::FromGguf(model->gguf());
    REQUIRE(t.ok());
    tokenizer = std::move(*t);
    std::string source;
    gguf::Error err;
    REQUIRE(model->gguf().GetString("tokenizer.chat_template", &source, &err));
    auto parsed = ChatTemplate::Parse(source);
    REQUIRE(parsed.ok());
    tmpl.emplace(std::move(*parsed));
    Calibrate();
  }

  std::unique_ptr<Session> NewSession() const {
    SessionParams p;
    p.backend = BackendKind::kCpu;
    p.n_threads = 2;
    p.split_invariant = true;  // a resumed prefill equals a full one bit for bit
    p.checkpoint_tail = 0;     // only the chat layer's checkpoints
    auto s = Session::Create(model, p);
    REQUIRE(s.ok());
    return std::move(*s);
  }

  ChatOptions Options(HistoryMode mode) const {
    ChatOptions o;
    o.history = mode;
    o.enable_thinking = true;
    o.max_tokens = 24;
    o.sampling.temperature = 10.0f;
    o.sampling.frequency_penalty = 20.0f;
    o.sampling.seed = 2026;
    o.sampling.logit_bias = bias;
    o.keep_prompt_logits = true;
    return o;
  }

  // The weights are random, with a few huge logits ("\n" first). To get replies with both
  // reasoning and content, "\n" is damped and `</think>` lifted to a few logits below the top,
  // measured once on the first prompt.
  std::vector<std::pair<int32_t, float>> bias;
  void Calibrate() {
    const int32_t newline = tokenizer->Encode("\n")[0], think_end = tokenizer->special_ids().think_end;
    auto s = NewSession();
    const auto prompt = tokenizer->Encode("<|im_start|>user\nHello world<|im_end|>\n<|im_start|>assistant\n<think>\n", true);
    REQUIRE(s->Feed(prompt, {}, nullptr).ok());
    const auto l = s->last_logits();
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

size_t LastAssistantHeader(const std::vector<int32_t>& tokens, const Tokenizer& tok) {
  const auto header = tok.Encode("<|im_start|>assistant", true);
  size_t last = std::string::npos;
  for (size_t i = 0; i + header.size() <= tokens.size(); ++i) {
    if (std::equal(header.begin(), header.end(), tokens.begin() + static_cast<ptrdiff_t>(i))) last = i;
  }
  return last;
}

int64_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return static_cast<int64_t>(n);
}

struct TurnLog {
  std::vector<ChatReply> replies;
};

TurnLog RunThreeTurns(HistoryMode mode, std::vector<std::vector<int32_t>>* transcripts = nullptr) {
  Fixture& f = GetFixture();
  auto session = f.NewSession();
  auto chat = Conversation::Create(*session, *f.tokenizer, *f.tmpl, f.Options(mode));
  REQUIRE(chat.ok());
  TurnLog log;
  for (const char* user : {"Hello world", "Tell me more about it.", "Thanks! One last question?"}) {
    (*chat)->AddUser(user);
    Events ev;
    bool all_valid = true;
    auto cb = [&](const ChatEvent& e) {
      all_valid = all_valid && IsValidUtf8(e.text);
      return ev.Callback()(e);
    };
    auto r = (*chat)->Reply(cb);
    REQUIRE(r.ok());
    CHECK(all_valid);  // streaming never splits a UTF-8 character
    CHECK(ev.reasoning == r->reasoning_content);
    CHECK(ev.content == r->content);
    CHECK(IsValidUtf8(r->content));
    CHECK(IsValidUtf8(r->reasoning_content));
    if (transcripts) transcripts->push_back(session->transcript());
    log.replies.push_back(std::move(*r));
  }
  CHECK((*chat)->messages().size() == 6);
  return log;
}

TEST_CASE("template mode: later turns prefill only the previous reply and the new message",
          "[chat][golden]") {
  Fixture& f = GetFixture();
  const Tokenizer& tok = *f.tokenizer;
  std::vector<std::vector<int32_t>> transcripts;
  const TurnLog log = RunThreeTurns(HistoryMode::kTemplate, &transcripts);
  const auto& r = log.replies;
  // At least one reply has both parts, so the re-rendering really drops reasoning.
  CHECK(std::any_of(r.begin(), r.end(), [](const ChatReply& x) { return !x.reasoning_content.empty(); }));
  CHECK(std::any_of(r.begin(), r.end(), [](const ChatReply& x) { return !x.content.empty(); }));

  // Turn 1 starts from scratch.
  CHECK(r[0].feed_report.reused_tokens == 0);
  CHECK(r[0].feed_report.prefilled_tokens == static_cast<int64_t>(r[0].prompt_tokens.size()));

  const char* users[] = {"Hello world", "Tell me more about it.", "Thanks! One last question?"};
  for (size_t t = 1; t < 3; ++t) {
    INFO("turn " << t + 1);
    const auto& prev = r[t - 1];
    const auto& cur = r[t];
    const size_t header = LastAssistantHeader(prev.prompt_tokens, tok);
    REQUIRE(header != std::string::npos);
    const FeedReport& rep = cur.feed_report;
    CHECK(rep.prompt_tokens == static_cast<int64_t>(cur.prompt_tokens.size()));
    CHECK(rep.common_prefix == CommonPrefix(cur.prompt_tokens, transcripts[t - 1]));
    CHECK(rep.checkpoint_pos == static_cast<int64_t>(header));
    CHECK(rep.reused_tokens == static_cast<int64_t>(header));
    CHECK(rep.prefilled_tokens == static_cast<int64_t>(cur.prompt_tokens.size() - header));
    // What was prefilled is exactly the re-rendered previous reply (reasoning dropped) plus the
    // new user message and the generation prompt.
    const std::vector<int32_t> prefilled(cur.prompt_tokens.begin() + static_cast<ptrdiff_t>(header),
                                         cur.prompt_tokens.end());
    CHECK(tok.Decode(prefilled, true) == "<|im_start|>assistant\n" + prev.content + "<|im_end|>\n<|im_start|>user\n" +
                                             users[t] + "<|im_end|>\n<|im_start|>assistant\n<think>\n");
    // The resumed prefill gives the logits of a full prefill of the same prompt.
    auto fresh = f.NewSession();
    REQUIRE(fresh->Feed(cur.prompt_tokens, {}, nullptr).ok());
    const auto full = fresh->last_logits();
    REQUIRE(cur.prompt_logits.size() == full.size());
    float max_diff = 0;
    for (size_t i = 0; i < full.size(); ++i) max_diff = std::max(max_diff, std::abs(full[i] - cur.prompt_logits[i]));
    CHECK(max_diff == 0.0f);
  }
}

TEST_CASE("fixed-seed conversations are reproducible", "[chat]") {
  const TurnLog a = RunThreeTurns(HistoryMode::kTemplate);
  const TurnLog b = RunThreeTurns(HistoryMode::kTemplate);
  for (size_t t = 0; t < 3; ++t) {
    CHECK(a.replies[t].tokens == b.replies[t].tokens);
    CHECK(a.replies[t].content == b.replies[t].content);
    CHECK(a.replies[t].reasoning_content == b.replies[t].reasoning_content);
  }
}

TEST_CASE("transcript mode appends only the new turn", "[chat]") {
  Fixture& f = GetFixture();
  std::vector<std::vector<int32_t>> transcripts;
  const TurnLog log = RunThreeTurns(HistoryMode::kTranscript, &transcripts);
  for (size_t t = 1; t < 3; ++t) {
    INFO("turn " << t + 1);
    const auto& cur = log.replies[t];
    const auto& before = transcripts[t - 1];
    // The prompt extends exactly what the model holds (reasoning included) ...
    REQUIRE(cur.prompt_tokens.size() > before.size());
    CHECK(std::equal(before.begin(), before.end(), cur.prompt_tokens.begin()));
    // ... closed by <|im_end|>\n, then the new message and the generation prompt.
    const std::vector<int32_t> added(cur.prompt_tokens.begin() + static_cast<ptrdiff_t>(before.size()),
                                     cur.prompt_tokens.end());
    const char* users[] = {"", "Tell me more about it.", "Thanks! One last question?"};
    CHECK(f.tokenizer->Decode(added, true) == std::string("<|im_end|>\n<|im_start|>user\n") + users[t] +
                                                  "<|im_end|>\n<|im_start|>assistant\n<think>\n");
    CHECK(cur.feed_report.reused_tokens == static_cast<int64_t>(before.size()));
    CHECK(cur.feed_report.prefilled_tokens == static_cast<int64_t>(added.size()));
    CHECK(cur.feed_report.checkpoint_pos == -1);  // the live state was extended
  }
}

TEST_CASE("transcript mode: a tool result turn is appended as the template groups it", "[chat]") {
  Fixture& f = GetFixture();
  auto session = f.NewSession();
  ChatOptions o = f.Options(HistoryMode::kTranscript);
  o.tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  auto chat = Conversation::Create(*session, *f.tokenizer, *f.tmpl, o);
  REQUIRE(chat.ok());
  (*chat)->AddUser("Weather in Paris?");
  auto r1 = (*chat)->Reply();
  REQUIRE(r1.ok());
  const std::vector<int32_t> before = session->transcript();
  (*chat)->AddToolResult("{\"temp\": 20}");
  (*chat)->AddToolResult("{\"wind\": 3}");
  auto r2 = (*chat)->Reply();
  REQUIRE(r2.ok());
  REQUIRE(r2->prompt_tokens.size() > before.size());
  CHECK(std::equal(before.begin(), before.end(), r2->prompt_tokens.begin()));
  const std::vector<int32_t> added(r2->prompt_tokens.begin() + static_cast<ptrdiff_t>(before.size()),
                                   r2->prompt_tokens.end());
  CHECK(f.tokenizer->Decode(added, true) ==
        "<|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 20}\n</tool_response>\n<tool_response>\n"
        "{\"wind\": 3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n");
  CHECK(r2->feed_report.prefilled_tokens == static_cast<int64_t>(added.size()));
}

TEST_CASE("messages render through the model's template", "[chat]") {
  Fixture& f = GetFixture();
  auto session = f.NewSession();
  ChatOptions o = f.Options(HistoryMode::kTemplate);
  o.tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  auto chat = Conversation::Create(*session, *f.tokenizer, *f.tmpl, o);
  REQUIRE(chat.ok());
  Conversation& c = **chat;
  c.AddSystem("Be brief.");
  c.AddUser("Weather in Paris?");
  ToolCall call{"get_weather", {{"city", "Paris"}, {"metric", true}}};
  c.Add({Role::kAssistant, "", std::string("Need the tool."), {call}});
  c.AddToolResult("{\"temp\": 20}");
  auto prompt = c.RenderPrompt();
  REQUIRE(prompt.ok());
  // Spec §6.7, after the system block.
  const std::string tail =
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<think>\nNeed the tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
      "<parameter=city>\nParis\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n{\"temp\": 20}\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\n";
  REQUIRE(prompt->size() > tail.size());
  CHECK(prompt->substr(prompt->size() - tail.size()) == tail);
  CHECK(prompt->rfind("<|im_start|>system\n# Tools", 0) == 0);
  // Thinking off closes the think block in the generation prompt.
  c.set_enable_thinking(false);
  auto off = c.RenderPrompt();
  REQUIRE(off.ok());
  const std::string off_tail = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
  CHECK(off->substr(off->size() - off_tail.size()) == off_tail);
  // The prompt asks for checkpoints before each assistant header and at the end.
  std::vector<int32_t> tokens;
  std::vector<int64_t> checkpoints;
  REQUIRE(c.BuildPrompt(&tokens, &checkpoints).ok());
  REQUIRE(checkpoints.size() == 3);
  CHECK(checkpoints.back() == static_cast<int64_t>(tokens.size()));
  for (size_t i = 0; i + 1 < checkpoints.size(); ++i) {
    CHECK(tokens[static_cast<size_t>(checkpoints[i])] == f.tokenizer->special_ids().im_start);
  }
}

TEST_CASE("invalid conversations and options give errors, not crashes", "[chat]") {
  Fixture& f = GetFixture();
  auto session = f.NewSession();
  ChatOptions bad = f.Options(HistoryMode::kTemplate);
  bad.tools = Json::object();
  CHECK(Conversation::Create(*session, *f.tokenizer, *f.tmpl, bad).status().code() == StatusCode::kInvalidArgument);
  bad = f.Options(HistoryMode::kTemplate);
  bad.sampling.top_p = 2.0f;
  CHECK(Conversation::Create(*session, *f.tokenizer, *f.tmpl, bad).status().code() == StatusCode::kInvalidArgument);
  auto chat = Conversation::Create(*session, *f.tokenizer, *f.tmpl, f.Options(HistoryMode::kTemplate));
  REQUIRE(chat.ok());
  // The template's own errors.
  auto r = (*chat)->Reply();
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() == "No messages provided.");
  CHECK((*chat)->messages().empty());
  (*chat)->AddSystem("only a system message");
  r = (*chat)->Reply();
  CHECK(r.status().message() == "No user query found in messages.");
  CHECK((*chat)->messages().size() == 1);
  chat = Conversation::Create(*session, *f.tokenizer, *f.tmpl, f.Options(HistoryMode::kTemplate));
  REQUIRE(chat.ok());
  (*chat)->AddUser("hi");
  (*chat)->AddSystem("late system message");
  CHECK_FALSE((*chat)->Reply().ok());
  CHECK((*chat)->messages().size() == 2);
}

}  // namespace
}  // namespace qwenrt
