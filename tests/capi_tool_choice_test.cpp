// tool_choice through the C ABI on the random-weight fixture model: its output is noise, so only
// the constraint can make a tool call parse. Every call a constrained reply emits must parse (a
// name, no "raw" text) and its arguments must validate against the function's parameters; NONE
// must suppress the calls FREE lets through on the same seeds; compile problems are errors naming
// the tool, parameter and keyword.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "quick_mode.h"
#include "qwenrt/qwenrt.h"

// Through the deprecated (ABI 1) session setters (qwenrt_session_set_tool_choice /
// _set_reasoning_budget), which must keep working; capi_params_test checks that the
// qwenrt_generate_params fields give the same output.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using Json = nlohmann::json;

const std::string kModel = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

// Bounded value grammars (a random model never ends free text on its own).
const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather",
   "parameters": {"type": "object", "properties": {
     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
     "days": {"type": "integer", "minimum": 1, "maximum": 7},
     "hourly": {"type": "boolean"}},
    "required": ["unit", "days"]}}},
  {"type": "function", "function": {"name": "pick",
   "parameters": {"type": "object", "properties": {
     "colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
     "n": {"type": "integer", "minimum": -5, "maximum": 5}},
    "required": ["n"]}}}
])";

// The arguments match the parameters of kTools' `name` (checked by hand: no validator here).
void CheckCall(const Json& call, const std::set<std::string>& names) {
  INFO(call.dump());
  REQUIRE(call.is_object());
  CHECK_FALSE(call.contains("raw"));  // ToolCallJson's mark of a block that did not parse
  const std::string name = call.value("name", "");
  REQUIRE(names.count(name) == 1);
  const Json& a = call["arguments"];
  REQUIRE(a.is_object());
  if (name == "get_weather") {
    for (const auto& [k, v] : a.items())
      CHECK(std::set<std::string>{"unit", "days", "hourly"}.count(k));
    REQUIRE(a.contains("unit"));
    CHECK((a["unit"] == "celsius" || a["unit"] == "fahrenheit"));
    REQUIRE(a.contains("days"));
    REQUIRE(a["days"].is_number_integer());
    CHECK(a["days"].get<int>() >= 1);
    CHECK(a["days"].get<int>() <= 7);
    if (a.contains("hourly")) CHECK(a["hourly"].is_boolean());
  } else {
    for (const auto& [k, v] : a.items()) CHECK(std::set<std::string>{"colors", "n"}.count(k));
    REQUIRE(a.contains("n"));
    REQUIRE(a["n"].is_number_integer());
    CHECK(a["n"].get<int>() >= -5);
    CHECK(a["n"].get<int>() <= 5);
    if (a.contains("colors")) {
      REQUIRE(a["colors"].is_array());
      CHECK(a["colors"].size() <= 3);
      for (const Json& c : a["colors"]) CHECK((c == "red" || c == "green" || c == "blue"));
    }
  }
}

std::string Reply(qwenrt_session* s, qwenrt_piece_kind kind) {
  size_t n = 0;
  qwenrt_session_get_reply(s, kind, nullptr, 0, &n);
  std::string out(n + 1, '\0');
  REQUIRE(qwenrt_session_get_reply(s, kind, out.data(), out.size(), &n) == QWENRT_OK);
  out.resize(std::strlen(out.c_str()));
  return out;
}

