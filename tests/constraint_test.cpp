// Constraint engine tests: GBNF, regex and JSON Schema compile + accept/reject, errors that name
// the problem, partial UTF-8 across tokens, tokens spanning several terminals, recursion, empty and
// huge enums, mask == Accept on every token (the trie walk against the direct byte walk), a
// property test on random schemas, MaskBench samples, and the real Qwen3.5 vocabulary.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "chat/constraint/grammar.h"
#include "chat/constraint/json_schema_validate.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/number_range.h"
#include "chat/constraint/token_trie.h"
#include "chat/constraint/tool_grammar.h"
#include "chat/tool_call.h"
#include "qwenrt/gguf.hpp"
#include "test_util.h"
#include "text/tokenizer.h"
#include "vocab_fixtures.h"

namespace qwenrt {
namespace {

const std::string kData = QWENRT_TEST_DATA;
using Json = qwenrt::Json;

// A trie of the 256 single bytes: token b is byte b.
std::shared_ptr<const TokenTrie> ByteTrie() {
  static const auto trie = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    return *TokenTrie::FromTokens(t);
  }();
  return trie;
}

bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g, ByteTrie());
  return m.AcceptBytes(text) && m.CanEnd();
}

// `text` can be continued to a match (the matcher accepts it as a prefix).
bool Prefix(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g, ByteTrie());
  return m.AcceptBytes(text);
}

std::shared_ptr<const Grammar> Gbnf(const std::string& text) {
  auto g = Grammar::FromGbnf(text);
  INFO(text);
  REQUIRE(g.ok());
  return *g;
}

std::shared_ptr<const Grammar> Schema(const std::string& text, bool compact = false) {
  JsonSchemaOptions o;
  o.compact = compact;
  auto g = Grammar::FromJsonSchema(text, o);
  INFO(text);
  if (!g.ok()) INFO(g.status().message());
  REQUIRE(g.ok());
  return *g;
}

std::string SchemaError(const std::string& text) {
  auto g = Grammar::FromJsonSchema(text);
  REQUIRE_FALSE(g.ok());
  return g.status().message();
}

std::string Dumps(const Json& v) {
  std::string s;
  v.AppendPython(&s);
  return s;
}

using test::FixtureGguf;
using test::ParseJson;

const Tokenizer& FixtureTokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    TokenizerOptions o;
    o.nfc = false;
    auto t = Tokenizer::FromGguf(FixtureGguf(), o);
    if (!t.ok()) FAIL(t.status().ToString());
    return std::move(*t);
  }();
  return *tok;
}

std::shared_ptr<const TokenTrie> FixtureTrie() {
  static const auto trie = *TokenTrie::Build(FixtureTokenizer());
  return trie;
}

// Walks `text` token by token through masks; true when every token was allowed and the end is.
bool TokenWalk(const std::shared_ptr<const Grammar>& g, const Tokenizer& tok,
               const std::shared_ptr<const TokenTrie>& trie, const std::string& text) {
  std::vector<int32_t> ids;
  tok.Encode(text, SpecialTokens::kNone, &ids);
  Matcher m(g, trie);
  std::vector<uint32_t> bits;
  for (int32_t id : ids) {
    m.FillMask(&bits);
    const bool allowed = (bits[id >> 5] >> (id & 31)) & 1;
    const bool advanced = m.Accept(id);
    REQUIRE(allowed == advanced);
    if (!allowed) return false;
  }
  return m.CanEnd();
}

// After each prefix of `text`, the mask must equal "Accept(t) succeeds" for every token t.
void CheckMaskExact(const std::shared_ptr<const Grammar>& g,
                    const std::shared_ptr<const TokenTrie>& trie, const std::string& text) {
  std::vector<uint32_t> bits;
  for (size_t cut = 0; cut <= text.size(); cut += std::max<size_t>(1, text.size() / 7)) {
    Matcher m(g, trie);
    if (!m.AcceptBytes(text.substr(0, cut))) break;
    m.FillMask(&bits);
    for (int32_t t = 0; t < trie->n_vocab(); ++t) {
      Matcher probe(g, trie);
      REQUIRE(probe.AcceptBytes(text.substr(0, cut)));
      const bool allowed = (bits[t >> 5] >> (t & 31)) & 1;
      INFO("prefix " << cut << " token " << t << " '" << trie->TokenBytes(t) << "'");
      REQUIRE(allowed == probe.Accept(t));
    }
  }
}

TEST_CASE("GBNF: literals, classes, repetition, groups, rules", "[constraint]") {
  auto g = Gbnf(R"(# a comment
root ::= greeting " " name ("!" | "?")?
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]* # trailing comment
)");
  CHECK(Matches(g, "hi Bob"));
  CHECK(Matches(g, "hello Alice!"));
  CHECK(Matches(g, "hi X?"));
  CHECK_FALSE(Matches(g, "hi bob"));
  CHECK_FALSE(Matches(g, "hey Bob"));
  CHECK_FALSE(Matches(g, "hi Bob!!"));

  auto rep = Gbnf("root ::= [0-9]{2,4} \"-\" [^a-z\\n]+ \"|\" \"x\"{3} \".\"{1,}\n");
  CHECK(Matches(rep, "12-AB|xxx."));
  CHECK(Matches(rep, "1234-%%|xxx..."));
  CHECK_FALSE(Matches(rep, "1-AB|xxx."));
  CHECK_FALSE(Matches(rep, "12345-AB|xxx."));
  CHECK_FALSE(Matches(rep, "12-ab|xxx."));
  CHECK_FALSE(Matches(rep, "12-AB|xx."));

  auto esc = Gbnf(R"(root ::= "\x41\u00e9\t\"\\" [\]\-] [\u4e00-\u9fff] .)");
  CHECK(Matches(esc, "A\xC3\xA9\t\"\\]\xE4\xB8\x80z"));
  CHECK(Matches(esc, "A\xC3\xA9\t\"\\-\xE9\xBE\xA5\xF0\x9F\x98\x80"));
  CHECK_FALSE(Matches(esc, "A\xC3\xA9\t\"\\]az"));

  // Multi-line alternatives and a rule continuing over a newline.
  auto ml = Gbnf("root ::= a\n  | b\n  \"c\"\na ::= \"a\"\nb ::= \"b\"\n");
  CHECK(Matches(ml, "a"));
  CHECK(Matches(ml, "bc"));
  CHECK_FALSE(Matches(ml, "ac"));
  CHECK_FALSE(Matches(ml, "b"));
}

TEST_CASE("GBNF: a llama.cpp-style JSON grammar (empty first alternative, multi-line groups)",
          "[constraint]") {
  auto g = Gbnf(R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4})
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  CHECK(Matches(g, R"({"a": [1, 2.5e3, "x\u00e9"], "b":{"c": null}})"));
  CHECK(Matches(g, "{\n  \"k\": true}"));
  CHECK_FALSE(Matches(g, R"({"a": [1,]})"));
  CHECK_FALSE(Matches(g, "[1]"));
}

TEST_CASE("GBNF: recursion, CanEnd and Done", "[constraint]") {
  auto g =
      Gbnf("root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= [0-9]+ | list\n");
  CHECK(Matches(g, "[]"));
  CHECK(Matches(g, "[1,[2,[3,[]]],45]"));
  CHECK_FALSE(Matches(g, "[1,[2]"));
  CHECK_FALSE(Matches(g, "[1,]"));
  std::string deep(500, '[');
  deep += std::string(500, ']');
  CHECK(Matches(g, deep));

  Matcher m(g, ByteTrie());
  CHECK_FALSE(m.CanEnd());
  REQUIRE(m.AcceptBytes("[1"));
  CHECK_FALSE(m.CanEnd());
  CHECK_FALSE(m.AcceptBytes("x"));  // rejected bytes leave the state as it was
  REQUIRE(m.AcceptBytes("]"));
  CHECK(m.CanEnd());
  CHECK(m.Done());

  auto open = Gbnf("root ::= \"a\"+\n");
  Matcher o(open, ByteTrie());
  REQUIRE(o.AcceptBytes("aa"));
  CHECK(o.CanEnd());
  CHECK_FALSE(o.Done());
}

TEST_CASE("GBNF: malformed grammars give positioned errors", "[constraint]") {
  auto err = [](const std::string& text) {
    auto g = Grammar::FromGbnf(text);
    REQUIRE_FALSE(g.ok());
    return g.status().message();
  };
  CHECK(err("root ::= foo\n") == "line 1, column 10: undefined rule 'foo'");
  CHECK(err("root ::= \"abc\n").find("line 1, column 10: unterminated string literal") == 0);
  CHECK(err("root ::= [a-\n").find("line 1") == 0);
  CHECK(err("root = \"a\"\n").find("line 1, column 6: expected '::='") == 0);
  CHECK(err("x ::= \"a\"\n").find("no 'root' rule") != std::string::npos);
  CHECK(err("root ::= \"a\"\n\nroot ::= \"b\"\n") == "line 3, column 1: rule 'root' defined twice");
  CHECK(err("root ::= (\"a\" \n").find("missing ')'") != std::string::npos);
  CHECK(err("root ::= \"a\"{3,1}\n").find("n < m") != std::string::npos);
  CHECK(err("root ::= root \"a\" | \"b\"\n") == "left recursion through rule 'root'");
  CHECK(err("root ::= x? root \"a\" | \"b\"\nx ::= \"x\"\n") ==
        "left recursion through rule 'root'");
  CHECK(err("root ::= \"\\q\"\n").find("unknown escape") != std::string::npos);
  // The source's bytes quoted in a message: what is not printable ASCII or valid UTF-8 is \xNN
  // (constraint_fuzz found raw 0xFF and a raw byte after a backslash in messages).
  CHECK(err("root ::= \"(\" \xFF\xFF\n") == "line 1, column 14: unexpected character '\\xFF'");
  CHECK(err("root ::= \"\\\x8E\"\n") == "line 1, column 11: unknown escape '\\\\x8E'");
  CHECK(err("root ::= \"a\" \xC3\xA9\n").find("'\\xC3'") !=
        std::string::npos);  // one byte of a character
  GrammarLimits small;
  small.max_elements = 1000;
  auto big = Grammar::FromGbnf("root ::= \"a\"{5000}\n", small);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().find("grammar too large") != std::string::npos);
}

// constraint_fuzz found this regex taking minutes and gigabytes per mask: nested nullable counted
// repetitions reach each parser state along exponentially many paths. A step's closures expand
// each state once, so these masks are cheap, and still exact.
TEST_CASE("nested nullable repetitions: each closure state is expanded once", "[constraint]") {
  // ((|cd{173})?){173}: up to 173 times "c" and 173 "d"s, each repetition possibly empty in two
  // ways, so a state is reachable along 2^k paths.
  auto g = Grammar::FromRegex("(fooo|b(|cd{173})?{173})?\\s%");
  REQUIRE(g.ok());
  const auto allowed = [](Matcher& m, char c) {
    std::vector<uint32_t> bits;
    m.FillMask(&bits);
    REQUIRE_FALSE(m.failed());
    const auto u = static_cast<uint8_t>(c);
    return ((bits[u >> 5] >> (u & 31)) & 1) == 1;
  };
  Matcher m(*g, ByteTrie());
  REQUIRE(m.AcceptBytes("b"));
  CHECK(allowed(m, 'c'));
  CHECK(allowed(m, ' '));
  REQUIRE(m.AcceptBytes("c" + std::string(10, 'd')));
  CHECK(allowed(m, 'd'));
  CHECK_FALSE(allowed(m, ' '));  // 10 of the 173 d's
  REQUIRE(m.AcceptBytes(std::string(163, 'd')));
  CHECK(allowed(m, ' '));
  CHECK(allowed(m, 'c'));
  CHECK_FALSE(allowed(m, 'd'));
  const std::string rep = "c" + std::string(173, 'd');
  CHECK(Matches(*g, "b" + rep + rep + " %"));
  CHECK_FALSE(Matches(*g, "b" + rep + "d %"));
}

