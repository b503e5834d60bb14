// JSON Schema compiler: strings, their length, pattern and format (see json_schema_compiler.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/regex_gbnf.h"
#include "chat/constraint/regex_product.h"

namespace qwenrt::schema {
namespace {

// `pattern` as "^A{m,n}$" when it is "^A<q>$": one atom A that matches exactly one character (a
// class [...], '.', \d \D \w \W \s \S, an escaped punctuation character, or a plain ASCII
// character) under one quantifier q ("", *, +, ?, {m}, {m,}, {m,n}, each maybe lazy). *n = -1: no
// upper bound. Such a pattern's strings are A repeated m..n times, so minLength and maxLength
// intersect with m..n exactly (a length counts characters, as the repetition does).
bool SingleAtomRepeat(std::string_view p, std::string* atom, int64_t* m, int64_t* n) {
  if (p.size() < 3 || p.front() != '^' || p.back() != '$') return false;
  size_t i = 1;
  if (p[i] == '[') {
    size_t j = i + 1;
    if (j < p.size() && p[j] == '^') ++j;
    if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is a member
    while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
    if (j >= p.size() - 1) return false;
    *atom = std::string(p.substr(i, j + 1 - i));
    i = j + 1;
  } else if (p[i] == '\\') {
    if (i + 2 >= p.size()) return false;
    const char c = p[i + 1];
    const bool cls = std::string_view("dDwWsS").find(c) != std::string_view::npos;
    const bool punct = (c >= 0x21 && c <= 0x7e) && !std::isalnum(static_cast<unsigned char>(c));
    if (!cls && !punct) return false;  // \b, backreferences, \x.., \u..., \p{..}: not one char here
    *atom = std::string(p.substr(i, 2));
    i += 2;
  } else {
    const char c = p[i];
    if (static_cast<unsigned char>(c) >= 0x80 ||
        std::string_view("()|*+?{}]^$").find(c) != std::string_view::npos)
      return false;
    *atom = std::string(1, c);
    ++i;
  }
  const std::string_view q = p.substr(i, p.size() - 1 - i);  // up to the final '$'
  std::string_view rest;
  if (q.empty()) {
    *m = *n = 1;
  } else if (q[0] == '*' || q[0] == '+' || q[0] == '?') {
    *m = q[0] == '+' ? 1 : 0;
    *n = q[0] == '?' ? 1 : -1;
    rest = q.substr(1);
  } else if (q[0] == '{') {
    const size_t close = q.find('}');
    if (close == std::string_view::npos) return false;
    const std::string body(q.substr(1, close - 1));
    const size_t comma = body.find(',');
    auto number = [](const std::string& t, int64_t* v) {
      if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos)
        return false;
      *v = std::stoll(t);
      return true;
    };
    if (comma == std::string::npos) {
      if (!number(body, m)) return false;
      *n = *m;
    } else {
      if (!number(body.substr(0, comma), m)) return false;
      const std::string hi = body.substr(comma + 1);
      *n = -1;
      if (!hi.empty() && !number(hi, n)) return false;
      if (*n >= 0 && *n < *m) return false;
    }
    rest = q.substr(close + 1);
  } else {
    return false;
  }
  return rest.empty() || rest == "?";  // a lazy quantifier matches the same strings
}

}  // namespace

