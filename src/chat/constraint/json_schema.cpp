// The schema compiler: one GBNF rule per schema node (memoised by JSON pointer for $ref, so
// recursive schemas become recursive rules), fixed helper rules for JSON's lexical pieces.
#include "chat/constraint/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/json_schema_validate.h"
#include "chat/constraint/matcher.h"

namespace qwenrt::schema {

bool IsAnnotation(std::string_view keyword) {
  // Keywords that never constrain instances: annotations, identifiers, vocabularies, and the
  // editors' annotation keywords (VS Code's markdownDescription and friends).
  static const std::set<std::string, std::less<>> k = {"title",
                                                       "description",
                                                       "default",
                                                       "examples",
                                                       "example",
                                                       "$schema",
                                                       "$id",
                                                       "id",
                                                       "$comment",
                                                       "readOnly",
                                                       "writeOnly",
                                                       "deprecated",
                                                       "$defs",
                                                       "definitions",
                                                       "contentMediaType",
                                                       "contentEncoding",
                                                       "discriminator",
                                                       "xml",
                                                       "externalDocs",
                                                       "nullable_annotation",
                                                       "$anchor",
                                                       "$vocabulary",
                                                       "markdownDescription",
                                                       "errorMessage",
                                                       "markdownEnumDescriptions",
                                                       "enumDescriptions",
                                                       "deprecationMessage",
                                                       "defaultSnippets",
                                                       "doNotSuggest",
                                                       "patternErrorMessage",
                                                       "suggestSortText",
                                                       "enumNames"};
  return k.count(keyword) > 0 || keyword.substr(0, 2) == "x-";
}

// Keywords that constrain instances but which this compiler does not enforce.
const std::set<std::string>& Unsupported() {
  static const std::set<std::string> k = {"not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentSchemas",
                                          "propertyNames",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "$dynamicRef",
                                          "$recursiveRef",
                                          "contentSchema",
                                          "multipleOf"};
  return k;
}

std::string GbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

const char* TypeOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float())
    return v.get<double>() == std::floor(v.get<double>()) ? "integer" : "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool TypeMatches(const std::string& type, const Json& v) {
  const std::string t = TypeOf(v);
  return t == type || (type == "number" && t == "integer");
}

std::string PointerEscape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

namespace {

// How deeply a schema document may nest (arrays and objects). Each schema level is about two JSON
// levels (`properties`, then the name), and Compile stops at 200 schema levels anyway.
constexpr int kMaxSchemaDepth = 512;

}  // namespace

StatusOr<std::string> SchemaCompiler::Run() {
  try {
    return GrammarText(Compile(root_, ""));
  } catch (const Fail& f) {
    return f.status;
  } catch (const Json::TypeError&) {
    return InvalidArgument("schema: a keyword has a value of the wrong type");
  }
}

std::string SchemaCompiler::GrammarText(const std::string& start) const {
  std::string out = "root ::= " + start + "\n";
  out += compact_ ? "ws ::= \"\"\n" : "ws ::= [ \\t\\n\\r]*\n";
  out += kBaseRules;
  out += rules_;
  return out;
}

void SchemaCompiler::Error(const std::string& ptr, const std::string& kw, const std::string& what,
                           bool unsatisfiable) {
  throw Fail{InvalidArgument("{}: {}: {}", ptr.empty() ? "#" : "#" + ptr, kw, what), unsatisfiable};
}

SchemaCompiler::Mark SchemaCompiler::Save() const {
  return {rules_.size(), ref_rules_, depth_, merge_depth_};
}

void SchemaCompiler::Restore(const Mark& m) {
  rules_.resize(m.rules_size);
  ref_rules_ = m.ref_rules;
  depth_ = m.depth;
  merge_depth_ = m.merge_depth;
}

// Compiles `s`, or returns "" when it matches nothing; rules of a failed attempt are dropped.
std::string SchemaCompiler::CompileOrNever(const Json& s, const std::string& ptr) {
  const Mark mark = Save();
  try {
    return Compile(s, ptr);
  } catch (const Fail& f) {
    if (!f.unsatisfiable) throw;
    Restore(mark);
    return "";
  }
}

// Merges b into *a, or returns false (the compiler as before) when nothing satisfies both.
bool SchemaCompiler::MergeOrNever(Json* a, const Json& b, const std::string& ptr) {
  const Mark mark = Save();
  try {
    Merge(a, b, ptr);
    return true;
  } catch (const Fail& f) {
    if (!f.unsatisfiable) throw;
    Restore(mark);
    return false;
  }
}

std::string SchemaCompiler::NewRule(const std::string& body) {
  const std::string name = "s" + std::to_string(n_++);
  rules_ += name + " ::= " + body + "\n";
  if (rules_.size() > (64u << 20)) Error("", "schema", "grammar too large");
  return name;
}

std::string SchemaCompiler::Compile(const Json& s, const std::string& ptr) {
  if (++depth_ > 200) Error(ptr, "schema", "nesting too deep");
  std::string r = CompileInner(s, ptr);
  --depth_;
  return r;
}