TEST_CASE("regex constraints", "[constraint]") {
  auto r = Grammar::FromRegex("^(\\d{3}-)?[A-Z][a-z]+(?:\\s[A-Z]\\w*)*$");
  REQUIRE(r.ok());
  CHECK(Matches(*r, "Bob"));
  CHECK(Matches(*r, "123-Bob Smith X_1"));
  CHECK_FALSE(Matches(*r, "12-Bob"));
  CHECK_FALSE(Matches(*r, "bob"));
  auto dot = Grammar::FromRegex("a.c|[^x-z]{2}");
  REQUIRE(dot.ok());
  CHECK(Matches(*dot,
                "a\xC3\xA9"
                "c"));
  CHECK(Matches(*dot, "ab"));
  CHECK_FALSE(Matches(*dot, "a\nc"));
  CHECK_FALSE(Matches(*dot, "ay"));
  for (const char* bad : {"(?=a)b", "(a)\\1", "\\bword", "\\p{L}", "a{2,1}x(", "(?i)a"}) {
    auto g = Grammar::FromRegex(bad);
    INFO(bad);
    CHECK_FALSE(g.ok());
  }
  CHECK(Grammar::FromRegex("(?=a)b").status().message().find("lookaround") != std::string::npos);
  // Python's `re` reads \d as any Unicode digit and {,n} as a quantifier: stay inside what both
  // agree on.
  auto nd = Grammar::FromRegex("\\D[^\\d]");
  REQUIRE(nd.ok());
  CHECK(Matches(*nd, "ab"));
  CHECK_FALSE(Matches(*nd,
                      "\xD9\xA3"
                      "b"));  // ARABIC-INDIC DIGIT THREE
  CHECK_FALSE(Matches(*nd, "a\xD9\xA3"));
  CHECK(Grammar::FromRegex("a{,5}").status().message().find("{,n}") != std::string::npos);
  CHECK(Grammar::FromRegex("(a)\\1").status().message().find("backreference") != std::string::npos);
}

TEST_CASE("integer ranges are exact", "[constraint]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t a = std::uniform_int_distribution<int64_t>(-1200, 1200)(rng);
    const int64_t b = a + std::uniform_int_distribution<int64_t>(0, 2500)(rng);
    const bool open_lo = trial % 5 == 0, open_hi = trial % 7 == 0;
    NumberBounds nb;
    if (!open_lo) nb.lo = static_cast<double>(a);
    if (!open_hi) nb.hi = static_cast<double>(b);
    auto body = NumberGbnf(true, nb);
    REQUIRE(body.ok());
    auto g = Gbnf("root ::= " + *body + "\n");
    for (int64_t v = a - 30; v <= b + 30; v += 1 + (b - a) / 97) {
      const bool in = (open_lo || v >= a) && (open_hi || v <= b);
      INFO("[" << a << ", " << b << "] " << v);
      CHECK(Matches(g, std::to_string(v)) == in);
    }
    if (!open_lo || !open_hi) CHECK_FALSE(Matches(g, "-0"));  // unbounded: "-0" is JSON for 0
    CHECK_FALSE(Matches(g, "007"));
  }
}

TEST_CASE("JSON Schema: objects, required, additionalProperties", "[constraint]") {
  auto g = Schema(
      R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer",
      "minimum": 0, "maximum": 150}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["name"], "additionalProperties": false})");
  CHECK(Matches(g, R"({"name": "Ann"})"));
  CHECK(Matches(g, R"({"name": "Ann", "age": 30, "tags": ["a", "b"]})"));
  CHECK(Matches(g, "{ \"name\" :\"Ann\",\n\t\"age\":150 }"));
  CHECK_FALSE(Matches(g, R"({"age": 30})"));
  CHECK_FALSE(Matches(g, R"({"name": "Ann", "age": 151})"));
  CHECK_FALSE(Matches(g, R"({"name": "Ann", "age": -1})"));
  CHECK_FALSE(Matches(g, R"({"name": "Ann", "extra": 1})"));
  CHECK_FALSE(Matches(g, R"({"name": 5})"));
  CHECK_FALSE(Matches(g, R"({"name": "Ann",})"));

  // Other keys are allowed by default but may not spell a declared key (with its own schema).
  auto open = Schema(
      R"({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}}})");
  CHECK(Matches(open, R"({"a": 1, "x": "anything", "abc": [1, {"k": null}]})"));
  CHECK(Matches(open, R"({"b": true})"));
  CHECK(Matches(open, R"({})"));
  CHECK_FALSE(Matches(open, R"({"a": "str"})"));
  CHECK_FALSE(Matches(open, R"({"ab": "str"})"));
  CHECK_FALSE(Matches(open, R"({"x": 1, "a": "str"})"));

  // Few properties: any order, each at most once, required ones present.
  auto order =
      Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
      "c": {"type": "boolean"}}, "required": ["a", "c"], "additionalProperties": false})");
  CHECK(Matches(order, R"({"c": true, "a": 1})"));
  CHECK(Matches(order, R"({"b": "x", "c": false, "a": 2})"));
  CHECK_FALSE(Matches(order, R"({"c": true, "a": 1, "a": 2})"));
  CHECK_FALSE(Matches(order, R"({"b": "x", "a": 1})"));
  CHECK_FALSE(Matches(order, R"({"c": true, "b": 1, "a": 1})"));

  auto typed = Schema(R"({"type": "object", "additionalProperties": {"type": "number"}})");
  CHECK(Matches(typed, R"({"x": 1.5, "y": -2e3})"));
  CHECK_FALSE(Matches(typed, R"({"x": "1"})"));

  auto compact = Schema(
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})", true);
  CHECK(Matches(compact, R"({"a":1})"));
  CHECK_FALSE(Matches(compact, R"({"a": 1})"));
}