struct Fixture {
  qwenrt_model* m = nullptr;
  qwenrt_session* s = nullptr;
  qwenrt_message msg{};
  Fixture() {
    REQUIRE(qwenrt_model_load(kModel.c_str(), nullptr, &m) == QWENRT_OK);
    qwenrt_session_params sp;
    REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &sp) == QWENRT_OK);
    sp.backend = QWENRT_BACKEND_CPU;
    sp.n_threads = 1;
    REQUIRE(qwenrt_session_create(m, &sp, &s) == QWENRT_OK);
    msg.struct_size = sizeof msg;
    msg.role = QWENRT_ROLE_USER;
    msg.content = "Call a tool";
  }
  ~Fixture() {
    qwenrt_session_free(s);
    qwenrt_model_free(m);
  }
  // One chat turn with random sampling; returns the status, fills the report.
  qwenrt_status Chat(uint64_t seed, bool thinking, qwenrt_report* r, const char* tools = kTools,
                     int max_tokens = 400, float temperature = 1.5f) {
    qwenrt_chat chat;
    REQUIRE(QWENRT_INIT(qwenrt_chat_init, &chat) == QWENRT_OK);
    chat.messages = &msg;
    chat.n_messages = 1;
    chat.tools_json = tools;
    chat.enable_thinking = thinking;
    qwenrt_generate_params gp;
    REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
    gp.max_tokens = max_tokens;
    qwenrt_sampling_params samp;
    REQUIRE(QWENRT_INIT(qwenrt_sampling_params_init, &samp) == QWENRT_OK);
    samp.temperature = temperature;
    samp.seed = seed;
    r->struct_size = sizeof *r;
    return qwenrt_session_chat(s, &chat, &samp, &gp, r);
  }
  Json Calls() { return Json::parse(Reply(s, QWENRT_PIECE_TOOL_CALL)); }
};

TEST_CASE("tool_choice required: every reply is tool calls that parse and validate",
          "[capi][tool_choice]") {
  Fixture f;
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_REQUIRED, nullptr) == QWENRT_OK);
  REQUIRE(qwenrt_session_set_reasoning_budget(f.s, 6) == QWENRT_OK);
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const bool thinking = seed % 2 == 0;
    INFO("seed " << seed << " thinking " << thinking);
    qwenrt_report r{};
    REQUIRE(f.Chat(seed, thinking, &r) == QWENRT_OK);
    CHECK(r.stop_reason == QWENRT_STOP_EOG);  // the grammar lets the reply end only after a call
    CHECK(r.forced_tokens > 0);  // the markup's single-choice bytes are fed without sampling
    CHECK(r.forced_tokens < r.generated_tokens);
    const Json calls = f.Calls();
    REQUIRE(calls.is_array());
    REQUIRE(calls.size() >= 1);
    for (const Json& c : calls) {
      CheckCall(c, {"get_weather", "pick"});
      seen.insert(c.value("name", ""));
    }
    CHECK(Reply(f.s, QWENRT_PIECE_CONTENT).find_first_not_of("\n") == std::string::npos);
  }
  CHECK(seen.size() == 2);  // both functions were reachable
}

TEST_CASE("tool_choice function: only that function is called", "[capi][tool_choice]") {
  Fixture f;
  CHECK(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_FUNCTION, nullptr) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_REQUIRED, "pick") ==
        QWENRT_INVALID_ARGUMENT);
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_FUNCTION, "pick") == QWENRT_OK);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    qwenrt_report r{};
    REQUIRE(f.Chat(seed, false, &r) == QWENRT_OK);
    CHECK(r.stop_reason == QWENRT_STOP_EOG);
    const Json calls = f.Calls();
    REQUIRE(calls.size() >= 1);
    for (const Json& c : calls) CheckCall(c, {"pick"});
  }
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_FUNCTION, "nope") == QWENRT_OK);
  qwenrt_report r{};
  CHECK(f.Chat(1, false, &r) == QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("nope") != std::string::npos);
}

// Free-sampling seeds of the auto and none cases: 300 tokens each, 3 in quick mode (the sanitizer
// run, tests/quick_mode.h; chat_test forces a call through the logits to check suppression always).
uint64_t FreeSeeds() { return qwenrt::testing::QuickMode() ? 3 : 24; }

TEST_CASE("tool_choice auto: free text, and each call the model opens parses and validates",
          "[capi][tool_choice]") {
  Fixture f;
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_AUTO, nullptr) == QWENRT_OK);
  int with_calls = 0, with_text = 0;
  for (uint64_t seed = 1; seed <= FreeSeeds(); ++seed) {
    INFO("seed " << seed);
    qwenrt_report r{};
    REQUIRE(f.Chat(seed, false, &r, kTools, 300, 10.0f) == QWENRT_OK);
    const Json calls = f.Calls();
    for (const Json& c : calls) CheckCall(c, {"get_weather", "pick"});
    const std::string content = Reply(f.s, QWENRT_PIECE_CONTENT);
    // An opened call is never left unfinished: the reply either ends inside the free text or
    // after complete calls (the content would hold the raw "<tool_call>" otherwise).
    if (!calls.empty()) {
      ++with_calls;
      CHECK(content.find("<tool_call>") == std::string::npos);
      CHECK(r.stop_reason == QWENRT_STOP_EOG);
    }
    if (!content.empty()) ++with_text;
  }
  // How often the random-weight model opens a call is chance: 2 of 120 seeds after this round's
  // kernel changes (every reply ran its 300 tokens), none of these 24. So the calls it opens are
  // checked when they happen; the required / function cases above check constrained calls always.
  WARN("auto: " << with_calls << " of " << FreeSeeds() << " replies opened a call");
  CHECK(with_text >= 1);  // free text outside calls
}