std::string SchemaCompiler::CompileInner(const Json& s, const std::string& ptr) {
  if (s.is_boolean()) {
    if (s.get<bool>()) return "jvalue";
    Error(ptr, "false", "a false schema matches nothing", true);
  }
  if (!s.is_object()) Error(ptr, "schema", "a schema must be an object or a boolean");
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) Error(ptr, "$ref", "not a string");
    bool siblings = false;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != "$ref" && !IsAnnotation(it.key())) siblings = true;
    }
    if (siblings) {
      Json merged = Json::object();
      Json rest = s;
      rest.erase("$ref");
      Merge(&merged, Json{{"$ref", s["$ref"]}}, ptr);
      Merge(&merged, rest, ptr);
      return Compile(merged, ptr);
    }
    std::string target;
    const Json& t = Resolve(s["$ref"].get<std::string>(), ptr, &target);
    auto it = ref_rules_.find(target);
    if (it != ref_rules_.end()) return it->second;
    const std::string name = "r" + std::to_string(n_++);
    ref_rules_[target] = name;
    const std::string body = Compile(t, target);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }
  if (s.contains("if") || s.contains("then") || s.contains("else")) return CompileIf(s, ptr);
  if (s.contains("not")) return CompileNot(s, ptr);
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (Unsupported().count(it.key())) {
      if (it.key() == "multipleOf") continue;  // CompileNumber (integral divisors) or an error
      Error(ptr, it.key(), "not supported");
    }
  }
  if (s.contains("uniqueItems") && s["uniqueItems"] == true)
    Error(ptr, "uniqueItems", "not supported");
  if (s.contains("allOf")) {
    Json merged = s;
    merged.erase("allOf");
    for (const auto& sub : s["allOf"]) Merge(&merged, sub, ptr + "/allOf");
    return Compile(merged, ptr);
  }
  if (s.contains("anyOf") || s.contains("oneOf")) {
    const bool one = !s.contains("anyOf");
    if (s.contains("anyOf") && s.contains("oneOf")) Error(ptr, "oneOf", "together with anyOf");
    const char* kw = one ? "oneOf" : "anyOf";
    const Json& branches = s[kw];
    if (!branches.is_array() || branches.empty()) Error(ptr, kw, "must be a non-empty array");
    Json siblings = s;
    siblings.erase(kw);
    bool plain =
        true;  // no sibling constrains: compile branches as they are (keeps $ref rules shared)
    for (auto it = siblings.begin(); it != siblings.end(); ++it) plain &= IsAnnotation(it.key());
    std::vector<Json> merged;
    if (!one || !OneOfByPresence(siblings, branches, ptr, &merged)) {
      for (size_t i = 0; i < branches.size(); ++i) {
        if (plain && !one) {
          merged.push_back(branches[i]);
          continue;
        }
        // A branch nothing satisfies beside the siblings (types apart, say) never matches: it
        // adds nothing to anyOf and never counts for oneOf.
        Json m = siblings;
        if (MergeOrNever(&m, branches[i], ptr + "/" + kw + "/" + std::to_string(i)))
          merged.push_back(m);
      }
      if (one) {
        try {
          CheckDisjoint(merged, ptr);
        } catch (const Fail& f) {
          // Branches that may overlap: object branches told apart by their required keys.
          std::vector<Json> by_required;
          if (f.unsatisfiable || !OneOfByRequired(siblings, branches, ptr, &by_required)) throw;
          merged = std::move(by_required);
        }
      }
    }
    std::string body;
    for (size_t i = 0; i < merged.size(); ++i) {
      const std::string b = CompileOrNever(merged[i], ptr + "/" + kw + "/" + std::to_string(i));
      if (b.empty()) continue;
      body += (body.empty() ? "" : " | ") + b;
    }
    if (body.empty()) Error(ptr, kw, "no branch can match", true);
    return NewRule(body);
  }
  // Types allowed.
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string())
      types.push_back(t.get<std::string>());
    else if (t.is_array())
      for (const auto& x : t) types.push_back(x.get<std::string>());
    else
      Error(ptr, "type", "must be a string or an array");
  } else {
    types = {"null", "boolean", "object", "array", "string", "number"};
  }
  for (const auto& t : types) {
    if (t != "null" && t != "boolean" && t != "object" && t != "array" && t != "string" &&
        t != "number" && t != "integer") {
      Error(ptr, "type", "unknown type '" + t + "'");
    }
  }
  if (std::find(types.begin(), types.end(), "number") != types.end()) {
    types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
  }
  if (s.contains("const") || s.contains("enum")) {
    std::vector<Json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) Error(ptr, "enum", "must be an array");
      for (const auto& v : s["enum"]) {
        if (s.contains("const") && v != s["const"]) continue;
        values.push_back(v);
      }
      if (s.contains("const")) values.erase(values.begin());
      if (s.contains("const") && values.empty() && !s["enum"].empty()) {
        // const not in enum: nothing matches
        Error(ptr, "enum", "const not in enum");
      }
      if (s.contains("const") && s["enum"].empty()) Error(ptr, "enum", "empty enum");
      if (s.contains("const") && values.empty()) values.push_back(s["const"]);
    }
    Json rest = s;
    rest.erase("const");
    rest.erase("enum");
    bool constrained = false;
    for (auto it = rest.begin(); it != rest.end(); ++it)
      constrained |= it.key() != "type" && !IsAnnotation(it.key());
    if (constrained) values = KeepAccepted(values, rest, ptr);
    std::string body;
    int count = 0;
    for (const auto& v : values) {
      bool ok = false;
      for (const auto& t : types) ok |= TypeMatches(t, v);
      if (!ok) continue;
      body += (count++ ? " | " : "") + ValueLiteral(v);
    }
    if (count == 0) Error(ptr, "enum", "no value matches the schema", true);
    return NewRule(body);
  }
  std::string body;
  for (size_t i = 0; i < types.size(); ++i)
    body += (i ? " | " : "") + CompileType(s, types[i], ptr);
  return NewRule(body);
}