TEST_CASE("JSON Schema: arrays, enums, const, strings, numbers, formats", "[constraint]") {
  auto arr = Schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
      "items": {"type": "boolean"}, "minItems": 1, "maxItems": 4})");
  CHECK(Matches(arr, "[1]"));
  CHECK(Matches(arr, R"([1, "a", true, false])"));
  CHECK_FALSE(Matches(arr, "[]"));
  CHECK_FALSE(Matches(arr, R"([1, "a", true, false, true])"));
  CHECK_FALSE(Matches(arr, R"(["a"])"));
  CHECK_FALSE(Matches(arr, R"([1, "a", 3])"));

  auto en = Schema(R"({"enum": ["red", 1.5, null, {"k": [1, 2]}, "caf\u00e9"]})");
  CHECK(Matches(en, "\"red\""));
  CHECK(Matches(en, "1.5"));
  CHECK(Matches(en, "null"));
  CHECK(Matches(en, R"({"k": [1, 2]})"));
  CHECK(Matches(en, R"({"k":[1,2]})"));
  CHECK(Matches(en, "\"caf\xC3\xA9\""));
  CHECK_FALSE(Matches(en, "\"blue\""));
  CHECK_FALSE(Matches(en, R"({"k": [1]})"));
  CHECK(SchemaError(R"({"enum": []})").find("enum") != std::string::npos);
  CHECK(SchemaError(R"({"type": "string", "enum": [1, 2]})").find("enum") != std::string::npos);

  // A huge enum compiles and is exact.
  Json big = Json::object();
  big["enum"] = Json::array();
  for (int i = 0; i < 3000; ++i)
    big["enum"].push_back(std::string("v").append(std::to_string(i * 7)));
  auto h = Schema(big.dump());
  CHECK(Matches(h, "\"v0\""));
  CHECK(Matches(h, "\"v20993\""));
  CHECK_FALSE(Matches(h, "\"v1\""));
  CHECK_FALSE(Matches(h, "\"v20994\""));

  // enum / const beside other keywords: the values the rest of the schema accepts, nothing else.
  auto en_len = Schema(R"({"enum": ["AB", "ABC", "ABCDE", 7], "minLength": 3, "maxLength": 4})");
  CHECK(Matches(en_len, R"("ABC")"));
  CHECK(Matches(en_len, "7"));  // length keywords leave numbers alone
  CHECK_FALSE(Matches(en_len, R"("AB")"));
  CHECK_FALSE(Matches(en_len, R"("ABCDE")"));
  auto en_min =
      Schema(R"({"allOf": [{"enum": [2.6, 0.5, "x"]}, {"not": {"not": {"minimum": 1}}}]})");
  CHECK(Matches(en_min, "2.6"));
  CHECK(Matches(en_min, R"("x")"));
  CHECK_FALSE(Matches(en_min, "0.5"));
  auto en_obj = Schema(R"({"enum": [{"foo": 1, "bar": 2}, {"foo": "s"}, {"baz": 1}],
      "properties": {"foo": {"type": "integer"}}, "required": ["foo"]})");
  CHECK(Matches(en_obj, R"({"foo": 1, "bar": 2})"));
  CHECK_FALSE(Matches(en_obj, R"({"foo": "s"})"));
  CHECK_FALSE(Matches(en_obj, R"({"baz": 1})"));
  auto en_pat = Schema(R"({"const": "aaa", "pattern": "^a*$"})");
  CHECK(Matches(en_pat, R"("aaa")"));
  CHECK(SchemaError(R"({"const": "aab", "pattern": "^a*$"})").find("no value matches") !=
        std::string::npos);
  auto en_items =
      Schema(R"({"enum": [[1, 2], [1], "s"], "items": {"type": "integer"}, "minItems": 2})");
  CHECK(Matches(en_items, "[1, 2]"));
  CHECK(Matches(en_items, R"("s")"));
  CHECK_FALSE(Matches(en_items, "[1]"));
  auto en_count = Schema(R"({"enum": [{"a": 1}, {"a": 1, "b": 2}, {}, "s"], "minProperties": 1,
      "maxProperties": 1})");
  CHECK(Matches(en_count, R"({"a": 1})"));
  CHECK(Matches(en_count, R"("s")"));
  CHECK_FALSE(Matches(en_count, R"({"a": 1, "b": 2})"));
  CHECK_FALSE(Matches(en_count, "{}"));
  // A chain of definitions, each with two enums beside keywords that name the next and that the
  // validator cannot decide (format): each check compiles the rest again (2^30 compiles); one
  // budget per document refuses it quickly instead.
  Json chain = Json::object();
  chain["$defs"] = Json::object();
  for (int i = 0; i < 30; ++i) {
    Json site = ParseJson(R"({"enum": [{}], "format": "email", "properties": {"p": {}}})");
    site["properties"]["p"] = i + 1 < 30
                                  ? Json::object({{"$ref", "#/$defs/d" + std::to_string(i + 1)}})
                                  : ParseJson(R"({"type": "integer"})");
    Json d = Json::object();
    d["properties"] = Json::object();
    d["properties"]["x"] = site;
    d["properties"]["y"] = site;
    chain["$defs"]["d" + std::to_string(i)] = d;
  }
  chain["$ref"] = "#/$defs/d0";
  CHECK(SchemaError(chain.dump()).find("checks beside other keywords") != std::string::npos);
  // A keyword the rest cannot enforce is still refused, by name.
  CHECK(SchemaError(R"({"enum": ["a", "b"], "pattern": "(?=a)a"})").find("pattern") !=
        std::string::npos);
  CHECK(SchemaError(R"({"enum": [{"a": 1}], "unevaluatedProperties": false})")
            .find("unevaluatedProperties") != std::string::npos);

  auto str = Schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK(Matches(str, "\"ab\""));
  CHECK(Matches(str, "\"a\\nb\""));
  CHECK(Matches(str, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));
  CHECK(Matches(str, "\"\\ud83d\\ude00x\""));  // a surrogate pair is one character
  CHECK_FALSE(Matches(str, "\"a\""));
  CHECK_FALSE(Matches(str, "\"abcd\""));
  CHECK_FALSE(Matches(str, "\"\\ud83dx\""));  // a lone surrogate is not JSON text we emit

  auto pat = Schema(R"({"type": "string", "pattern": "^[a-z]+-\\d{2}$"})");
  CHECK(Matches(pat, "\"abc-12\""));
  CHECK_FALSE(Matches(pat, "\"abc-123\""));
  // pattern with minLength/maxLength: one repeated character meets the lengths in its repetition
  // bounds; any other pattern runs in step with a character counter (regex_product.h).
  auto id =
      Schema(R"({"type": "string", "pattern": "^[a-z0-9_-]+$", "minLength": 3, "maxLength": 5})");
  CHECK(Matches(id, "\"abc\""));
  CHECK(Matches(id, "\"ab-_9\""));
  CHECK_FALSE(Matches(id, "\"ab\""));
  CHECK_FALSE(Matches(id, "\"abcdef\""));
  CHECK_FALSE(Matches(id, "\"ABC\""));
  auto digits = Schema(R"({"type": "string", "pattern": "^\\d{4,}?$", "maxLength": 6})");
  CHECK(Matches(digits, "\"1234\""));
  CHECK(Matches(digits, "\"123456\""));
  CHECK_FALSE(Matches(digits, "\"123\""));
  CHECK_FALSE(Matches(digits, "\"1234567\""));
  auto any2 = Schema(R"({"type": "string", "pattern": "^.*$", "maxLength": 2})");
  CHECK(Matches(any2, "\"ab\""));
  CHECK(Matches(any2, "\"\""));
  CHECK_FALSE(Matches(any2, "\"abc\""));
  CHECK(
      SchemaError(R"({"type": "string", "pattern": "^x{5}$", "maxLength": 3})").find("maxLength") !=
      std::string::npos);
  CHECK(SchemaError(R"({"type": "string", "pattern": "^\\b+$", "maxLength": 5})").find("pattern") !=
        std::string::npos);
  auto search = Schema(R"({"type": "string", "pattern": "ab+c"})");
  CHECK(Matches(search, "\"xx abbbc \\\"yy\""));
  CHECK_FALSE(Matches(search, "\"ac\""));

  auto num = Schema(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 10})");
  CHECK(Matches(num, "0.5"));
  CHECK(Matches(num, "10"));
  CHECK(Matches(num, "10.000"));
  CHECK(Matches(num, "9.99"));
  CHECK_FALSE(Matches(num, "0"));
  CHECK_FALSE(Matches(num, "0.0"));
  CHECK_FALSE(Matches(num, "10.01"));
  CHECK_FALSE(Matches(num, "-1"));
  auto neg = Schema(R"({"type": "number", "minimum": -5, "exclusiveMaximum": -2})");
  CHECK(Matches(neg, "-5"));
  CHECK(Matches(neg, "-2.5"));
  CHECK_FALSE(Matches(neg, "-2"));
  CHECK_FALSE(Matches(neg, "-5.1"));
  auto tiny = Schema(R"({"type": "number", "minimum": 1e-7, "maximum": 4.294967295})");
  CHECK(Matches(tiny, "0.0000001"));
  CHECK(Matches(tiny, "4.294967295"));
  CHECK_FALSE(Matches(tiny, "0.00000009"));
  CHECK_FALSE(Matches(tiny, "4.2949672951"));
  CHECK(SchemaError(R"({"type": "number", "minimum": 1e-70})").find("minimum") !=
        std::string::npos);

  auto dt = Schema(R"({"type": "string", "format": "date-time"})");
  CHECK(Matches(dt, "\"2024-02-28T13:45:00Z\""));
  CHECK(Matches(dt, "\"2024-12-31T23:59:59.123+05:30\""));
  CHECK_FALSE(Matches(dt, "\"2024-02-30T13:45:00Z\""));
  CHECK_FALSE(Matches(dt, "\"2024-13-01T00:00:00Z\""));
  auto uuid = Schema(R"({"type": "string", "format": "uuid"})");
  CHECK(Matches(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  CHECK_FALSE(Matches(uuid, "\"123e4567-e89b-12d3-a456-42661417400\""));
  auto email = Schema(R"({"type": "string", "format": "email"})");
  CHECK(Matches(email, "\"a.b+c@example.co.uk\""));
  CHECK_FALSE(Matches(email, "\"a@b\""));
  CHECK(SchemaError(R"({"type": "string", "format": "color"})").find("format") !=
        std::string::npos);
}

TEST_CASE("property: random patterns, pairs of them and lengths against std::regex",
          "[constraint]") {
  // The product automaton (regex_product.h) against ECMAScript search semantics and a length
  // check, on every string over {a, b, c} up to 5 characters, for seeded random patterns (groups,
  // classes, '.', alternation, every quantifier form, anchors), one or two at once (allOf).
  std::mt19937 rng(2026);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::function<std::string(int)> alt;
  auto atom = [&](int depth) -> std::string {
    switch (pick(depth > 0 ? 5 : 4)) {
      case 0:
        return "a";
      case 1:
        return "b";
      case 2:
        return "[ab]";
      case 3:
        return ".";
      default:
        return "(" + alt(depth - 1) + ")";
    }
  };
  const char* quantifiers[] = {"", "", "?", "*", "+", "{0,2}", "{1,3}", "{2}", "{2,}"};
  alt = [&](int depth) {
    std::string out;
    for (int b = 0, nb = 1 + pick(2); b < nb; ++b) {
      if (b) out += "|";
      for (int i = 0, n = 1 + pick(3); i < n; ++i) out += atom(depth) + quantifiers[pick(9)];
    }
    return out;
  };
  auto pattern = [&] { return std::string(pick(2) ? "^" : "") + alt(2) + (pick(2) ? "$" : ""); };
  std::vector<std::string> strings = {""};
  for (size_t i = 0; i < strings.size() && strings[i].size() < 5; ++i)
    for (char c : {'a', 'b', 'c'}) strings.push_back(strings[i] + c);
  for (int round = 0; round < 120; ++round) {
    std::vector<std::string> pats = {pattern()};
    if (round % 2) pats.push_back(pattern());
    const int lo = pick(4), hi = pick(3) ? lo + pick(4) : -1;
    Json schema = Json::object({{"type", "string"}, {"minLength", lo}});
    if (hi >= 0) schema["maxLength"] = hi;
    if (pats.size() == 1) {
      schema["pattern"] = pats[0];
    } else {
      schema["allOf"] =
          Json::array({Json::object({{"pattern", pats[0]}}), Json::object({{"pattern", pats[1]}})});
    }
    std::string text;
    schema.AppendPython(&text);
    INFO(text);
    auto g = Grammar::FromJsonSchema(text);
    std::vector<std::regex> res;
    for (const auto& p : pats) res.emplace_back(p, std::regex::ECMAScript);
    if (!g.ok()) {  // only where no string at all meets them
      INFO(g.status().message());
      CHECK(g.status().message().find("no string") != std::string::npos);
      for (const auto& str : strings) {
        bool want =
            static_cast<int>(str.size()) >= lo && (hi < 0 || static_cast<int>(str.size()) <= hi);
        for (const auto& re : res) want = want && std::regex_search(str, re);
        CHECK_FALSE(want);
      }
      continue;
    }
    Matcher m(*g, ByteTrie());
    for (const auto& str : strings) {
      bool want =
          static_cast<int>(str.size()) >= lo && (hi < 0 || static_cast<int>(str.size()) <= hi);
      for (const auto& re : res) want = want && std::regex_search(str, re);
      m.Reset();
      const std::string quoted = "\"" + str + "\"";
      INFO(quoted);
      CHECK((m.AcceptBytes(quoted) && m.CanEnd()) == want);
    }
  }
}

TEST_CASE("JSON Schema: if / then / else through the negation of a simple if", "[constraint]") {
  // A discriminator property: then where it holds, else where it is present and differs.
  auto member = Schema(R"({"type": "object", "properties": {"isMember": {"type": "boolean"},
      "n": {"type": "string"}}, "required": ["isMember"],
      "if": {"properties": {"isMember": {"const": true}}},
      "then": {"properties": {"n": {"minLength": 3, "maxLength": 3}}},
      "else": {"properties": {"n": {"minLength": 5}}}})");
  CHECK(Matches(member, R"({"isMember": true, "n": "abc"})"));
  CHECK(Matches(member, R"({"isMember": false, "n": "abcdef"})"));
  CHECK(Matches(member, R"({"isMember": false})"));
  CHECK_FALSE(Matches(member, R"({"isMember": true, "n": "abcdef"})"));
  CHECK_FALSE(Matches(member, R"({"isMember": false, "n": "abc"})"));
  // An enum discriminator that need not be there: absent, the if holds.
  auto needs = Schema(R"({"type": "object", "properties": {"c": {"type": "string"}},
      "if": {"properties": {"c": {"enum": ["ghi"]}}}, "then": {"required": ["a", "b", "c"]},
      "else": {"required": ["a", "c"]}})");
  CHECK(Matches(needs, R"({"c": "ghi", "a": 1, "b": 2})"));
  CHECK(Matches(needs, R"({"c": "xyz", "a": 1})"));
  CHECK(Matches(needs, R"({"a": 1, "b": 2, "c": "ghi"})"));
  CHECK_FALSE(Matches(needs, R"({"c": "ghi", "a": 1})"));
  CHECK_FALSE(Matches(needs, R"({"c": "gh", "b": 1})"));
  // Bounds and counts.
  auto num = Schema(R"({"type": "number", "if": {"maximum": 5}, "then": {"minimum": 5},
      "else": {"minimum": 9, "exclusiveMaximum": 11}})");
  CHECK(Matches(num, "5"));
  CHECK(Matches(num, "9.5"));
  CHECK_FALSE(Matches(num, "4"));
  CHECK_FALSE(Matches(num, "7"));
  CHECK_FALSE(Matches(num, "11"));
  auto items = Schema(R"({"type": "array", "if": {"minItems": 1}, "then": {"minItems": 2},
      "else": {"maxItems": 0}})");
  CHECK(Matches(items, "[]"));
  CHECK(Matches(items, "[1, 2]"));
  CHECK_FALSE(Matches(items, "[1]"));
  // A keyword of one type holds for every other type: an untyped if's negation is only that type
  // failing it (a number meets minLength, so it must meet then).
  auto vacuous = Schema(R"({"if": {"minLength": 3}, "then": {"type": "string"}})");
  CHECK(Matches(vacuous, "\"abcd\""));
  CHECK(Matches(vacuous, "\"ab\""));
  CHECK_FALSE(Matches(vacuous, "5"));
  CHECK_FALSE(Matches(vacuous, "null"));
  auto keyed = Schema(R"({"if": {"properties": {"k": {"const": 1}}}, "then": {"required": ["k"]},
      "else": {"type": "object"}})");
  CHECK(Matches(keyed, R"({"k": 1})"));
  CHECK(Matches(keyed, R"({"k": 2})"));
  CHECK_FALSE(Matches(keyed, R"({})"));  // k absent: the if holds, then wants k
  CHECK(Matches(keyed, "7"));            // a non-object meets the if and then (vacuously)
  // then / else without if assert nothing; an if of another kind is refused.
  auto loose = Schema(R"({"type": "integer", "then": {"minimum": 3}})");
  CHECK(Matches(loose, "1"));
  CHECK(SchemaError(R"({"if": {"pattern": "a"}, "then": {"minLength": 2}})").find("if") !=
        std::string::npos);
  // A string other than listed ones (the negation of a string enum).
  auto other = Schema(R"({"type": "string", "not": {"enum": ["a", "bc"]}})");
  CHECK(Matches(other, "\"b\""));
  CHECK(Matches(other, "\"abc\""));
  CHECK(Matches(other, "\"\""));
  CHECK_FALSE(Matches(other, "\"a\""));
  CHECK_FALSE(Matches(other, "\"bc\""));
  CHECK_FALSE(Matches(other, "\"\\u0061\""));  // "a" spelled with an escape
}

