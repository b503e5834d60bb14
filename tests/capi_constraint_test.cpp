// Constrained generation through the C ABI: qwenrt_constraint_compile (GBNF, JSON Schema, regex)
// with specific compile errors, one compiled constraint shared by two sessions and reused across
// turns, and every constrained reply matching it.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "qwenrt/qwenrt.h"

// Through the deprecated (ABI 1) session setters (qwenrt_session_set_constraint /
// _set_reasoning_budget), which must keep working; capi_params_test checks that the
// qwenrt_generate_params fields give the same output.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

const std::string kModel = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";

qwenrt_constraint* Compile(qwenrt_constraint_kind kind, const std::string& text) {
  qwenrt_constraint* c = nullptr;
  const qwenrt_status st = qwenrt_constraint_compile(kind, text.data(), text.size(), &c);
  INFO(qwenrt_last_error());
  REQUIRE(st == QWENRT_OK);
  return c;
}

std::string Reply(qwenrt_session* s) {
  size_t n = 0;
  qwenrt_session_get_reply(s, QWENRT_PIECE_CONTENT, nullptr, 0, &n);
  std::string out(n + 1, '\0');
  REQUIRE(qwenrt_session_get_reply(s, QWENRT_PIECE_CONTENT, out.data(), out.size(), &n) ==
          QWENRT_OK);
  out.resize(std::strlen(out.c_str()));
  return out;
}

TEST_CASE("compile errors name the problem", "[capi][constraint]") {
  qwenrt_constraint* c = nullptr;
  const std::string bad_gbnf = "root ::= \"a\" | (";
  CHECK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_GBNF, bad_gbnf.data(), bad_gbnf.size(), &c) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("line 1") != std::string::npos);
  CHECK(c == nullptr);
  const std::string bad_schema =
      R"({"type": "object", "properties": {"a": {"not": {"enum": ["x"]}}}})";
  CHECK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_JSON_SCHEMA, bad_schema.data(),
                                  bad_schema.size(), &c) == QWENRT_INVALID_ARGUMENT);
  CHECK(std::string(qwenrt_last_error()).find("not") != std::string::npos);
  const std::string bad_regex = "a(b";
  CHECK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, bad_regex.data(), bad_regex.size(),
                                  &c) == QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_constraint_compile(static_cast<qwenrt_constraint_kind>(9), "x", 1, &c) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, nullptr, 0, &c) ==
        QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_constraint_compile(QWENRT_CONSTRAINT_REGEX, "\xff", 1, &c) ==
        QWENRT_INVALID_ARGUMENT);
  qwenrt_constraint_free(nullptr);
}

TEST_CASE("one constraint, two sessions, two turns: every reply matches", "[capi][constraint]") {
  qwenrt_model* m = nullptr;
  REQUIRE(qwenrt_model_load(kModel.c_str(), nullptr, &m) == QWENRT_OK);
  qwenrt_constraint* json =
      Compile(QWENRT_CONSTRAINT_JSON_SCHEMA_COMPACT,
              R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
                                    "maximum": 99}}, "required": ["n"], "additionalProperties": false})");
  qwenrt_constraint* digits = Compile(QWENRT_CONSTRAINT_REGEX, "[0-9]{3}-[a-z]{2}");
  qwenrt_session_params sp;
  REQUIRE(QWENRT_INIT(qwenrt_session_params_init, &sp) == QWENRT_OK);
  sp.backend = QWENRT_BACKEND_CPU;
  sp.n_threads = 1;
  qwenrt_session* s[2] = {nullptr, nullptr};
  for (auto*& x : s) REQUIRE(qwenrt_session_create(m, &sp, &x) == QWENRT_OK);
  qwenrt_message msgs[3] = {};
  for (auto& msg : msgs) msg.struct_size = sizeof msg;
  msgs[0].role = QWENRT_ROLE_USER;
  msgs[0].content = "Give a number";
  qwenrt_sampling_params samp;
  REQUIRE(QWENRT_INIT(qwenrt_sampling_params_init, &samp) == QWENRT_OK);
  samp.temperature = 10.0f;
  samp.presence_penalty = 50.0f;
  for (int turn = 0; turn < 2; ++turn) {
    for (int i = 0; i < 2; ++i) {
      INFO("turn " << turn << " session " << i);
      qwenrt_chat chat;
      REQUIRE(QWENRT_INIT(qwenrt_chat_init, &chat) == QWENRT_OK);
      chat.messages = msgs;
      chat.n_messages = turn == 0 ? 1 : 3;
      chat.enable_thinking = false;
      qwenrt_generate_params gp;
      REQUIRE(QWENRT_INIT(qwenrt_generate_params_init, &gp) == QWENRT_OK);
      gp.max_tokens = 64;
      REQUIRE(qwenrt_session_set_constraint(s[i], i == 0 ? json : digits) == QWENRT_OK);
      samp.seed = static_cast<uint64_t>(10 * turn + i + 1);
      qwenrt_report r{};
      r.struct_size = sizeof r;
      REQUIRE(qwenrt_session_chat(s[i], &chat, &samp, &gp, &r) == QWENRT_OK);
      CHECK(r.stop_reason == QWENRT_STOP_EOG);
      const std::string content = Reply(s[i]);
      if (i == 0) {
        auto j = nlohmann::json::parse(content, nullptr, false);
        REQUIRE_FALSE(j.is_discarded());
        REQUIRE(j.contains("n"));
        CHECK(j["n"].is_number_integer());
        CHECK(j["n"].get<int>() >= 0);
        CHECK(j["n"].get<int>() <= 99);
      } else {
        CHECK(std::regex_match(content, std::regex("[0-9]{3}-[a-z]{2}")));
      }
    }
    msgs[1].role = QWENRT_ROLE_ASSISTANT;
    msgs[1].content = "ok";
    msgs[2].role = QWENRT_ROLE_USER;
    msgs[2].content = "Another";
  }
  qwenrt_constraint_free(json);  // the session keeps its own reference: it still generates JSON
  CHECK(qwenrt_session_set_constraint(s[1], json) == QWENRT_INVALID_ARGUMENT);  // freed: refused
  CHECK(qwenrt_session_set_reasoning_budget(s[1], -1) == QWENRT_INVALID_ARGUMENT);
  CHECK(qwenrt_session_set_constraint(s[1], nullptr) == QWENRT_OK);  // back to free text
  qwenrt_constraint_free(digits);
  for (auto* x : s) qwenrt_session_free(x);
  qwenrt_model_free(m);
}

}  // namespace
