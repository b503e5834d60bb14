// ReplyStream (src/chat/reply_stream.h, the one reply splitter): a generated reply, fed token by
// token, comes out as reasoning, content and tool-call pieces with the template's markup removed,
// stop strings honoured, and the streamed text equal to what the stream keeps.
#include "chat/reply_stream.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chat/tool_call.h"
#include "qwenrt/gguf.hpp"
#include "test_util.h"
#include "text/tokenizer.h"

namespace qwenrt {
namespace {

using test::ParseJson;

const Tokenizer& FixtureTokenizer() {
  static std::unique_ptr<Tokenizer> tok = [] {
    gguf::Error err;
    auto file = gguf::File::Open(QWENRT_TEST_DATA "/tiny-s1-q4km.gguf", &err);
    REQUIRE(file.has_value());
    auto t = Tokenizer::FromGguf(*file);
    REQUIRE(t.ok());
    return std::move(t).value();
  }();
  return *tok;
}

struct Piece {
  PieceKind kind;
  std::string text;
};

// Feeds `reply` (tokenized with special tokens) through a ReplyStream; returns the pieces.
std::vector<Piece> Run(std::string_view reply, bool in_reasoning,
                       std::vector<std::string> stops = {}, int stop_after = 0) {
  const Tokenizer& tok = FixtureTokenizer();
  std::vector<Piece> pieces;
  ReplyStream stream(
      tok, in_reasoning, std::move(stops), nullptr, [&](PieceKind k, std::string_view t) {
        if (!pieces.empty() && pieces.back().kind == k && k != PieceKind::kToolCall) {
          pieces.back().text.append(t);
        } else {
          pieces.push_back({k, std::string(t)});
        }
        return stop_after == 0 || static_cast<int>(pieces.size()) < stop_after;
      });
  std::vector<int32_t> ids;
  tok.Encode(reply, SpecialTokens::kAll, &ids);
  bool go = true;
  for (int32_t id : ids) {
    if (!(go = stream.Push(id))) break;
  }
  if (go) stream.Finish();
  std::string content, reasoning;  // what the stream keeps is what it streamed
  for (const Piece& p : pieces) {
    if (p.kind == PieceKind::kContent) content += p.text;
    if (p.kind == PieceKind::kReasoning) reasoning += p.text;
  }
  CHECK(stream.content() == content);
  CHECK(stream.reasoning() == reasoning);
  return pieces;
}

TEST_CASE("reasoning then content, markup removed") {
  auto pieces = Run("I should greet.\n</think>\n\nHello there!", true);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].kind == PieceKind::kReasoning);
  CHECK(pieces[0].text == "I should greet.");
  CHECK(pieces[1].kind == PieceKind::kContent);
  CHECK(pieces[1].text == "Hello there!");
}

TEST_CASE("content only when the prompt closed the think block") {
  auto pieces = Run("Just an answer.", false);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].kind == PieceKind::kContent);
  CHECK(pieces[0].text == "Just an answer.");
}

TEST_CASE("a think block the model opens itself") {
  auto pieces = Run("<think>\nhmm\n</think>\n\nok", false);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].kind == PieceKind::kReasoning);
  CHECK(pieces[0].text == "hmm");
  CHECK(pieces[1].text == "ok");
}

TEST_CASE("tool calls are parsed into JSON") {
  auto pieces =
      Run("Need "
          "weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</"
          "parameter>\n"
          "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
          true);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].kind == PieceKind::kReasoning);
  CHECK(pieces[1].kind == PieceKind::kToolCall);
  CHECK(pieces[1].text == R"({"name":"get_weather","arguments":{"city":"Paris","days":3}})");
}

TEST_CASE("ParseToolCall keeps strings verbatim and marks garbage") {
  CHECK(ToolCallJson("<function=f>\n<parameter=s>\nline 1\nline 2\n</parameter>\n</function>") ==
        R"({"name":"f","arguments":{"s":"line 1\nline 2"}})");
  CHECK(
      ToolCallJson("<function=f>\n<parameter=o>\n{\"a\": [1, true]}\n</parameter>\n</function>") ==
      R"({"name":"f","arguments":{"o":{"a":[1,true]}}})");
  CHECK(ToolCallJson("no function here") ==
        R"({"name":"","arguments":{},"raw":"no function here"})");
  CHECK(ToolCallJson("<function=f>\n<parameter=b>\nTrue\n</parameter>\n</function>") ==
        R"({"name":"f","arguments":{"b":true}})");
  // A "string" parameter stays a string even when its text is JSON.
  auto tools = ParseJson(
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":)"
      R"({"zip":{"type":"string"},"n":{"type":"integer"}}}}}])");
  CHECK(ToolCallJson(
            "<function=f>\n<parameter=zip>\n12345\n</parameter>\n<parameter=n>\n7\n</parameter>\n"
            "</function>",
            tools) == R"({"name":"f","arguments":{"zip":"12345","n":7}})");
  CHECK(ToolCallJson("<function=f>\n<parameter=zip>\n5\n</parameter>\n</function>", tools) ==
        R"({"name":"f","arguments":{"zip":"5"}})");
}

TEST_CASE("stop strings end the content and are not streamed") {
  auto pieces = Run("Count: 1, 2, 3, STOP and more", false, {"STOP"});
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].text == "Count: 1, 2, 3, ");
}

TEST_CASE("the sink can stop the stream") {
  auto pieces = Run("thinking\n</think>\n\nanswer", true, {}, 1);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].kind == PieceKind::kReasoning);
}

TEST_CASE("EndsInsideThink reads the prompt's last think marker") {
  const Tokenizer& tok = FixtureTokenizer();
  auto ids = [&](std::string_view s) {
    std::vector<int32_t> v;
    tok.Encode(s, SpecialTokens::kAll, &v);
    return v;
  };
  CHECK(ReplyStream::EndsInsideThink(tok, ids("<|im_start|>assistant\n<think>\n")));
  CHECK_FALSE(
      ReplyStream::EndsInsideThink(tok, ids("<|im_start|>assistant\n<think>\n\n</think>\n\n")));
  CHECK_FALSE(ReplyStream::EndsInsideThink(tok, ids("<|im_start|>user\nhi<|im_end|>\n")));
}

}  // namespace
}  // namespace qwenrt