TEST_CASE("JSON Schema: non-integral number bounds compare the decimals written", "[constraint]") {
  // Every number from -3 to 3 in steps of 0.005, spelled with 1 to 4 fraction digits (trailing
  // zeros too) and without a fraction where it has none, against bounds of every kind; the truth
  // is an integer comparison in thousandths of thousandths.
  struct Case {
    const char* schema;
    std::optional<int64_t> lo, hi;  // in 1e-6
    bool lo_excl, hi_excl;
  };
  const Case cases[] = {
      {R"({"type": "number", "minimum": 0.5})", 500000, std::nullopt, false, false},
      {R"({"type": "number", "exclusiveMinimum": 0.5})", 500000, std::nullopt, true, false},
      {R"({"type": "number", "minimum": -1.25, "maximum": 2.05})", -1250000, 2050000, false, false},
      {R"({"type": "number", "exclusiveMinimum": -1.25, "exclusiveMaximum": 2.05})", -1250000,
       2050000, true, true},
      {R"({"type": "number", "minimum": 1.105, "maximum": 1.13})", 1105000, 1130000, false, false},
      {R"({"type": "number", "exclusiveMaximum": -0.015})", std::nullopt, -15000, false, true},
      {R"({"type": "number", "minimum": -0.5, "exclusiveMaximum": 0})", -500000, 0, false, true},
      {R"({"type": "number", "minimum": 0.1, "maximum": 0.1})", 100000, 100000, false, false},
      {R"({"type": "integer", "minimum": -2.5, "exclusiveMaximum": 1.5})", -2500000, 1500000, false,
       true},
  };
  for (const Case& c : cases) {
    INFO(c.schema);
    auto g = Schema(c.schema);
    const bool integer = std::string(c.schema).find("integer") != std::string::npos;
    for (int64_t v = -3000; v <= 3000; v += 5) {  // v in thousandths
      const int64_t micro = v * 1000;
      const bool in = (!c.lo || (c.lo_excl ? micro > *c.lo : micro >= *c.lo)) &&
                      (!c.hi || (c.hi_excl ? micro < *c.hi : micro <= *c.hi));
      const int64_t a = v < 0 ? -v : v;
      const std::string sign = v < 0 ? "-" : "";  // 0 is never written "-0"
      const std::string ip = std::to_string(a / 1000);
      std::string frac = fmt::format("{:03d}", a % 1000);
      while (frac.size() > 1 && frac.back() == '0') frac.pop_back();
      std::vector<std::string> spellings;
      if (a % 1000 == 0) spellings.push_back(sign + ip);
      if (!integer) {  // integers are written without a fraction
        spellings.push_back(sign + ip + "." + frac);
        spellings.push_back(sign + ip + "." + frac + "0");
      }
      for (const auto& text : spellings) {
        INFO(text);
        CHECK(Matches(g, text) == in);
      }
    }
  }
}

TEST_CASE("JSON Schema: multipleOf 10^-n on numbers caps the fraction digits", "[constraint]") {
  auto money = Schema(R"({"type": "number", "multipleOf": 0.01, "minimum": 0,
                          "maximum": 99999999999.99})");
  for (const char* ok : {"10.99", "10.0", "10", "10.990", "0", "0.01", "99999999999.99"}) {
    INFO(ok);
    CHECK(Matches(money, ok));
  }
  for (const char* bad : {"10.001", "-0.01", "99999999999.995", "100000000000", "0.001"}) {
    INFO(bad);
    CHECK_FALSE(Matches(money, bad));
  }
  auto tenth = Schema(R"({"type": "number", "multipleOf": 0.1})");
  CHECK(Matches(tenth, "-3.5"));
  CHECK(Matches(tenth, "12"));
  CHECK_FALSE(Matches(tenth, "3.55"));
  auto above = Schema(R"({"type": "number", "multipleOf": 1e-1, "exclusiveMinimum": 0.05})");
  CHECK(Matches(above, "0.1"));
  CHECK(Matches(above, "7.30"));
  CHECK_FALSE(Matches(above, "0.05"));
  CHECK_FALSE(Matches(above, "0.0"));
  CHECK_FALSE(Matches(above, "-1"));
  auto whole = Schema(R"({"type": "integer", "multipleOf": 0.01, "maximum": 3})");
  CHECK(Matches(whole, "3"));
  CHECK(Matches(whole, "-40"));
  CHECK_FALSE(Matches(whole, "4"));
  // Other fractions (0.25, 0.05) stay refused.
  CHECK(SchemaError(R"({"type": "number", "multipleOf": 0.25})").find("multipleOf") !=
        std::string::npos);
}

TEST_CASE("JSON Schema: pattern, format and lengths together are one product automaton",
          "[constraint]") {
  // A pattern that is not one repeated character, with both lengths: the count is exact.
  auto at = Schema(R"({"type": "string", "pattern": "^[a-z]+@[a-z]+$", "maxLength": 7,
                       "minLength": 5})");
  CHECK(Matches(at, "\"ab@cd\""));
  CHECK(Matches(at, "\"abc@def\""));
  CHECK_FALSE(Matches(at, "\"a@b\""));       // 3 characters
  CHECK_FALSE(Matches(at, "\"abcd@efg\""));  // 8 characters
  CHECK_FALSE(Matches(at, "\"abcdefg\""));   // the pattern's '@' is missing
  // Search semantics: an unanchored pattern pads with any string character, escapes counting as
  // one character each.
  auto hex =
      Schema(R"({"type": "string", "pattern": "[0-9a-f]+", "minLength": 3, "maxLength": 3})");
  CHECK(Matches(hex, "\"x1y\""));
  CHECK(Matches(hex, "\"\\n\\\"f\""));
  CHECK_FALSE(Matches(hex, "\"xyz\""));
  CHECK_FALSE(Matches(hex, "\"x1yz\""));
  // Only a lower bound: the counter saturates, long strings still match.
  auto slug = Schema(R"({"type": "string", "pattern": "^[a-z]+(?:-[a-z0-9]+)*$", "minLength": 4})");
  CHECK(Matches(slug, "\"ab-c\""));
  CHECK(Matches(slug, "\"abcdefghij-klmnopqrstuvwxyz-0123456789\""));
  CHECK_FALSE(Matches(slug, "\"a-b\""));
  CHECK_FALSE(Matches(slug, "\"ab-\""));
  // A format beside lengths and a pattern: all three at once.
  auto mail = Schema(R"({"type": "string", "format": "email", "maxLength": 9})");
  CHECK(Matches(mail, "\"a@b.c\""));
  CHECK(Matches(mail, "\"ab@cd.ef\""));
  CHECK_FALSE(Matches(mail, "\"abcd@de.fg\""));  // 10 characters
  CHECK_FALSE(Matches(mail, "\"a@b\""));         // not an email
  auto https =
      Schema(R"({"type": "string", "allOf": [{"format": "uri"}, {"pattern": "^https://"}]})");
  CHECK(Matches(https, "\"https://x.org/a?b=1\""));
  CHECK_FALSE(Matches(https, "\"http://x.org\""));
  CHECK_FALSE(Matches(https, "\"ftp://x.org\""));
  auto zip =
      Schema(R"({"type": "string", "pattern": "^([0-9]{5})(-([0-9]{4}))?$", "minLength": 6})");
  CHECK(Matches(zip, "\"12345-6789\""));
  CHECK_FALSE(Matches(zip, "\"12345\""));
  // oneOf of string branches whose languages share no string: disjoint by their product.
  auto num_text = Schema(R"({"oneOf": [{"type": "string", "pattern": "^-?\\d+/\\d+$"},
      {"type": "string", "pattern": "^0x[0-9a-f]+$"}, {"type": "integer"},
      {"type": "string", "format": "date"}]})");
  CHECK(Matches(num_text, "\"-4/7\""));
  CHECK(Matches(num_text, "\"0x1f\""));
  CHECK(Matches(num_text, "\"2024-02-28\""));
  CHECK(Matches(num_text, "3"));
  CHECK_FALSE(Matches(num_text, "\"0x\""));
  auto by_length = Schema(R"({"oneOf": [{"type": "string", "maxLength": 3},
      {"type": "string", "minLength": 4, "pattern": "^[a-z]+$"}]})");
  CHECK(Matches(by_length, "\"ABC\""));
  CHECK(Matches(by_length, "\"abcd\""));
  CHECK_FALSE(Matches(by_length, "\"ABCD\""));
  CHECK(SchemaError(R"({"oneOf": [{"type": "string", "pattern": "^a"},
      {"type": "string", "pattern": "b$"}]})")
            .find("overlap") != std::string::npos);  // "ab" matches both
  // allOf's patterns all hold.
  auto two =
      Schema(R"({"type": "string", "allOf": [{"pattern": "^[a-z0-9]*$"}, {"pattern": "[0-9]"},
                                                    {"pattern": "^a"}]})");
  CHECK(Matches(two, "\"ab1\""));
  CHECK_FALSE(Matches(two, "\"abc\""));
  CHECK_FALSE(Matches(two, "\"b1\""));
  CHECK_FALSE(Matches(two, "\"a-1\""));
  // No string at all: an unsatisfiable branch (dropped by anyOf), an error on its own.
  CHECK(SchemaError(R"({"type": "string", "pattern": "^[a-z]{2}-[a-z]{2}$", "maxLength": 4})")
            .find("no string") != std::string::npos);
  auto either = Schema(R"({"anyOf": [{"type": "string", "pattern": "^a-b+$", "maxLength": 2},
                                     {"type": "integer"}]})");
  CHECK(Matches(either, "7"));
  CHECK_FALSE(Matches(either, "\"a-\""));
  // Counted repetitions unroll: past the automaton's limits it is a clear error, not a hang.
  CHECK(SchemaError(R"({"type": "string", "pattern": "^(a{1000}){1000}$", "maxLength": 5})")
            .find("too") != std::string::npos);
  CHECK(SchemaError(R"({"type": "string", "pattern": "^(\\S+\\s+){0,99}\\S+$", "maxLength": 5000})")
            .find("too large") != std::string::npos);
  CHECK(SchemaError(R"({"type": "string", "pattern": "^(a?){4000}$", "maxLength": 5})")
            .find("too many") != std::string::npos);
  CHECK(SchemaError(R"({"type": "string", "allOf": [{"pattern": "^a{0,4000}$"},
                                                    {"pattern": "^b{0,4000}$"}], "minLength": 1})")
            .find("no string") != std::string::npos);
}

