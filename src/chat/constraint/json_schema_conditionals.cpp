// JSON Schema compiler: if / then / else, through the negation of the simple schemas an `if`
// usually is (see json_schema_compiler.h).
#include <algorithm>
#include <string>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"

namespace qwenrt::schema {
namespace {

const char* const kTypes[] = {"null", "boolean", "object", "array", "string", "number"};

// Every instance whose type is not `t` ("number" also covers integers).
Json OtherTypes(const std::string& t) {
  Json types = Json::array();
  for (const char* x : kTypes)
    if (t != x) types.push_back(x);
  return Json::object({{"type", types}});
}

// Any value except the listed scalars (strings, numbers, booleans, null); false when a value is
// an array or an object. Numbers are excluded by value (open intervals around them: 6.0 is 6).
bool AllBut(const Json& values, Json* out) {
  std::vector<std::string> strings_json;
  Json strings = Json::array();
  std::vector<double> numbers;
  bool has_true = false, has_false = false, has_null = false;
  for (const Json& v : values) {
    if (v.is_string()) {
      strings.push_back(v);
    } else if (v.is_number()) {
      numbers.push_back(v.get<double>());
    } else if (v.is_boolean()) {
      (v.get<bool>() ? has_true : has_false) = true;
    } else if (v.is_null()) {
      has_null = true;
    } else {
      return false;
    }
  }
  Json any = Json::array({Json::object({{"type", Json::array({"array", "object"})}})});
  if (!has_null) any.push_back(Json::object({{"type", "null"}}));
  if (!has_true) any.push_back(Json::object({{"const", true}}));
  if (!has_false) any.push_back(Json::object({{"const", false}}));
  if (strings.empty()) {
    any.push_back(Json::object({{"type", "string"}}));
  } else {
    any.push_back(Json::object({{"type", "string"}, {"not", Json::object({{"enum", strings}})}}));
  }
  if (numbers.empty()) {
    any.push_back(Json::object({{"type", "number"}}));
  } else {
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    for (size_t i = 0; i <= numbers.size(); ++i) {  // the open intervals between them
      Json iv = Json::object({{"type", "number"}});
      if (i > 0) iv["exclusiveMinimum"] = numbers[i - 1];
      if (i < numbers.size()) iv["exclusiveMaximum"] = numbers[i];
      any.push_back(iv);
    }
  }
  *out = Json::object({{"anyOf", any}});
  return true;
}

// The negation of a simple schema, as a schema: true/false; one bound, length, count, `required`,
// `type` (not "integer"), `const`/`enum` of scalars; `properties` naming one property with a
// `const`/`enum` of scalars (maybe `required` too). False for anything else.
bool Negation(const Json& x, Json* out) {
  if (x.is_boolean()) {
    *out = !x.get<bool>();
    return true;
  }
  if (!x.is_object()) return false;
  Json s = Json::object();
  for (auto it = x.begin(); it != x.end(); ++it)
    if (!IsAnnotation(it.key())) s[it.key()] = it.value();
  if (s.empty()) {
    *out = false;
    return true;
  }
  auto num = [&](const char* k) { return s.size() == 1 && s.contains(k) && s[k].is_number(); };
  auto count = [&](const char* k) {
    return s.size() == 1 && s.contains(k) && s[k].is_number_integer() && s[k].get<int64_t>() >= 0;
  };
  // A keyword of one type (a bound, a length, `required`) holds for every instance of another
  // type, so its negation is instances of that type failing it, and nothing else.
  auto typed = [&](const std::string& t, Json rest) {
    rest["type"] = t;
    return rest;
  };
  const std::pair<const char*, const char*> bounds[] = {{"minimum", "exclusiveMaximum"},
                                                        {"maximum", "exclusiveMinimum"},
                                                        {"exclusiveMinimum", "maximum"},
                                                        {"exclusiveMaximum", "minimum"}};
  for (auto [k, flip] : bounds) {
    if (num(k)) {
      *out = typed("number", Json::object({{flip, s[k]}}));
      return true;
    }
  }
  const char* const counts[][3] = {{"minLength", "maxLength", "string"},
                                   {"maxLength", "minLength", "string"},
                                   {"minItems", "maxItems", "array"},
                                   {"maxItems", "minItems", "array"},
                                   {"minProperties", "maxProperties", "object"},
                                   {"maxProperties", "minProperties", "object"}};
  for (const auto& c : counts) {
    if (!count(c[0])) continue;
    const int64_t n = s[c[0]].get<int64_t>();
    const bool is_min = std::string(c[0]).rfind("min", 0) == 0;
    if (is_min && n == 0) {
      *out = false;
      return true;
    }
    *out = typed(c[2], Json::object({{c[1], is_min ? n - 1 : n + 1}}));
    return true;
  }
  if (s.size() == 1 && s.contains("type") && s["type"].is_string() && s["type"] != "integer") {
    *out = OtherTypes(s["type"].get<std::string>());
    return true;
  }
  if (s.size() == 1 && (s.contains("const") || (s.contains("enum") && s["enum"].is_array())))
    return AllBut(s.contains("const") ? Json::array({s["const"]}) : s["enum"], out);
  if (s.size() == 1 && s.contains("required") && s["required"].is_array() &&
      !s["required"].empty()) {
    // Some listed key missing.
    Json any = Json::array();
    for (const Json& k : s["required"]) {
      if (!k.is_string()) return false;
      any.push_back(Json::object(
          {{"type", "object"}, {"properties", Json::object({{k.get<std::string>(), false}})}}));
    }
    *out = typed("object", Json::object({{"anyOf", any}}));
    return true;
  }
  if (s.contains("properties") && s["properties"].is_object() && s["properties"].size() == 1 &&
      s.size() <= 3) {
    // {properties: {k: V}} (maybe type object, required [k]) fails for an object with k present
    // and not meeting V, or (when required) without k, and (with type object) for a non-object.
    const std::string key = s["properties"].begin().key();
    const Json& v = s["properties"].begin().value();
    const bool required = s.contains("required") && s["required"] == Json::array({key});
    const bool object_type = s.contains("type") && s["type"] == "object";
    if (s.size() != static_cast<size_t>(1 + (required ? 1 : 0) + (object_type ? 1 : 0)))
      return false;
    Json not_v;
    if (!Negation(v, &not_v)) return false;
    Json any = Json::array({Json::object(
        {{"required", Json::array({key})}, {"properties", Json::object({{key, not_v}})}})});
    if (required) any.push_back(Json::object({{"properties", Json::object({{key, false}})}}));
    // Without `type: object` the if holds for every non-object; with it, non-objects fail it.
    const Json failing = typed("object", Json::object({{"anyOf", any}}));
    *out = object_type ? Json::object({{"anyOf", Json::array({OtherTypes("object"), failing})}})
                       : failing;
    return true;
  }
  return false;
}

}  // namespace

// if / then / else: (if and then) or (not if and else), the negation written out as a schema for
// the simple `if`s (Negation); then and else default to true, and without `if` they assert
// nothing.
std::string SchemaCompiler::CompileIf(const Json& s, const std::string& ptr) {
  Json base = s;
  base.erase("if");
  base.erase("then");
  base.erase("else");
  if (!s.contains("if")) return Compile(base, ptr);
  Json not_if;
  if (!Negation(s["if"], &not_if))
    Error(ptr, "if",
          "not supported (only an if that is a bound, length, count, required list, type, "
          "const/enum of scalars, or one property with one of those)");
  Json yes = Json::array({s["if"]}), no = Json::array({not_if});
  if (s.contains("then")) yes.push_back(s["then"]);
  if (s.contains("else")) no.push_back(s["else"]);
  Json branches = Json::array({Json::object({{"allOf", yes}}), Json::object({{"allOf", no}})});
  if (base.contains("anyOf") || base.contains("oneOf")) {
    // The schema's own alternatives stay: both hold.
    if (!base.contains("allOf")) base["allOf"] = Json::array();
    base["allOf"].push_back(Json::object({{"anyOf", branches}}));
  } else {
    base["anyOf"] = branches;
  }
  return Compile(base, ptr);
}

}  // namespace qwenrt::schema
