// JSON Schema compiler: strings, their length, pattern and format (see json_schema_compiler.h).
#include <cstdint>
#include <set>
#include <string>

#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/regex_gbnf.h"

namespace qwenrt::schema {

std::string SchemaCompiler::CompileString(const Json& s, const std::string& ptr) {
  const bool has_len = s.contains("minLength") || s.contains("maxLength");
  auto count = [&](const char* k, int64_t def) -> int64_t {
    if (!s.contains(k)) return def;
    if (!s[k].is_number()) Error(ptr, k, "must be a number");
    const double v = s[k].get<double>();
    if (v < 0 || v > 100000) Error(ptr, k, "out of range");
    return static_cast<int64_t>(v);
  };
  if (s.contains("format")) {
    const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
    if ((has_len || s.contains("pattern")) && !FormatRegex(f).empty()) {
      Error(ptr, "format", "together with pattern/minLength/maxLength");
    }
    std::string re = FormatRegex(f);
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
  if (s.contains("pattern")) {
    if (has_len) Error(ptr, "pattern", "together with minLength/maxLength");
    if (!s["pattern"].is_string()) Error(ptr, "pattern", "must be a string");
    std::string g;
    Status st = RegexToGbnf(s["pattern"].get<std::string>(), RegexMode::kJsonString, &g);
    if (!st.ok()) Error(ptr, "pattern", st.message());
    return NewRule("\"\\\"\" " + g + " \"\\\"\"");
  }
  if (!has_len) return "jstring";
  const int64_t lo = count("minLength", 0), hi = count("maxLength", -1);
  if (hi >= 0 && hi < lo) Error(ptr, "maxLength", "less than minLength");
  return NewRule("\"\\\"\" jchar{" + std::to_string(lo) + "," +
                 (hi >= 0 ? std::to_string(hi) : "") + "} \"\\\"\"");
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