TEST_CASE("JSON Schema validator: valid, invalid, or unknown", "[constraint]") {
  using schema::Verdict;
  auto check = [](const char* schema_text, const char* value_text) {
    const Json root = ParseJson(schema_text);
    return schema::Validate(root, root, ParseJson(value_text));
  };
  CHECK(check(R"({"type": "integer"})", "2.0") == Verdict::kValid);
  CHECK(check(R"({"type": "integer"})", "2.5") == Verdict::kInvalid);
  CHECK(check(R"({"type": ["string", "null"]})", "null") == Verdict::kValid);
  CHECK(check(R"({"enum": [1, "a"]})", "1.0") == Verdict::kValid);
  CHECK(check(R"({"minLength": 2})", R"("éé")") == Verdict::kValid);  // code points
  CHECK(check(R"({"maxLength": 1})", R"("éé")") == Verdict::kInvalid);
  CHECK(check(R"({"pattern": "^a+$"})", R"("aaa")") == Verdict::kValid);
  CHECK(check(R"({"pattern": "b"})", R"("abc")") == Verdict::kValid);  // a search
  CHECK(check(R"({"pattern": "^a+$"})", R"("aab")") == Verdict::kInvalid);
  CHECK(check(R"({"pattern": "^a+$"})", R"("a\"")") == Verdict::kUnknown);   // escaped text
  CHECK(check(R"x({"pattern": "(?=a)"})x", R"("a")") == Verdict::kUnknown);  // not translated
  CHECK(check(R"({"minimum": 1.5, "exclusiveMaximum": 3})", "3") == Verdict::kInvalid);
  CHECK(check(R"({"minimum": 1, "exclusiveMinimum": true})", "1") == Verdict::kInvalid);  // draft 4
  CHECK(check(R"({"multipleOf": 3})", "9") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 3})", "10") == Verdict::kInvalid);
  // multipleOf on the decimals the document wrote, not on binary doubles.
  CHECK(check(R"({"multipleOf": 0.1})", "0.3") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 0.0001})", "0.0075") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 0.0001})", "0.00751") == Verdict::kInvalid);
  CHECK(check(R"({"multipleOf": 1.5})", "4.5") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 1.5})", "4") == Verdict::kInvalid);
  CHECK(check(R"({"multipleOf": 1.5})", "0") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 0.01})", "-12e-2") == Verdict::kValid);
  CHECK(check(R"({"multipleOf": 0.01})", "1e300") == Verdict::kUnknown);  // beyond 18 digits
  CHECK(check(R"({"properties": {"a": {"type": "string"}}, "required": ["a"],
      "additionalProperties": false})",
              R"({"a": "x"})") == Verdict::kValid);
  CHECK(check(R"({"properties": {"a": {}}, "additionalProperties": false})", R"({"b": 1})") ==
        Verdict::kInvalid);
  CHECK(
      check(R"({"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": false})",
            R"({"xa": 1, "xb": "s"})") == Verdict::kInvalid);
  CHECK(check(R"({"propertyNames": {"maxLength": 2}})", R"({"abc": 1})") == Verdict::kInvalid);
  CHECK(check(R"({"dependencies": {"a": ["b"]}})", R"({"a": 1})") == Verdict::kInvalid);
  CHECK(check(R"({"dependentSchemas": {"a": {"required": ["c"]}}})", R"({"a": 1, "c": 2})") ==
        Verdict::kValid);
  CHECK(check(R"({"items": [{"type": "integer"}], "additionalItems": false})", "[1, 2]") ==
        Verdict::kInvalid);
  CHECK(check(R"({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}})",
              R"([1, "a"])") == Verdict::kValid);
  CHECK(check(R"({"uniqueItems": true})", "[1, 1.0]") == Verdict::kInvalid);
  CHECK(check(R"({"contains": {"type": "string"}, "maxContains": 1})", R"(["a", "b"])") ==
        Verdict::kInvalid);
  CHECK(check(R"({"oneOf": [{"minimum": 1}, {"minimum": 2}]})", "3") == Verdict::kInvalid);
  CHECK(check(R"({"oneOf": [{"minimum": 1}, {"format": "email"}]})", "0") == Verdict::kUnknown);
  CHECK(check(R"({"not": {"type": "null"}})", "1") == Verdict::kValid);
  CHECK(check(R"({"if": {"minimum": 5}, "then": {"multipleOf": 5}, "else": {"maximum": 0}})",
              "7") == Verdict::kInvalid);
  CHECK(check(R"({"format": "email"})", R"("a@b.c")") == Verdict::kUnknown);
  CHECK(check(R"({"format": "email"})", "1") == Verdict::kUnknown);
  CHECK(check(R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})", "1") ==
        Verdict::kValid);
  // $ref siblings: drafts disagree, so certain only when both readings agree.
  CHECK(check(R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 5})", "1") ==
        Verdict::kUnknown);
  CHECK(check(R"({"$ref": "#"})", "1") == Verdict::kUnknown);  // a cycle: out of budget
  CHECK(check(R"({"$ref": "other.json#/a"})", "1") == Verdict::kUnknown);
  CHECK(check(R"({"x-vendor": 1, "frobnicate": 2})", "1") == Verdict::kValid);  // ignored
}

TEST_CASE("JSON Schema: not beside enum/const, and not merged by allOf", "[constraint]") {
  auto g =
      Schema(R"({"allOf": [{"enum": ["a", "bb", 3, {"foo": 1}]}, {"not": {"minLength": 2}}]})");
  CHECK(Matches(g, R"("a")"));
  CHECK_FALSE(Matches(g, R"("bb")"));
  CHECK_FALSE(Matches(g, "3"));  // minLength holds for every non-string: not excludes it
  CHECK_FALSE(Matches(g, R"({"foo": 1})"));
  auto props = Schema(R"({"enum": [{"foo": 1}, {"bar": 2}], "not": {"required": ["foo"]}})");
  CHECK(Matches(props, R"({"bar": 2})"));
  CHECK_FALSE(Matches(props, R"({"foo": 1})"));
  auto two =
      Schema(R"({"enum": [1, 2, 3], "allOf": [{"not": {"const": 1}}, {"not": {"const": 3}}]})");
  CHECK(Matches(two, "2"));
  CHECK_FALSE(Matches(two, "1"));
  CHECK_FALSE(Matches(two, "3"));
  CHECK(SchemaError(R"({"const": "a", "not": {"format": "email"}})").find("cannot decide") !=
        std::string::npos);
  CHECK(SchemaError(R"({"const": "a", "not": {"type": "string"}})").find("excludes every") !=
        std::string::npos);
  // Without enum/const, not of a general schema is still refused.
  CHECK(SchemaError(R"({"type": "string", "not": {"minLength": 2}})").find("not") !=
        std::string::npos);
  // enum beside a keyword no grammar here enforces, decided on the values.
  auto pp = Schema(R"({"enum": [{"ab": 1}, {"ab": "x"}], "patternProperties": {"^a": {"type":
      "integer"}, "b$": {"minimum": 0}}})");
  CHECK(Matches(pp, R"({"ab": 1})"));
  CHECK_FALSE(Matches(pp, R"({"ab": "x"})"));
}

