// The library's JSON type (src/text/json.h): parsing as RFC 8259 and nlohmann read it (numbers'
// kinds, escapes and surrogates, duplicate keys), refusals with the offset, the depth and key
// limits, both text forms, JSON Schema's equality, and destruction that neither allocates nor
// recurses, which is the reason the type exists.
#include "text/json.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "alloc_counter.h"

namespace qwenrt {
namespace {

Json P(std::string_view text, Json::Limits limits = {}) {
  StatusOr<Json> r = Json::Parse(text, limits);
  INFO(text);
  REQUIRE(r.ok());
  return std::move(*r);
}

std::string Error(std::string_view text, Json::Limits limits = {}) {
  StatusOr<Json> r = Json::Parse(text, limits, "doc");
  INFO(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST_CASE("json: scalars and their kinds", "[json]") {
  CHECK(P("null").is_null());
  CHECK(P(" true ").get<bool>());
  CHECK_FALSE(P("false").get<bool>());
  CHECK(P("-0").type() == Json::Type::kInt);
  CHECK(P("9223372036854775807").get<int64_t>() == INT64_MAX);
  CHECK(P("-9223372036854775808").get<int64_t>() == INT64_MIN);
  CHECK(P("18446744073709551615").type() == Json::Type::kUint);
  CHECK(P("18446744073709551615").get<uint64_t>() == UINT64_MAX);
  CHECK(P("18446744073709551616").type() == Json::Type::kFloat);  // beyond every integer kind
  CHECK(P("1.0").type() == Json::Type::kFloat);
  CHECK(P("1e2").get<double>() == 100.0);
  CHECK(P("-1.5E-3").get<double>() == -0.0015);
  CHECK(P("\"a\\u00e9\\ud83d\\ude00\\n\\/\"").str() == "a\xC3\xA9\xF0\x9F\x98\x80\n/");
  CHECK(P("\"\xE4\xB8\xAD\"").str() == "\xE4\xB8\xAD");
  CHECK(P("\"\"").str().empty());
  // get<> converts as nlohmann does: numbers (and booleans) to numbers, nothing else.
  CHECK(P("true").get<int>() == 1);
  CHECK(P("2.9").get<int64_t>() == 2);
  CHECK(P("1e300").get<int>() == INT32_MAX);
  CHECK_THROWS_AS(P("\"1\"").get<double>(), Json::TypeError);
  CHECK_THROWS_AS(P("1").get<std::string>(), Json::TypeError);
  CHECK_THROWS_AS(P("1").get<bool>(), Json::TypeError);
}

TEST_CASE("json: malformed documents are refused with the offset", "[json]") {
  for (const char* bad : {"",
                          " ",
                          "nul",
                          "tru",
                          "01",
                          "1.",
                          ".5",
                          "1e",
                          "-",
                          "+1",
                          "[1,]",
                          "[1 2]",
                          "{\"a\" 1}",
                          "{\"a\":}",
                          "{1:2}",
                          "{\"a\":1,}",
                          "[",
                          "{",
                          "\"abc",
                          "\"\\x\"",
                          "\"\\u12\"",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"\\ud800\\u0041\"",
                          "\"\x01\"",
                          "\"\xC3\"",
                          "\"\xED\xA0\x80\"",
                          "1 2",
                          "[] x",
                          "1e400",
                          "NaN",
                          "Infinity",
                          "'a'"}) {
    const std::string e = Error(bad);
    CHECK(e.find("doc") != std::string::npos);
  }
  CHECK(Error("[1, 2, x]").find("offset 7") != std::string::npos);
}

TEST_CASE("json: depth and key limits", "[json]") {
  const auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  CHECK(P(nested(128), {128, SIZE_MAX}).is_array());
  bool too_deep = false;
  StatusOr<Json> r = Json::Parse(nested(129), {128, SIZE_MAX}, "tools", &too_deep);
  REQUIRE_FALSE(r.ok());
  CHECK(too_deep);
  CHECK(r.status().message() == "tools nests deeper than 128 levels");
  // A million levels are refused at the limit, without recursion.
  CHECK(Error(nested(1000000), {64, SIZE_MAX}).find("deeper than 64") != std::string::npos);
  CHECK_FALSE(Json::Parse("[1, 2", {128, SIZE_MAX}, "x", &too_deep).ok());
  CHECK_FALSE(too_deep);

  CHECK(P(R"({"a": 1, "b": 2, "c": 3})", {8, 3}).size() == 3);
  CHECK(Error(R"({"a": 1, "b": 2, "c": 3, "d": 4})", {8, 3}).find("more than 3 keys") !=
        std::string::npos);
}

TEST_CASE("json: a duplicate key keeps its first place and its last value", "[json]") {
  const Json j = P(R"({"b": 1, "a": 2, "b": 3, "c": 4, "a": 5})");
  CHECK(j.dump() == R"({"b":3,"a":5,"c":4})");
  std::string wide = "{";
  for (int i = 0; i < 3000; ++i)
    wide += "\"k" + std::to_string(i % 1000) + "\": " + std::to_string(i) + ",";
  wide.back() = '}';
  const Json w = P(wide);
  REQUIRE(w.size() == 1000);
  CHECK(w.begin().key() == "k0");
  CHECK(w["k7"].get<int>() == 2007);
}

TEST_CASE("json: the compact and the Python text forms", "[json]") {
  const Json j =
      P(R"({"s": "t\"\\\n\u0001\u00e9", "i": -3, "u": 18446744073709551615, "f": 1.5, "g": 1e16,
                      "h": 2.0, "n": null, "b": [true, false, {}, []]})");
  CHECK(j.dump() ==
        "{\"s\":\"t\\\"\\\\\\n\\u0001\xC3\xA9\",\"i\":-3,\"u\":18446744073709551615,\"f\":1.5,"
        "\"g\":1e+16,"
        "\"h\":2.0,\"n\":null,\"b\":[true,false,{},[]]}");
  std::string py;
  j.AppendPython(&py);
  CHECK(py ==
        "{\"s\": \"t\\\"\\\\\\n\\u0001\xC3\xA9\", \"i\": -3, \"u\": 18446744073709551615, \"f\": "
        "1.5, "
        "\"g\": 1e+16, \"h\": 2.0, \"n\": null, \"b\": [true, false, {}, []]}");
  // Parse(dump(x)) == x, and strings with invalid UTF-8 (text a model wrote) dump as U+FFFD.
  CHECK(P(j.dump()) == j);
  Json bad = Json::object();
  bad["k"] = std::string(
      "a\xFF"
      "b");
  CHECK(bad.dump() ==
        "{\"k\":\"a\xEF\xBF\xBD"
        "b\"}");
  Json inf = Json::array({Json(1.0 / 0.0)});
  CHECK(inf.dump() == "[null]");
}

TEST_CASE("json: equality as JSON Schema compares instances", "[json]") {
  CHECK(P("1") == P("1.0"));
  CHECK(P("-1") != P("18446744073709551615"));
  CHECK(P("true") != P("1"));
  CHECK(P(R"({"a": 1, "b": [1, 2]})") == P(R"({"b": [1, 2.0], "a": 1})"));
  CHECK(P(R"({"a": 1})") != P(R"({"a": 1, "b": 2})"));
  CHECK(P("[1, 2]") != P("[2, 1]"));
  CHECK(P("\"object\"") == "object");
  CHECK(P("false") == false);
  // `<` orders consistently with == (std::set treats equal values as one).
  std::set<Json> s = {
      P("1"), P("1.0"), P("\"1\""), P(R"({"x": 1, "y": 2})"), P(R"({"y": 2, "x": 1})"), P("null")};
  CHECK(s.size() == 4);
}

TEST_CASE("json: building values and reading missing members", "[json]") {
  Json j;
  j["a"]["b"] = 1;  // null becomes an object, members appear on write
  j["list"].push_back("x");
  j["list"].push_back(Json::object({{"k", 2}}));
  CHECK(j.dump() == R"({"a":{"b":1},"list":["x",{"k":2}]})");
  const Json& c = j;
  CHECK(c["missing"].is_null());
  CHECK(c["list"][5].is_null());
  CHECK(c["a"]["b"]["deeper"].is_null());
  CHECK(c.value("missing", 7).get<int>() == 7);
  CHECK(j.erase("a") == 1);
  CHECK(j.erase("a") == 0);
  CHECK(Json{{"k", 1}, {"l", "v"}}.is_object());
  CHECK(Json{1, 2, 3}.is_array());
  int n = 0;
  const Json pq = P(R"({"p": 1, "q": 2})");
  for (auto [key, value] : pq.items()) n += value.get<int>() * (key == "q" ? 10 : 1);
  CHECK(n == 21);
  // Assigning a value its own member.
  Json self = P(R"({"inner": {"x": [1, 2, 3]}})");
  self = self["inner"];
  CHECK(self.dump() == R"({"x":[1,2,3]})");
  self = std::move(self["x"]);
  CHECK(self.dump() == "[1,2,3]");
}

TEST_CASE("json: destruction allocates nothing and does not recurse", "[json]") {
  // A parsed document: destroying it allocates nothing (nlohmann's destructor allocates, and
  // terminates the program when that allocation fails).
  std::string doc = "[";
  for (int i = 0; i < 200; ++i) doc += R"({"a": [1, {"b": "text"}, [[], {}]], "c": "x"},)";
  doc += "1]";
  auto* j = new Json(P(doc, {16, SIZE_MAX}));
  const long before = g_allocations.load();
  delete j;
  CHECK(g_allocations.load() == before);

  // A value nested a million deep (only code can build one; Parse would refuse it) is released
  // with a fixed stack.
  Json deep = Json::array();
  for (int i = 0; i < 1000000; ++i) {
    Json outer = Json::array();
    outer.push_back(std::move(deep));
    outer.push_back(i);
    deep = std::move(outer);
  }
  const long before_deep = g_allocations.load();
  deep = nullptr;
  CHECK(g_allocations.load() == before_deep);
  CHECK(deep.is_null());
}

}  // namespace
}  // namespace qwenrt