TEST_CASE("tool_choice none suppresses the calls free sampling makes", "[capi][tool_choice]") {
  Fixture f;
  std::vector<uint64_t> calling;  // seeds whose free reply opens <tool_call>
  for (uint64_t seed = 1; seed <= FreeSeeds() && calling.size() < 2; ++seed) {
    qwenrt_report r{};
    REQUIRE(f.Chat(seed, false, &r, kTools, 300, 10.0f) == QWENRT_OK);
    const std::string content = Reply(f.s, QWENRT_PIECE_CONTENT);
    if (!f.Calls().empty() || content.find("<tool_call>") != std::string::npos)
      calling.push_back(seed);
  }
  // Whether free sampling opens a call on these seeds is chance (see the auto case); when none
  // does, there is nothing to suppress and the check below says so.
  if (calling.empty())
    WARN("none: no seed of " << FreeSeeds() << " opened a call freely; suppression not exercised");
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_NONE, nullptr) == QWENRT_OK);
  for (uint64_t seed : calling) {
    INFO("seed " << seed);
    qwenrt_report r{};
    REQUIRE(f.Chat(seed, false, &r, kTools, 300, 10.0f) == QWENRT_OK);
    CHECK(f.Calls().empty());
    CHECK(Reply(f.s, QWENRT_PIECE_CONTENT).find("<tool_call>") == std::string::npos);
  }
}

TEST_CASE("tool_choice errors name the problem", "[capi][tool_choice]") {
  Fixture f;
  CHECK(qwenrt_session_set_tool_choice(f.s, static_cast<qwenrt_tool_choice>(9), nullptr) ==
        QWENRT_INVALID_ARGUMENT);
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_REQUIRED, nullptr) == QWENRT_OK);
  qwenrt_report r{};
  CHECK(f.Chat(1, false, &r, nullptr) == QWENRT_INVALID_ARGUMENT);  // no tools
  CHECK(std::string(qwenrt_last_error()).find("no tools") != std::string::npos);
  const char* pattern = R"([{"type": "function", "function": {"name": "f", "parameters":
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"}}}}}])";
  CHECK(f.Chat(1, false, &r, pattern) == QWENRT_INVALID_ARGUMENT);
  const std::string e = qwenrt_last_error();
  CHECK(e.find("code") != std::string::npos);
  CHECK(e.find("pattern") != std::string::npos);
  const char* bad_key = R"([{"name": "f", "parameters": {"type": "object", "properties":
    {"a": {"type": "integer", "multipleOf": 3}}, "minProperties": 1}}])";
  CHECK(f.Chat(1, false, &r, bad_key) == QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("minProperties") != std::string::npos);
  // A constraint and a constraining tool_choice exclude each other.
  qwenrt_constraint* c = nullptr;
  REQUIRE(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "a+", 2, &c) == QWENRT_OK);
  REQUIRE(qwenrt_session_set_constraint(f.s, c) == QWENRT_OK);
  CHECK(f.Chat(1, false, &r) == QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("constraint") != std::string::npos);
  qwenrt_constraint_free(c);
  // Nothing was fed by the refused chats: the session is still empty.
  REQUIRE(qwenrt_session_set_constraint(f.s, nullptr) == QWENRT_OK);
  REQUIRE(qwenrt_session_set_tool_choice(f.s, QWENRT_TOOL_CHOICE_FREE, nullptr) == QWENRT_OK);
  REQUIRE(f.Chat(1, false, &r, kTools, 8) == QWENRT_OK);
  CHECK(r.common_prefix == 0);
}

}  // namespace