TEST_CASE("JSON Schema: combinators, $ref recursion, errors naming the keyword", "[constraint]") {
  auto tree =
      Schema(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"],
      "additionalProperties": false}}, "$ref": "#/$defs/node"})");
  CHECK(Matches(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  CHECK_FALSE(Matches(tree, R"({"v": 1, "kids": [{"w": 2}]})"));

  auto any = Schema(
      R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 5}]})");
  CHECK(Matches(any, "\"ab\""));
  CHECK(Matches(any, "7"));
  CHECK_FALSE(Matches(any, "\"abc\""));
  CHECK_FALSE(Matches(any, "4"));

  auto one = Schema(R"({"oneOf": [{"type": "string"}, {"type": "null"}]})");
  CHECK(Matches(one, "null"));
  CHECK(SchemaError(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})").find("oneOf") !=
        std::string::npos);

  // minProperties / maxProperties over other keys only.
  auto at_least = Schema(R"({"type": "object", "minProperties": 1})");
  CHECK(Matches(at_least, R"({"a": 1})"));
  CHECK(Matches(at_least, R"({"a": 1, "b": [2]})"));
  CHECK_FALSE(Matches(at_least, "{}"));
  auto two_three = Schema(R"({"type": "object", "minProperties": 2, "maxProperties": 3,
      "additionalProperties": {"type": "integer"}})");
  CHECK_FALSE(Matches(two_three, R"({"a": 1})"));
  CHECK(Matches(two_three, R"({"a": 1, "b": 2})"));
  CHECK(Matches(two_three, R"({"a": 1, "b": 2, "c": 3})"));
  CHECK_FALSE(Matches(two_three, R"({"a": 1, "b": 2, "c": 3, "d": 4})"));
  CHECK_FALSE(Matches(two_three, R"({"a": 1, "b": "2"})"));
  auto at_most = Schema(R"({"type": "object", "maxProperties": 1})");
  CHECK(Matches(at_most, "{}"));
  CHECK(Matches(at_most, R"({"a": null})"));
  CHECK_FALSE(Matches(at_most, R"({"a": null, "b": null})"));
  CHECK(Matches(Schema(R"({"type": "object", "maxProperties": 0})"), "{}"));
  CHECK_FALSE(Matches(Schema(R"({"type": "object", "maxProperties": 0})"), R"({"a": 1})"));
  CHECK(SchemaError(R"({"type": "object", "minProperties": 3, "maxProperties": 2})")
            .find("minProperties") != std::string::npos);
  // Where only the declared properties may appear, the any-order object counts them.
  auto closed_min = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
      "additionalProperties": false, "minProperties": 1})");
  CHECK(Matches(closed_min, R"({"b": 1})"));
  CHECK_FALSE(Matches(closed_min, "{}"));
  auto closed_max = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
      "required": ["a"], "additionalProperties": false, "maxProperties": 2})");
  CHECK(Matches(closed_max, R"({"b": 1, "a": 1})"));
  CHECK_FALSE(Matches(closed_max, R"({"a": 1, "b": 1, "c": 1})"));
  CHECK_FALSE(Prefix(closed_max, R"({"b": 1, "c")"));  // a is still due: no room for c
  CHECK(SchemaError(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": false,
      "minProperties": 2})")
            .find("minProperties") != std::string::npos);
  // Beside declared properties and other keys: the any-order object counts both.
  auto open_min = Schema(R"({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
      "minProperties": 2})");
  CHECK(Matches(open_min, R"({"a": 1, "b": 2})"));
  CHECK(Matches(open_min, R"({"b": 2, "x": true})"));
  CHECK(Matches(open_min, R"({"x": 1, "y": 2, "z": 3})"));
  CHECK_FALSE(Matches(open_min, R"({"a": 1})"));
  CHECK_FALSE(Matches(open_min, R"({"x": 1})"));
  CHECK_FALSE(Matches(open_min, "{}"));
  CHECK_FALSE(Matches(open_min, R"({"b": "2", "x": 1})"));  // the declared schemas still apply
  auto open_max = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"],
      "maxProperties": 2})");
  CHECK(Matches(open_max, R"({"a": 1, "x": 2})"));
  CHECK(Matches(open_max, R"({"b": 1, "a": 1})"));
  CHECK_FALSE(Matches(open_max, R"({"a": 1, "x": 2, "y": 3})"));
  CHECK_FALSE(Matches(open_max, R"({"a": 1, "b": 2, "x": 3})"));
  CHECK_FALSE(Prefix(open_max, R"({"x": 1, "y")"));  // a is still due: no room for y
  auto patterned = Schema(R"({"type": "object", "patternProperties": {"^[a-z]+$": {}},
      "properties": {"ID": {}}, "additionalProperties": false, "minProperties": 1,
      "maxProperties": 2})");
  CHECK(Matches(patterned, R"({"ab": 1})"));
  CHECK(Matches(patterned, R"({"ID": 1, "q": 2})"));
  CHECK_FALSE(Matches(patterned, "{}"));
  CHECK_FALSE(Matches(patterned, R"({"a": 1, "b": 2, "c": 3})"));
  CHECK(SchemaError(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {},
      "e": {}, "f": {}, "g": {}}, "minProperties": 2})")
            .find("minProperties") != std::string::npos);

  // Dependencies among more properties than the any-order object takes: schema order, with the
  // written dependency properties tracked.
  auto many = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {},
      "e": {}, "f": {}, "g": {}}, "additionalProperties": false,
      "dependencies": {"b": ["f"], "e": ["a"]}})");
  CHECK(Matches(many, R"({"a": 1, "e": 2})"));
  CHECK(Matches(many, R"({"b": 1, "c": 2, "f": 3})"));
  CHECK(Matches(many, R"({"f": 1, "g": 2})"));
  CHECK(Matches(many, "{}"));
  CHECK_FALSE(Matches(many, R"({"e": 1})"));
  CHECK_FALSE(Matches(many, R"({"b": 1, "g": 2})"));
  CHECK_FALSE(Prefix(many, R"({"b": 1, "g")"));  // f was due before g
  auto many_req = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {},
      "e": {}, "f": {}, "g": {}}, "required": ["e"], "dependencies": {"e": ["a", "g"]}})");
  CHECK(Matches(many_req, R"({"a": 1, "e": 2, "g": 3})"));
  CHECK(Matches(many_req, R"({"a": 1, "e": 2, "g": 3, "zz": 4})"));
  CHECK_FALSE(Matches(many_req, R"({"e": 2, "g": 3})"));
  CHECK_FALSE(Matches(many_req, R"({"a": 1, "e": 2})"));

  // Property dependencies.
  auto dep = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
      "dependencies": {"a": ["b"]}})");
  CHECK(Matches(dep, R"({"a": 1, "b": 2})"));
  CHECK(Matches(dep, R"({"b": 2, "a": 1})"));
  CHECK(Matches(dep, R"({"b": 1})"));
  CHECK(Matches(dep, R"({"c": 1, "x": 0})"));
  CHECK_FALSE(Matches(dep, R"({"a": 1})"));
  CHECK_FALSE(Matches(dep, R"({"c": 1, "a": 1})"));
  auto dep_req = Schema(R"({"type": "object", "properties": {"p1": {}, "p2": {}, "p3": {}, "p4": {},
      "p5": {}, "p6": {}, "p7": {}}, "required": ["p1"], "dependentRequired": {"p1": ["p7"],
      "p7": ["p6"]}, "additionalProperties": false})");
  CHECK(Matches(dep_req, R"({"p1": 1, "p6": 1, "p7": 1})"));
  CHECK_FALSE(Matches(dep_req, R"({"p1": 1, "p7": 1})"));  // p7 requires p6, to a fixed point
  auto dep_undeclared = Schema(R"({"type": "object", "dependencies": {"shape": ["circle"]}})");
  CHECK(Matches(dep_undeclared, R"({"z": 1})"));
  CHECK_FALSE(Matches(dep_undeclared, R"({"shape": 1})"));  // kept out (sound restriction)
  CHECK(SchemaError(R"({"type": "object", "dependencies": {"a": {"required": ["b"]}}})")
            .find("dependencies") != std::string::npos);
  CHECK(SchemaError(R"({"type": "object", "properties": {"p1": {}, "p2": {}, "p3": {}, "p4": {},
      "p5": {}, "p6": {}, "p7": {}}, "dependencies": {"p1": ["p2"]}, "minProperties": 2})")
            .find("minProperties") != std::string::npos);

  // oneOf over required lists: exactly one list present, compiled by presence pattern.
  auto shape = Schema(R"({"type": "object", "properties": {"radius": {"type": "number"},
      "length": {"type": "number"}, "width": {"type": "number"}},
      "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]})");
  CHECK(Matches(shape, R"({"radius": 1})"));
  CHECK(Matches(shape, R"({"length": 1, "width": 2})"));
  CHECK(Matches(shape, R"({"width": 2, "length": 1, "note": "x"})"));
  CHECK(Matches(shape, R"({"radius": 1, "width": 2})"));  // width alone satisfies no list
  CHECK_FALSE(Matches(shape, R"({"radius": 1, "length": 1, "width": 2})"));  // both lists
  CHECK_FALSE(Matches(shape, R"({"length": 1})"));                           // neither
  CHECK_FALSE(Matches(shape, R"({"radius": "1"})"));  // the siblings still apply
  // Without a type, a non-object matches every branch, so none of oneOf; objects as above.
  auto untyped = Schema(R"({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]})");
  CHECK(Matches(untyped, R"({"a": 1})"));
  CHECK(Matches(untyped, R"({"b": [], "c": 1})"));
  CHECK_FALSE(Matches(untyped, R"({"a": 1, "b": 2})"));
  CHECK_FALSE(Matches(untyped, R"({})"));
  CHECK_FALSE(Matches(untyped, R"("a")"));
  // Object branches with values that may overlap, told apart by their required keys (a sound
  // restriction: an object with both lists present is refused even where its values fail one).
  auto couch = Schema(R"({"type": "object", "oneOf": [
      {"properties": {"error": {"type": "string"}, "reason": {"type": "string"}},
       "required": ["error", "reason"]},
      {"properties": {"id": {"type": "string"}, "ok": {"type": "boolean"}}, "required": ["id", "ok"]}]})");
  CHECK(Matches(couch, R"({"error": "x", "reason": "y"})"));
  CHECK(Matches(couch, R"({"id": "a", "ok": true, "rev": "1"})"));
  CHECK(Matches(couch, R"({"error": "x", "reason": "y", "id": "a"})"));
  CHECK_FALSE(Matches(couch, R"({"error": "x", "reason": "y", "id": "a", "ok": true})"));
  CHECK_FALSE(Matches(couch, R"({"error": "x", "id": "a"})"));
  CHECK_FALSE(Matches(couch, R"({"id": "a", "ok": "yes"})"));
  // A sibling's required key removes the patterns without it.
  auto req = Schema(R"({"required": ["a"], "oneOf": [{"required": ["a"]}, {"required": ["b"]}]})");
  CHECK(Matches(req, R"({"a": 1})"));
  CHECK_FALSE(Matches(req, R"({"a": 1, "b": 1})"));
  CHECK(SchemaError(R"({"type": "string", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]})")
            .find("oneOf") != std::string::npos);
  // Branches that say which keys are absent too (not/anyOf/allOf/oneOf over required lists).
  auto pick = Schema(R"({"type": "object", "oneOf": [
      {"required": ["l", "w"], "not": {"required": ["b", "h"]}},
      {"required": ["b", "h"], "not": {"required": ["l", "w"]}},
      {"anyOf": [{"required": ["r"]}, {"required": ["d"]}], "not": {"anyOf": [{"required": ["l"]},
       {"required": ["b"]}]}}]})");
  CHECK(Matches(pick, R"({"l": 1, "w": 2})"));
  CHECK(Matches(pick, R"({"l": 1, "w": 2, "b": 3})"));
  CHECK(Matches(pick, R"({"d": 1})"));
  CHECK(Matches(pick, R"({"w": 1, "r": 2})"));
  CHECK_FALSE(Matches(pick, R"({"l": 1, "w": 2, "b": 3, "h": 4})"));  // neither of the two
  CHECK(Matches(pick, R"({"l": 1, "w": 2, "r": 3, "h": 4})"));        // r's branch forbids l
  CHECK_FALSE(Matches(pick, R"({"b": 1, "r": 2})"));  // r's branch forbids b, b's needs h
  CHECK_FALSE(Matches(pick, R"({})"));
  // A non-object makes every `required` hold: here it satisfies exactly the `not` branch, so
  // non-objects are valid and the object-only rewrite does not apply (the overlap check refuses).
  CHECK(SchemaError(R"({"oneOf": [{"required": ["a"]}, {"not": {"required": ["b"]}}]})")
            .find("oneOf") != std::string::npos);

  // allOf of two anyOf: the anyOf of the pairs; pairs that cannot hold (types apart) drop out.
  auto pairs = Schema(R"({"allOf": [
      {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]},
      {"anyOf": [{"type": "integer", "maximum": 9}, {"type": "string", "maxLength": 2}]}]})");
  CHECK(Matches(pairs, "7"));
  CHECK(Matches(pairs, "\"ab\""));
  CHECK_FALSE(Matches(pairs, "10"));
  CHECK_FALSE(Matches(pairs, "-1"));
  CHECK_FALSE(Matches(pairs, "\"abc\""));

  auto all = Schema(
      R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})");
  CHECK(Matches(all, R"({"a": 1, "b": "x"})"));
  CHECK(Matches(all, R"({"b": "x", "a": 1, "c": null})"));
  CHECK_FALSE(Matches(all, R"({"a": 1})"));
  CHECK_FALSE(Matches(all, R"({"a": "1", "b": "x"})"));

  // allOf members that differ only in annotations do not conflict: vendor extensions ("x-..."),
  // editors' keywords and the standard annotations constrain nothing.
  auto annotated = Schema(
      R"({"allOf": [{"type": "string", "maxLength": 3, "x-intellij-html-description": "<b>a</b>",
      "markdownDescription": "a", "title": "A"}, {"x-intellij-html-description": "<i>b</i>",
      "markdownDescription": "b", "title": "B", "enumDescriptions": ["x"]}]})");
  CHECK(Matches(annotated, R"("abc")"));
  CHECK_FALSE(Matches(annotated, R"("abcd")"));
  CHECK_FALSE(Matches(annotated, "1"));
  // A constraining keyword that differs still conflicts.
  CHECK(SchemaError(R"({"allOf": [{"pattern": "^a"}, {"pattern": "^b"}]})").find("pattern") !=
        std::string::npos);

  // additionalProperties sees only its own schema's properties: merging would widen it.
  CHECK(SchemaError(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false},
      {"properties": {"b": {}}}]})")
            .find("additionalProperties") != std::string::npos);
  CHECK(SchemaError(R"({"allOf": [{"type": "array", "items": false}, {"prefixItems": [{}]}]})")
            .find("items") != std::string::npos);
  // not: the exact forms compile, the others name the keyword.
  auto not_null = Schema(R"({"type": "object", "properties": {"x": {"not": {"type": "null"}}}})");
  CHECK(Matches(not_null, R"({"x": 1})"));
  CHECK(Matches(not_null, R"({"x": [null]})"));
  CHECK_FALSE(Matches(not_null, R"({"x": null})"));
  auto not_num = Schema(
      R"({"type": ["integer", "string", "boolean"], "not": {"type": ["number", "boolean"]}})");
  CHECK(Matches(not_num, R"("a")"));
  CHECK_FALSE(Matches(not_num, "1"));
  CHECK_FALSE(Matches(not_num, "true"));
  auto not_not = Schema(R"({"type": "integer", "not": {"not": {"minimum": 3}}})");
  CHECK(Matches(not_not, "3"));
  CHECK_FALSE(Matches(not_not, "2"));
  CHECK(Matches(Schema(R"({"type": "string", "not": false})"), R"("s")"));
  CHECK(SchemaError(R"({"not": true})").find("not") != std::string::npos);
  CHECK(SchemaError(R"({"not": {"type": "integer"}})").find("not: excluding integers") !=
        std::string::npos);
  CHECK(SchemaError(R"({"properties": {"x": {"not": {"enum": [1]}}}})")
            .find("#/properties/x: not: not supported") == 0);
  CHECK(SchemaError(R"({"type": "array", "uniqueItems": true})") ==
        "#: uniqueItems: not supported");
  CHECK(SchemaError(R"({"$ref": "#/$defs/missing"})").find("$ref") != std::string::npos);
  CHECK(SchemaError(R"({"$ref": "http://example.com/s.json"})").find("$ref") != std::string::npos);
  auto pp = Schema(R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "patternProperties": {"^x-[a-z]+$": {"type": "string"}}})");
  CHECK(Matches(pp, R"({"id": 1, "x-foo": "a", "x-b": "c"})"));
  CHECK_FALSE(Matches(pp, R"({"id": 1, "x-foo": 2})"));
  CHECK_FALSE(Matches(pp, R"({"x-Foo": "a"})"));
  CHECK(SchemaError(
            R"({"type": "object", "properties": {"x-a": {}}, "patternProperties": {"^x": {}}})")
            .find("patternProperties: declared property 'x-a' matches a pattern") !=
        std::string::npos);
  CHECK(SchemaError(R"({"type": "object", "propertyNames": {"maxLength": 3}})") ==
        "#: propertyNames: not supported");
  CHECK(SchemaError("{not json").find("not valid JSON") != std::string::npos);
  auto maxp =
      Schema(R"({"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": false,
      "maxProperties": 2})");
  CHECK(Matches(maxp, R"({"a": 1, "b": 2})"));
  auto max1 = Schema(R"({"type": "object", "properties": {"a": {}, "b": {}}, "maxProperties": 1})");
  CHECK(Matches(max1, R"({"b": 2})"));
  CHECK(Matches(max1, R"({"z": 2})"));
  CHECK_FALSE(Matches(max1, R"({"a": 1, "b": 2})"));
  // A key required twice counts once.
  auto twice = Schema(R"({"type": "object", "required": ["a", "a"], "minProperties": 2})");
  CHECK(Matches(twice, R"({"a": 1, "q": 2})"));
  CHECK_FALSE(Matches(twice, R"({"a": 1})"));
}

TEST_CASE("JSON Schema: multipleOf on integers is exact", "[constraint]") {
  struct Case {
    const char* schema;
    int k;
    std::optional<int> lo, hi;
  };
  const Case cases[] = {
      {R"({"type": "integer", "multipleOf": 7})", 7, {}, {}},
      {R"({"type": "integer", "multipleOf": 3, "minimum": 0})", 3, 0, {}},
      {R"({"type": "integer", "multipleOf": 4, "exclusiveMinimum": 0})", 4, 1, {}},
      {R"({"type": "integer", "multipleOf": 6, "maximum": 0})", 6, {}, 0},
      {R"({"type": "number", "multipleOf": 5, "minimum": -23, "maximum": 41})", 5, -23, 41},
      {R"({"type": "integer", "multipleOf": 1, "minimum": 2})", 1, 2, {}},
      {R"({"type": "integer", "multipleOf": 25})", 25, {}, {}},
  };
  for (const Case& c : cases) {
    auto g = Schema(c.schema);
    INFO(c.schema);
    for (int v = -260; v <= 260; ++v) {
      const bool truth = v % c.k == 0 && (!c.lo || v >= *c.lo) && (!c.hi || v <= *c.hi);
      INFO(v);
      REQUIRE(Matches(g, std::to_string(v)) == truth);
    }
    CHECK(Matches(g, "0") == ((!c.lo || *c.lo <= 0) && (!c.hi || *c.hi >= 0)));
    CHECK_FALSE(Matches(g, "007"));
    CHECK_FALSE(Matches(g, "5.0"));  // refused (sound): multiples are spelled as integers
  }
  CHECK(Matches(Schema(R"({"type": "integer", "multipleOf": 7})"), "700000000000000000000001") ==
        false);
  CHECK(Matches(Schema(R"({"type": "integer", "multipleOf": 7})"), "700000000000000000000000007"));
  CHECK(SchemaError(R"({"type": "number", "multipleOf": 0.5})").find("multipleOf") !=
        std::string::npos);
  CHECK(SchemaError(R"({"type": "integer", "multipleOf": 3, "minimum": 5})").find("multipleOf") !=
        std::string::npos);
  // Beside enum, multipleOf keeps the values it accepts.
  auto en = Schema(R"({"enum": [3, 4, 9], "multipleOf": 3})");
  CHECK(Matches(en, "9"));
  CHECK_FALSE(Matches(en, "4"));
}

TEST_CASE("partial UTF-8 across tokens and tokens spanning terminals", "[constraint]") {
  // Token 0 = first byte of 'é', 1 = its second byte, 2 = "é" whole, 3 = `"a": "`, 4 = `"}`, 5 =
  // `{`.
  auto trie =
      *TokenTrie::FromTokens({"\xC3", "\xA9", "\xC3\xA9", "\"a\": \"", "\"}", "{", "x", ""});
  auto g = Schema(
      R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 1}}, "required": ["a"],
      "additionalProperties": false})");
  Matcher m(g, trie);
  std::vector<uint32_t> bits;
  auto allowed = [&](int t) {
    m.FillMask(&bits);
    return static_cast<bool>((bits[0] >> t) & 1);
  };
  CHECK(allowed(5));
  CHECK_FALSE(allowed(3));
  REQUIRE(m.Accept(5));
  CHECK(allowed(3));
  REQUIRE(m.Accept(3));
  CHECK(allowed(0));
  CHECK_FALSE(allowed(1));  // a continuation byte cannot start a character
  CHECK(allowed(2));
  CHECK_FALSE(allowed(7));  // empty tokens are never allowed
  REQUIRE(m.Accept(0));
  CHECK(allowed(1));
  CHECK_FALSE(allowed(4));  // inside a character: the string cannot close yet
  REQUIRE(m.Accept(1));
  CHECK_FALSE(allowed(6));  // maxLength 1 reached
  CHECK(allowed(4));
  REQUIRE(m.Accept(4));
  CHECK(m.CanEnd());
  CHECK(m.Done());
}

