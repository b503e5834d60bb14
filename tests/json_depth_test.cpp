// CheckJsonDepth (src/text/json_depth.h): depth counting, brackets in strings and escapes, deep
// hostile input refused in linear time; and what nlohmann::json itself does with deep values
// (parses and destroys iteratively; the recursive steps are ours to guard).
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "text/json_depth.h"

namespace qwenrt {
namespace {

std::string Nested(int depth, char open = '[', char close = ']') {
  return std::string(static_cast<size_t>(depth), open) + std::string(static_cast<size_t>(depth), close);
}

TEST_CASE("CheckJsonDepth counts arrays and objects, not brackets in strings", "[json]") {
  CHECK(CheckJsonDepth("", 0).ok());
  CHECK(CheckJsonDepth("42", 0).ok());
  CHECK(CheckJsonDepth("[]", 1).ok());
  CHECK(CheckJsonDepth("[]", 0).code() == StatusCode::kInvalidArgument);
  CHECK(CheckJsonDepth("[[]]", 2).ok());
  CHECK(CheckJsonDepth("[[]]", 1).code() == StatusCode::kInvalidArgument);
  CHECK(CheckJsonDepth(R"({"a": [1, {"b": []}], "c": {}})", 4).ok());
  CHECK(!CheckJsonDepth(R"({"a": [1, {"b": []}], "c": {}})", 3).ok());
  // Siblings do not add up.
  CHECK(CheckJsonDepth("[[], [], {}, [[]]]", 3).ok());
  // Brackets inside strings, escaped quotes and backslashes.
  CHECK(CheckJsonDepth(R"(["[[[[[[", "\"[[[[", "\\", "{{{{"])", 1).ok());
  CHECK(!CheckJsonDepth(R"(["\\", [[]]])", 2).ok());  // "\\" ends the string; [[]] counts
  // Unbalanced text passes (the parser reports it) without underflow tricks: ']]]' then '[[['.
  CHECK(CheckJsonDepth("]]][[[", 3).ok());
  CHECK(!CheckJsonDepth("]]][[[", 2).ok());
  const Status st = CheckJsonDepth(Nested(10), 4);
  CHECK(st.message().find("4 levels") != std::string::npos);
  CHECK(st.message().find("byte 4") != std::string::npos);
}

TEST_CASE("deeply nested hostile JSON is refused in one pass", "[json][hostile]") {
  for (int depth : {kMaxJsonDepth, kMaxJsonDepth + 1, 50000, 1000000}) {
    const std::string arr = Nested(depth), obj = [&] {
      std::string s;
      for (int i = 0; i < depth; ++i) s += "{\"a\":";
      s += "1";
      s += std::string(static_cast<size_t>(depth), '}');
      return s;
    }();
    const bool ok = depth <= kMaxJsonDepth;
    CHECK(CheckJsonDepth(arr).ok() == ok);
    CHECK(CheckJsonDepth(obj).ok() == ok);
  }
  // An unterminated string hides everything after it (and is then malformed for the parser).
  CHECK(CheckJsonDepth("\"" + Nested(100000)).ok());
}

// nlohmann 3.11 parses with an explicit stack and destroys values iteratively, so a deep value
// can be parsed and freed. Copying or dumping it would recurse per level: that is what the
// depth check has to prevent, before any such step.
TEST_CASE("nlohmann parses and destroys deep values without recursion", "[json]") {
  const std::string deep = Nested(100000);
  {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(deep);
    CHECK(j.is_array());
  }  // destroyed here
  CHECK(!CheckJsonDepth(deep).ok());
}

}  // namespace
}  // namespace qwenrt