// const / enum beside other keywords: the values valid under the rest of the schema. The
// validator decides each value where it can (json_schema_validate.h); the rest are run through
// the rest's own grammar, which enforces it exactly or does not compile (the refusal is then the
// rest's own error), so every kept value is valid. A valid value that grammar rejects (an
// integral float where the rest says "integer", object keys in another order than the declared
// one) is dropped: a choice lost, never an invalid value let through.
std::vector<Json> SchemaCompiler::KeepAccepted(const std::vector<Json>& values, const Json& rest,
                                               const std::string& ptr) {
  if (--*checks_left_ < 0)
    Error(ptr, "enum",
          "more than " + std::to_string(kMaxValueChecks) +
              " enum/const checks beside other keywords in one schema");
  std::vector<Verdict> verdicts;
  bool undecided = false;
  for (const Json& v : values) {
    verdicts.push_back(Validate(root_, rest, v));
    undecided |= verdicts.back() == Verdict::kUnknown;
  }
  if (undecided) {
    SchemaCompiler child(root_, /*compact=*/true);
    child.depth_ = depth_;
    child.checks_left_ = checks_left_;
    std::string text;
    bool none = false;
    try {
      text = child.GrammarText(child.Compile(rest, ptr));
    } catch (const Fail& f) {
      if (!f.unsatisfiable) throw;
      none = true;
    }
    std::shared_ptr<const Grammar> grammar;
    if (!none) {
      auto g = Grammar::FromGbnf(text);
      if (!g.ok()) Error(ptr, "enum", "the rest of the schema: " + g.status().message());
      grammar = *g;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (verdicts[i] != Verdict::kUnknown) continue;
      bool ok = false;
      if (grammar != nullptr) {
        Matcher m(grammar, SingleByteTrie(), ShortTextLimits());
        ok = m.AcceptBytes(values[i].dump()) && m.CanEnd();
      }
      verdicts[i] = ok ? Verdict::kValid : Verdict::kInvalid;
    }
  }
  std::vector<Json> kept;
  for (size_t i = 0; i < values.size(); ++i)
    if (verdicts[i] == Verdict::kValid) kept.push_back(values[i]);
  return kept;
}

// A JSON value as json.dumps would print it, with JSON whitespace allowed between tokens.
std::string SchemaCompiler::ValueLiteral(const Json& v) {
  if (v.is_object()) {
    std::string out = "\"{\" ws";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += " ws \",\" ws";
      first = false;
      std::string key;
      Json(it.key()).AppendPython(&key);
      out += " " + GbnfLiteral(key) + " ws \":\" ws " + ValueLiteral(it.value());
    }
    return "(" + out + " ws \"}\")";
  }
  if (v.is_array()) {
    std::string out = "\"[\" ws";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += " ws \",\" ws";
      out += " " + ValueLiteral(v[i]);
    }
    return "(" + out + " ws \"]\")";
  }
  std::string text;
  v.AppendPython(&text);
  return GbnfLiteral(text);
}

std::string SchemaCompiler::CompileType(const Json& s, const std::string& type,
                                        const std::string& ptr) {
  if (type == "null") return "jnull";
  if (type == "boolean") return "jboolean";
  if (type == "integer" || type == "number") return CompileNumber(s, type == "integer", ptr);
  if (type == "string") return CompileString(s, ptr);
  if (type == "array") return CompileArray(s, ptr);
  return CompileObject(s, ptr);
}

}  // namespace qwenrt::schema

namespace qwenrt {

StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_text,
                                       const JsonSchemaOptions& options) {
  QWENRT_ASSIGN_OR_RETURN(
      const Json root, Json::Parse(schema_text, Json::Limits{schema::kMaxSchemaDepth}, "schema"));
  schema::SchemaCompiler c(root, options.compact);
  return c.Run();
}

}  // namespace qwenrt