TEST_CASE("mask equals Accept on every token of the fixture vocabulary", "[constraint]") {
  const auto& tok = FixtureTokenizer();
  auto trie = FixtureTrie();
  auto g = Schema(R"({"type": "object", "properties": {"id": {"type": "integer", "minimum": 10},
      "name": {"type": "string"}, "kind": {"enum": ["alpha", "beta"]}}, "required": ["id", "kind"]})");
  const std::string text = R"({"id": 42, "name": "caf\u00e9 ok", "kind": "beta"})";
  CHECK(TokenWalk(g, tok, trie, Dumps(ParseJson(text))));
  CheckMaskExact(g, trie, Dumps(ParseJson(text)));
  // Counted strings (the plain-character chain) and free keys (plain subtrees below a boundary).
  auto counted = Schema(
      R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 5}},
      "additionalProperties": {"type": "string"}})");
  const std::string ctext = R"({"s": "ab\u00e9", "other key": "free text \"quoted\" here"})";
  CHECK(TokenWalk(counted, tok, trie, ctext));
  CheckMaskExact(counted, trie, ctext);
  auto gb = Gbnf("root ::= (\"ab\" | [c-e]+ \" \")* \"!\"\n");
  CheckMaskExact(gb, trie, "ab cd ab!");
}

TEST_CASE("a matcher over its memory budget compacts instead of refusing", "[constraint]") {
  auto trie = FixtureTrie();
  const auto& tok = FixtureTokenizer();
  auto g = Schema(
      R"({"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string"},
      "value": {"type": "string", "maxLength": 12}}, "required": ["key"]}})");
  Json data = Json::array();
  for (int i = 0; i < 40; ++i)
    data.push_back({{"key", "k-" + std::to_string(i)}, {"value", "v\u00e9-" + std::to_string(i)}});
  const std::string text = Dumps(data);
  std::vector<int32_t> ids;
  tok.Encode(text, SpecialTokens::kNone, &ids);
  Matcher::Limits small;
  small.max_sets = 300;
  small.max_nodes = 3000;
  Matcher tight(g, trie, small), roomy(g, trie);
  std::vector<uint32_t> a, b;
  for (int32_t id : ids) {
    tight.FillMask(&a);
    roomy.FillMask(&b);
    REQUIRE(a == b);
    REQUIRE(tight.Accept(id));
    REQUIRE(roomy.Accept(id));
  }
  CHECK(tight.CanEnd());
  CHECK_FALSE(tight.failed());
  CHECK(tight.compactions() > 0);
}

// ---- property test: random small schemas, random instances, mutations that break them

struct Gen {
  std::mt19937 rng;
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  Json RandomSchema(int depth) {
    const int kind = depth > 2 ? Int(0, 3) : Int(0, 5);
    Json s = Json::object();
    switch (kind) {
      case 0: {
        s["type"] = "integer";
        const int lo = Int(-50, 50);
        s["minimum"] = lo;
        s["maximum"] = lo + Int(0, 300);
        break;
      }
      case 1:
        s["type"] = "string";
        s["maxLength"] = Int(1, 6);
        break;
      case 2:
        s["enum"] = Json::array({"x" + std::to_string(Int(0, 9)), Int(0, 99), true});
        break;
      case 3:
        s["type"] = "boolean";
        break;
      case 4: {
        s["type"] = "object";
        s["properties"] = Json::object();
        s["required"] = Json::array();
        const int n = Int(1, 4);
        for (int i = 0; i < n; ++i) {
          const std::string k =
              fmt::format("k{}", i);  // not "k" + ...: GCC 12 -Wrestrict false positive
          s["properties"][k] = RandomSchema(depth + 1);
          if (Int(0, 1)) s["required"].push_back(k);
        }
        s["additionalProperties"] = false;
        break;
      }
      default:
        s["type"] = "array";
        s["items"] = RandomSchema(depth + 1);
        s["minItems"] = Int(0, 1);
        s["maxItems"] = Int(2, 4);
        break;
    }
    return s;
  }