std::string SchemaCompiler::CompileString(const Json& s, const std::string& ptr) {
  const bool has_len = s.contains("minLength") || s.contains("maxLength");
  auto count = [&](const char* k, int64_t def) -> int64_t {
    if (!s.contains(k)) return def;
    if (!s[k].is_number()) Error(ptr, k, "must be a number");
    const double v = s[k].get<double>();
    if (v < 0 || v > 100000) Error(ptr, k, "out of range");
    return static_cast<int64_t>(v);
  };
  // The patterns: a schema's own is a string; allOf's merge (Merge) lists several.
  std::vector<std::string> patterns;
  if (s.contains("pattern")) {
    const Json& p = s["pattern"];
    for (const Json& x : p.is_array() ? p : Json::array({p})) {
      if (!x.is_string()) Error(ptr, "pattern", "must be a string");
      patterns.push_back(x.get<std::string>());
    }
  }
  const int64_t min_len = count("minLength", 0), max_len = count("maxLength", -1);
  if (max_len >= 0 && max_len < min_len) Error(ptr, "maxLength", "less than minLength", true);
  if (s.contains("format")) {
    const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
    std::string re = FormatRegex(f);
    if ((has_len || !patterns.empty()) && !re.empty()) {
      patterns.insert(patterns.begin(), re);
      return CompileRegexProduct(patterns, min_len, max_len, ptr, "format");
    }
    if (re.empty() && KnownFormats().count(f))
      Error(ptr, "format", "format '" + f + "' is not supported");
    // A format no validator knows is an annotation (JSON Schema 2020-12 §7.2.1): it asserts
    // nothing.
    if (re.empty() && !has_len && !s.contains("pattern")) return "jstring";
    if (re.empty()) return CompileString(WithoutFormat(s), ptr);
    std::string g;
    Status st = RegexToGbnf(re, RegexMode::kJsonString, &g);
    if (!st.ok()) Error(ptr, "format", st.message());
    return NewRule("\"\\\"\" " + g + " \"\\\"\"");
  }
  if (patterns.size() > 1) return CompileRegexProduct(patterns, min_len, max_len, ptr, "pattern");
  if (!patterns.empty()) {
    std::string pattern = patterns[0];
    if (has_len) {
      // Where the pattern is one repeated character its length bounds meet minLength/maxLength
      // in one counted repetition (which the matcher walks fast); any other pattern runs in step
      // with a character counter.
      std::string atom;
      int64_t m = 0, n = -1;
      if (!SingleAtomRepeat(pattern, &atom, &m, &n))
        return CompileRegexProduct({pattern}, min_len, max_len, ptr, "pattern");
      const int64_t lo = std::max(m, min_len);
      int64_t hi = max_len;
      if (n >= 0) hi = hi >= 0 ? std::min(hi, n) : n;
      if (hi >= 0 && hi < lo)
        Error(ptr, "maxLength",
              "no string: the pattern's repetition and the lengths exclude every one", true);
      pattern =
          "^" + atom + "{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : "") + "}$";
    }
    std::string g;
    Status st = RegexToGbnf(pattern, RegexMode::kJsonString, &g);
    if (!st.ok()) Error(ptr, "pattern", st.message());
    return NewRule("\"\\\"\" " + g + " \"\\\"\"");
  }
  if (!has_len) return "jstring";
  return NewRule("\"\\\"\" jchar{" + std::to_string(min_len) + "," +
                 (max_len >= 0 ? std::to_string(max_len) : "") + "} \"\\\"\"");
}

// A string every regex matches (search semantics, as `pattern`) with min_len..max_len characters.
std::string SchemaCompiler::CompileRegexProduct(const std::vector<std::string>& regexes,
                                                int64_t min_len, int64_t max_len,
                                                const std::string& ptr, const char* kw) {
  RegexProductLimits limits;
  limits.min_len = min_len;
  limits.max_len = max_len;
  std::string start;
  const Status st = RegexProductGbnf(
      regexes, limits, [&] { return fmt::format("s{}", n_++); }, &rules_, &start);
  if (!st.ok()) Error(ptr, kw, st.message());
  if (rules_.size() > (64u << 20)) Error("", "schema", "grammar too large");
  if (start.empty())
    Error(ptr, kw, "no string matches the pattern, format and lengths together", true);
  return NewRule("\"\\\"\" " + start + " \"\\\"\"");
}

// Formats Python's jsonschema checker asserts; any other format name is only an annotation.
const std::set<std::string>& SchemaCompiler::KnownFormats() {
  static const std::set<std::string> k = {
      "email", "idn-email",     "hostname",     "idn-hostname",          "ipv4",         "ipv6",
      "uri",   "uri-reference", "iri",          "iri-reference",         "date-time",    "time",
      "date",  "regex",         "json-pointer", "relative-json-pointer", "uri-template", "duration",
      "uuid",  "color"};
  return k;
}

Json SchemaCompiler::WithoutFormat(const Json& s) {
  Json c = s;
  c.erase("format");
  return c;
}

std::string SchemaCompiler::FormatRegex(const std::string& f) {
  // Strict enough that every string accepted is valid under Python's checkers.
  const std::string date =
      "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-("
      "0[1-9]|1[0-9]|2[0-8]))";
  const std::string time =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-"
      "9])";
  if (f == "date") return "^" + date + "$";
  if (f == "time") return "^" + time + "$";
  if (f == "date-time") return "^" + date + "[Tt]" + time + "$";
  if (f == "uuid")
    return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  if (f == "email") {
    return "^[a-zA-Z0-9_+-]+(\\.[a-zA-Z0-9_+-]+)*@[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-"
           "zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)+$";
  }
  if (f == "ipv4")
    return "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-"
           "9]|[1-9]?[0-9])$";
  if (f == "uri") return "^[a-zA-Z][a-zA-Z0-9+.-]*:[a-zA-Z0-9._~:/?#@!$&'()*+,;=%-]+$";
  if (f == "hostname")
    return "^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-"
           "Z0-9])?)*$";
  return "";
}

}  // namespace qwenrt::schema