  Json Instance(const Json& s) {
    if (s.contains("enum")) return s["enum"][Int(0, static_cast<int>(s["enum"].size()) - 1)];
    const std::string t = s["type"].get<std::string>();
    if (t == "integer") return Int(s["minimum"].get<int>(), s["maximum"].get<int>());
    if (t == "boolean") return Int(0, 1) == 1;
    if (t == "string") {
      std::string v;
      const char* pieces[] = {"a", "Z", " ", "\xC3\xA9", "\"", "\\", "\n", "\xE4\xB8\x80", "7"};
      const int n = Int(0, s["maxLength"].get<int>());
      for (int i = 0; i < n; ++i) v += pieces[Int(0, 8)];
      return v;
    }
    if (t == "array") {
      Json a = Json::array();
      const int n = Int(s["minItems"].get<int>(), s["maxItems"].get<int>());
      for (int i = 0; i < n; ++i) a.push_back(Instance(s["items"]));
      return a;
    }
    Json o = Json::object();
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
      bool req = false;
      for (const auto& r : s["required"]) req |= r == it.key();
      if (req || Int(0, 1)) o[it.key()] = Instance(it.value());
    }
    return o;
  }

  // A change that makes the instance invalid (false when this schema offers none).
  bool Mutate(const Json& s, Json* v) {
    if (s.contains("enum")) {
      *v = "not-in-enum";
      return true;
    }
    const std::string t = s["type"].get<std::string>();
    if (t == "integer") {
      *v = Int(0, 1) ? s["maximum"].get<int>() + Int(1, 9) : s["minimum"].get<int>() - Int(1, 9);
      return true;
    }
    if (t == "boolean") {
      *v = "true";
      return true;
    }
    if (t == "string") {
      *v = std::string(s["maxLength"].get<size_t>() + 1, 'q');
      return true;
    }
    if (t == "array") {
      if (!v->empty() && Int(0, 1)) {
        const size_t i = static_cast<size_t>(Int(0, static_cast<int>(v->size()) - 1));
        return Mutate(s["items"], &(*v)[i]);
      }
      while (v->size() <= s["maxItems"].get<size_t>()) v->push_back(Instance(s["items"]));
      return true;
    }
    switch (Int(0, 2)) {
      case 0:
        (*v)["zz_extra"] = 1;
        return true;
      case 1:
        if (!s["required"].empty()) {
          v->erase(s["required"][0].get<std::string>());
          return true;
        }
        (*v)["zz_extra"] = 1;
        return true;
      default: {
        if (v->empty()) {
          (*v)["zz_extra"] = 1;
          return true;
        }
        auto it = v->begin();
        std::advance(it, Int(0, static_cast<int>(v->size()) - 1));
        return Mutate(s["properties"][it.key()], &it.value());
      }
    }
  }
};

// Tool calls: bytes 0xF8 / 0xF9 in `text` stand for the <tool_call> / </tool_call> tokens.
constexpr int32_t kOpenId = 256, kCloseId = 257;
std::shared_ptr<const TokenTrie> ByteTrieWithSpecials() {
  static const auto trie = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    t.push_back("");  // the special tokens have no bytes of their own
    t.push_back("");
    return *TokenTrie::FromTokens(t);
  }();
  return trie;
}

bool RunCalls(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g, ByteTrieWithSpecials());
  std::vector<uint32_t> bits;
  for (char c : text) {
    const uint8_t b = static_cast<uint8_t>(c);
    const int32_t id = b == 0xF8 ? kOpenId : b == 0xF9 ? kCloseId : b;
    m.FillMask(&bits);
    const bool allowed = (bits[id >> 5] >> (id & 31)) & 1;
    const bool ok = m.Accept(id);  // false leaves the state as it was
    REQUIRE(allowed == ok);
    if (!ok) return false;
  }
  return m.CanEnd();
}

TEST_CASE("tool-call grammar: markup, verbatim and JSON values, markers only as special tokens",
          "[constraint]") {
  const Json tools = ParseJson(R"([
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "free text"},
      "unit": {"type": "string", "enum": ["c", "f"]},
      "tags": {"type": "array", "items": {"type": "string"}},
      "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["city", "n"]}}},
    {"name": "g"}])");
  auto g = ToolCallGrammar(tools, {ToolChoiceMode::kRequired, ""}, kOpenId, kCloseId);
  INFO(g.status().message());
  REQUIRE(g.ok());
  const std::string open = "\xF8\n<function=", close = "</function>\n\xF9";
  const auto param = [](const std::string& k, const std::string& v) {
    return "<parameter=" + k + ">\n" + v + "\n</parameter>\n";
  };
  const std::string call =
      open + "f>\n" + param("city", "New <York>\nline 2") + param("n", "7") + close;
  CHECK(RunCalls(*g, "\n\n" + call));
  CHECK(RunCalls(*g, call + "\n" + open + "g>\n" + close));  // two calls
  const std::string full = open + "f>\n" + param("city", "x") + param("unit", "f") +
                           param("tags", R"(["a", "b\u003c"])") + param("n", "0") + close;
  CHECK(RunCalls(*g, full));
  // What the reply stream gets between the markers parses into arguments that validate.
  auto parsed = ParseToolCall(call.substr(1, call.size() - 2), tools);
  REQUIRE(parsed.has_value());
  CHECK(parsed->name == "f");
  CHECK(parsed->arguments["city"] == "New <York>\nline 2");
  CHECK(parsed->arguments["n"] == 7);
  parsed = ParseToolCall(full.substr(1, full.size() - 2), tools);
  REQUIRE(parsed.has_value());
  CHECK(parsed->arguments["tags"] == ParseJson(R"(["a", "b<"])"));
  CHECK(parsed->arguments["unit"] == "f");

  CHECK_FALSE(RunCalls(*g, open + "f>\n" + param("city", "a</b") + param("n", "7") + close));
  CHECK_FALSE(RunCalls(*g, open + "f>\n" + param("city", "a") + close));  // n is required
  CHECK_FALSE(RunCalls(*g, open + "f>\n" + param("city", "a") + param("n", "10") + close));
  CHECK_FALSE(RunCalls(
      *g, open + "f>\n" + param("city", "a") + param("unit", "k") + param("n", "1") + close));
  CHECK_FALSE(RunCalls(*g, open + "f>\n" + param("city", "a") + param("tags", R"(["a<b"])") +
                               param("n", "1") + close));
  CHECK_FALSE(
      RunCalls(*g, open + "f>\n" + param("n", "1") + param("city", "a") + close));  // schema order
  CHECK_FALSE(RunCalls(*g, open + "h>\n" + close));
  CHECK_FALSE(RunCalls(*g, "text" + call));
  CHECK_FALSE(RunCalls(*g, call.substr(0, call.size() - 1)));  // not closed
  {
    Matcher m(*g, ByteTrieWithSpecials());
    std::vector<uint32_t> bits;
    m.FillMask(&bits);
    CHECK((bits[kOpenId >> 5] >> (kOpenId & 31)) & 1);
    CHECK_FALSE((bits[0xF8 >> 5] >> (0xF8 & 31)) & 1);  // the raw byte never stands for the token
    CHECK_FALSE(m.Accept(0xF8));
    CHECK(m.Accept(kOpenId));
    m.FillMask(&bits);
    CHECK_FALSE((bits[kOpenId >> 5] >> (kOpenId & 31)) & 1);
  }
  // auto: the matcher starts at <tool_call>; function: only that one.
  auto a = ToolCallGrammar(tools, {ToolChoiceMode::kAuto, ""}, kOpenId, kCloseId);
  REQUIRE(a.ok());
  CHECK(RunCalls(*a, call));
  CHECK_FALSE(RunCalls(*a, "\n" + call));
  auto f = ToolCallGrammar(tools, {ToolChoiceMode::kFunction, "g"}, kOpenId, kCloseId);
  REQUIRE(f.ok());
  CHECK(RunCalls(*f, open + "g>\n" + close));
  CHECK_FALSE(RunCalls(*f, call));
  // The mask equals Accept on every token of a real tokenizer, the special tokens included.
  const auto& ids = FixtureTokenizer().special_ids();
  auto real =
      ToolCallGrammar(tools, {ToolChoiceMode::kRequired, ""}, ids.tool_call, ids.tool_call_end);
  REQUIRE(real.ok());
  CheckMaskExact(*real, FixtureTrie(), "\n" + full);

  const auto error = [&](const std::string& t, ToolChoice c = {ToolChoiceMode::kRequired, ""}) {
    auto r = ToolCallGrammar(ParseJson(t), c, kOpenId, kCloseId);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(
      error(
          R"([{"name": "f", "parameters": {"properties": {"s": {"type": "string", "maxLength": 3}}}}])")
          .find("maxLength") != std::string::npos);
  CHECK(error(R"([{"name": "a>b"}])").find("a>b") != std::string::npos);
  CHECK(error(R"([{"name": "f", "parameters": {"properties": {}, "required": ["x"]}}])")
            .find("'x'") != std::string::npos);
  CHECK(error(R"([{"name": "f", "parameters": {"properties": {"x": {"not": {}}}}}])").find("not") !=
        std::string::npos);
  CHECK(error(R"([{"name": "f"}])", {ToolChoiceMode::kFunction, "q"}).find("'q'") !=
        std::string::npos);
  CHECK(error("[]").find("no tools") != std::string::npos);
}

TEST_CASE("property: random instances of random schemas accepted, mutated ones rejected",
          "[constraint]") {
  const auto& tok = FixtureTokenizer();
  auto trie = FixtureTrie();
  Gen gen{std::mt19937(1234)};
  for (int round = 0; round < 60; ++round) {
    const Json schema = gen.RandomSchema(0);
    auto g = Grammar::FromJsonSchema(schema.dump());
    INFO(schema.dump());
    REQUIRE(g.ok());
    for (int k = 0; k < 4; ++k) {
      Json inst = gen.Instance(schema);
      INFO(Dumps(inst));
      CHECK(TokenWalk(*g, tok, trie, Dumps(inst)));
      Json bad = inst;
      if (gen.Mutate(schema, &bad)) {
        INFO("mutated " << Dumps(bad));
        CHECK_FALSE(TokenWalk(*g, tok, trie, Dumps(bad)));
      }
    }
  }
}

// ---- MaskBench samples (tests/data/maskbench) and the real vocabulary

using test::RealVocabGguf;

TEST_CASE("MaskBench samples on the real vocabulary: no invalid instance accepted",
          "[constraint][real]") {
  TokenizerOptions o;
  o.nfc = false;
  auto tok = Tokenizer::FromGguf(RealVocabGguf(), o);
  REQUIRE(tok.ok());
  auto trie = TokenTrie::Build(**tok);
  REQUIRE(trie.ok());
  int files = 0, compiled = 0;
  for (const auto& e : std::filesystem::directory_iterator(kData + "/maskbench")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    const Json doc = ParseJson(ss.str());
    ++files;
    auto g = Grammar::FromJsonSchema(doc["schema"].dump());
    if (!g.ok()) continue;
    ++compiled;
    for (const auto& t : doc["tests"]) {
      INFO(e.path().filename().string() << ": " << Dumps(t["data"]));
      const bool accepted = TokenWalk(*g, **tok, *trie, Dumps(t["data"]));
      if (!t["valid"].get<bool>())
        CHECK_FALSE(accepted);
      else
        CHECK(accepted);
    }
  }
  CHECK(files >= 10);
  CHECK(compiled == files);
}

}  // namespace
}  // namespace qwenrt
