// The schema compiler: one GBNF rule per schema node (memoised by JSON pointer for $ref, so
// recursive schemas become recursive rules), fixed helper rules for JSON's lexical pieces.
#include "chat/constraint/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "chat/constraint/matcher.h"
#include "chat/constraint/number_range.h"
#include "chat/constraint/regex_gbnf.h"
#include "chat/constraint/token_trie.h"
#include "chat/constraint/utf8_ranges.h"
#include "text/json.h"

namespace qwenrt {
namespace {

// Lexical rules every schema grammar shares.
constexpr const char* kBaseRules = R"(jhex ::= [0-9a-fA-F]
jchar ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] jhex jhex jhex | [dD] [0-7] jhex jhex | [dD] [89abAB] jhex jhex "\\u" [dD] [c-fC-F] jhex jhex))
jstring ::= "\"" jchar* "\""
jnumber ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
jinteger ::= "-"? ("0" | [1-9] [0-9]*)
jboolean ::= "true" | "false"
jnull ::= "null"
jvalue ::= jobject | jarray | jstring | jnumber | jboolean | jnull
jobject ::= "{" ws (jstring ws ":" ws jvalue (ws "," ws jstring ws ":" ws jvalue)*)? ws "}"
jarray ::= "[" ws (jvalue (ws "," ws jvalue)*)? ws "]"
)";

// Keywords that never constrain instances (annotations, identifiers, vocabularies).
const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {"title",
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
                                          "errorMessage"};
  return k;
}

// Keywords that constrain instances but which this compiler does not enforce.
const std::set<std::string>& Unsupported() {
  static const std::set<std::string> k = {"not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentRequired",
                                          "dependentSchemas",
                                          "dependencies",
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

// How deeply a schema document may nest (arrays and objects). Each schema level is about two JSON
// levels (`properties`, then the name), and Compile stops at 200 schema levels anyway.
constexpr int kMaxSchemaDepth = 512;

struct Fail {
  Status status;
  bool unsatisfiable;  // the schema matches nothing (an optional place for it can be dropped)
};

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, bool compact) : root_(root), compact_(compact) {}

  StatusOr<std::string> Run() {
    try {
      const std::string r = Compile(root_, "");
      std::string out = "root ::= " + r + "\n";
      out += compact_ ? "ws ::= \"\"\n" : "ws ::= [ \\t\\n\\r]*\n";
      out += kBaseRules;
      out += rules_;
      return out;
    } catch (const Fail& f) {
      return f.status;
    } catch (const Json::TypeError&) {
      return InvalidArgument("schema: a keyword has a value of the wrong type");
    }
  }

 private:
  [[noreturn]] static void Error(const std::string& ptr, const std::string& kw,
                                 const std::string& what, bool unsatisfiable = false) {
    throw Fail{InvalidArgument("{}: {}: {}", ptr.empty() ? "#" : "#" + ptr, kw, what),
               unsatisfiable};
  }

  // Compiles `s`, or returns "" when it matches nothing; rules of a failed attempt are dropped.
  std::string CompileOrNever(const Json& s, const std::string& ptr) {
    const size_t rules_size = rules_.size();
    const auto refs = ref_rules_;
    const int depth = depth_, merge_depth = merge_depth_;
    try {
      return Compile(s, ptr);
    } catch (const Fail& f) {
      if (!f.unsatisfiable) throw;
      rules_.resize(rules_size);
      ref_rules_ = refs;
      depth_ = depth;
      merge_depth_ = merge_depth;
      return "";
    }
  }

  std::string NewRule(const std::string& body) {
    const std::string name = "s" + std::to_string(n_++);
    rules_ += name + " ::= " + body + "\n";
    if (rules_.size() > (64u << 20)) Error("", "schema", "grammar too large");
    return name;
  }

  const Json& Resolve(const std::string& ref, const std::string& ptr, std::string* target) {
    if (ref.empty() || ref[0] != '#')
      Error(ptr, "$ref", "only local references (#...) are supported: " + ref);
    std::string p = ref.substr(1);
    // Percent-decoding of the fragment.
    std::string dec;
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] == '%' && i + 2 < p.size() + 0 && isxdigit(static_cast<unsigned char>(p[i + 1])) &&
          isxdigit(static_cast<unsigned char>(p[i + 2]))) {
        dec.push_back(static_cast<char>(std::stoi(p.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        dec.push_back(p[i]);
      }
    }
    if (!dec.empty() && dec[0] != '/') Error(ptr, "$ref", "anchors are not supported: " + ref);
    const Json* cur = &root_;
    size_t i = 1;
    while (i <= dec.size() && !dec.empty()) {
      size_t j = dec.find('/', i);
      if (j == std::string::npos) j = dec.size();
      std::string tok = dec.substr(i, j - i);
      std::string key;
      for (size_t k = 0; k < tok.size(); ++k) {
        if (tok[k] == '~' && k + 1 < tok.size()) {
          key.push_back(tok[k + 1] == '1' ? '/' : '~');
          ++k;
        } else {
          key.push_back(tok[k]);
        }
      }
      if (cur->is_object() && cur->contains(key)) {
        cur = &(*cur)[key];
      } else if (cur->is_array() && !key.empty() &&
                 key.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(key) < cur->size()) {
        cur = &(*cur)[std::stoul(key)];
      } else {
        Error(ptr, "$ref", "unresolved reference " + ref);
      }
      i = j + 1;
    }
    *target = dec;
    return *cur;
  }

  // allOf-style merge of b into a; conflicts are errors.
  void Merge(Json* a, const Json& b_in, const std::string& ptr) {
    Json b = b_in;
    if (b.is_boolean()) {
      if (b.get<bool>()) return;
      Error(ptr, "allOf", "false schema");
    }
    if (b.contains("$ref")) {
      std::string target;
      Json resolved = Resolve(b["$ref"].get<std::string>(), ptr, &target);
      if (++merge_depth_ > 50) Error(ptr, "$ref", "recursive reference inside allOf");
      b.erase("$ref");
      Merge(a, resolved, ptr);
      --merge_depth_;
    }
    if (b.contains("allOf")) {
      Json subs = b["allOf"];
      b.erase("allOf");
      for (const auto& s : subs) Merge(a, s, ptr);
    }
    // additionalProperties / patternProperties / items only see their own schema's properties or
    // prefixItems: merging another branch's into them would widen them.
    auto keys_of = [](const Json& x) {
      std::set<std::string> k;
      if (x.contains("properties") && x["properties"].is_object()) {
        for (auto it = x["properties"].begin(); it != x["properties"].end(); ++it)
          k.insert(it.key());
      }
      return k;
    };
    auto closed = [](const Json& x) {
      return (x.contains("additionalProperties") && x["additionalProperties"] != true) ||
             x.contains("patternProperties");
    };
    const auto ka = keys_of(*a), kb = keys_of(b);
    if ((closed(*a) && !std::includes(ka.begin(), ka.end(), kb.begin(), kb.end())) ||
        (closed(b) && !std::includes(kb.begin(), kb.end(), ka.begin(), ka.end()))) {
      Error(ptr, "additionalProperties",
            "combined with properties of another allOf/anyOf/oneOf branch");
    }
    for (const char* k : {"items", "prefixItems", "additionalItems"}) {
      const bool mine =
          a->contains("items") || a->contains("prefixItems") || a->contains("additionalItems");
      if (b.contains(k) && mine && (!a->contains(k) || (*a)[k] != b[k])) {
        Error(ptr, k, "combined with items of another allOf/anyOf/oneOf branch");
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string& k = it.key();
      if (Annotations().count(k)) continue;
      if (!a->contains(k)) {
        (*a)[k] = it.value();
      } else if ((*a)[k] == it.value()) {
        continue;
      } else if (k == "properties" && it.value().is_object()) {
        for (auto p = it.value().begin(); p != it.value().end(); ++p) {
          if (!(*a)[k].contains(p.key())) {
            (*a)[k][p.key()] = p.value();
          } else if ((*a)[k][p.key()] != p.value()) {
            Json merged = (*a)[k][p.key()];
            Merge(&merged, p.value(), ptr + "/properties/" + PointerEscape(p.key()));
            (*a)[k][p.key()] = merged;
          }
        }
      } else if (k == "required" && it.value().is_array()) {
        for (const auto& r : it.value()) {
          bool have = false;
          for (const auto& x : (*a)[k]) have |= x == r;
          if (!have) (*a)[k].push_back(r);
        }
      } else if (k == "enum" && it.value().is_array() && (*a)[k].is_array()) {
        Json both = Json::array();
        for (const auto& x : (*a)[k]) {
          for (const auto& y : it.value()) {
            if (x == y) {
              both.push_back(x);
              break;
            }
          }
        }
        if (both.empty()) Error(ptr, "enum", "allOf: enums do not intersect", true);
        (*a)[k] = both;
      } else if (k == "type") {
        // Intersection of type sets.
        auto set_of = [](const Json& t) {
          std::set<std::string> s;
          if (t.is_string())
            s.insert(t.get<std::string>());
          else
            for (const auto& x : t) s.insert(x.get<std::string>());
          return s;
        };
        std::set<std::string> x = set_of((*a)[k]), y = set_of(it.value()), r;
        for (const auto& t : x) {
          if (y.count(t))
            r.insert(t);
          else if (t == "integer" && y.count("number"))
            r.insert("integer");
          else if (t == "number" && y.count("integer"))
            r.insert("integer");
        }
        if (r.empty()) Error(ptr, "allOf", "types do not intersect", true);
        Json arr = Json::array();
        for (const auto& t : r) arr.push_back(t);
        (*a)[k] = arr.size() == 1 ? arr[0] : arr;
      } else if ((k == "minimum" || k == "exclusiveMinimum" || k == "minLength" ||
                  k == "minItems") &&
                 it.value().is_number() && (*a)[k].is_number()) {
        if (it.value().get<double>() > (*a)[k].get<double>()) (*a)[k] = it.value();
      } else if ((k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" ||
                  k == "maxItems") &&
                 it.value().is_number() && (*a)[k].is_number()) {
        if (it.value().get<double>() < (*a)[k].get<double>()) (*a)[k] = it.value();
      } else {
        Error(ptr, "allOf", "conflicting '" + k + "'");
      }
    }
  }

  std::string Compile(const Json& s, const std::string& ptr) {
    if (++depth_ > 200) Error(ptr, "schema", "nesting too deep");
    std::string r = CompileInner(s, ptr);
    --depth_;
    return r;
  }

  std::string CompileInner(const Json& s, const std::string& ptr) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return "jvalue";
      Error(ptr, "false", "a false schema matches nothing", true);
    }
    if (!s.is_object()) Error(ptr, "schema", "a schema must be an object or a boolean");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) Error(ptr, "$ref", "not a string");
      bool siblings = false;
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.key() != "$ref" && !Annotations().count(it.key())) siblings = true;
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
      for (auto it = siblings.begin(); it != siblings.end(); ++it)
        plain &= Annotations().count(it.key()) > 0;
      std::vector<Json> merged;
      for (size_t i = 0; i < branches.size(); ++i) {
        if (plain && !one) {
          merged.push_back(branches[i]);
          continue;
        }
        Json m = siblings;
        Merge(&m, branches[i], ptr + "/" + kw + "/" + std::to_string(i));
        merged.push_back(m);
      }
      if (one) CheckDisjoint(merged, ptr);
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
      for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        if (k == "const" || k == "enum" || k == "type" || Annotations().count(k)) continue;
        // Other keywords would have to be checked against each value.
        if (k == "minLength" || k == "maxLength" || k == "pattern" || k == "format" ||
            k == "minimum" || k == "maximum" || k == "properties" || k == "required" ||
            k == "items" || k == "minItems" || k == "maxItems" || k == "additionalProperties" ||
            k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "prefixItems" ||
            k == "multipleOf") {
          Error(ptr, k, "together with enum/const is not supported");
        }
      }
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

  // The exact forms of `not`: not false (nothing excluded), not true / {} (nothing left),
  // not {not: X} (X itself, merged like allOf), not {type: T} (T removed from the types; removing
  // "integer" while "number" stays would leave non-integral numbers only, which is not compiled).
  // Anything else stays an error naming `not`.
  std::string CompileNot(const Json& s, const std::string& ptr) {
    const Json n = s["not"];
    Json rest = s;
    rest.erase("not");
    const std::string at = ptr + "/not";
    auto only = [&](const char* key) { return n.is_object() && n.size() == 1 && n.contains(key); };
    if (n.is_boolean() && !n.get<bool>()) return Compile(rest, ptr);
    if ((n.is_boolean() && n.get<bool>()) || (n.is_object() && n.empty()))
      Error(ptr, "not", "excludes every instance", true);
    if (only("not")) {
      Merge(&rest, n["not"], at + "/not");
      return Compile(rest, ptr);
    }
    if (only("type")) {
      std::set<std::string> excluded;
      if (n["type"].is_string()) {
        excluded.insert(n["type"].get<std::string>());
      } else if (n["type"].is_array()) {
        for (const auto& t : n["type"]) {
          if (!t.is_string()) Error(at, "type", "must be a string or an array of strings");
          excluded.insert(t.get<std::string>());
        }
      } else {
        Error(at, "type", "must be a string or an array");
      }
      if (excluded.count("number")) excluded.insert("integer");
      std::vector<std::string> types;
      if (rest.contains("type")) {
        if (rest["type"].is_string()) {
          types.push_back(rest["type"].get<std::string>());
        } else if (rest["type"].is_array()) {
          for (const auto& t : rest["type"]) {
            if (!t.is_string()) Error(ptr, "type", "must be a string or an array of strings");
            types.push_back(t.get<std::string>());
          }
        } else {
          Error(ptr, "type", "must be a string or an array");
        }
      } else {
        types = {"null", "boolean", "object", "array", "string", "number"};
      }
      Json left = Json::array();
      for (const auto& t : types) {
        if (t == "number" && excluded.count("integer") && !excluded.count("number"))
          Error(ptr, "not", "excluding integers from numbers is not supported");
        if (!excluded.count(t)) left.push_back(t);
      }
      if (left.empty()) Error(ptr, "not", "excludes every type", true);
      rest["type"] = std::move(left);
      return Compile(rest, ptr);
    }
    Error(ptr, "not", "not supported (only not: false / true / {not: ...} / {type: ...})");
  }

  // Both are object-only schemas and no object satisfies both: a property `a` requires is forbidden
  // by `b`, or required by both with const/enum values that share nothing.
  bool ObjectsDisjoint(const Json& a, const Json& b) {
    auto object_only = [](const Json& x) {
      return x.is_object() && x.contains("type") && x["type"] == "object" && !x.contains("anyOf") &&
             !x.contains("oneOf") && !x.contains("allOf") && !x.contains("$ref");
    };
    if (!object_only(a) || !object_only(b)) return false;
    auto required = [](const Json& x) {
      std::set<std::string> r;
      if (x.contains("required"))
        for (const auto& k : x["required"])
          if (k.is_string()) r.insert(k.get<std::string>());
      return r;
    };
    const auto ra = required(a), rb = required(b);
    const bool b_closed = b.contains("additionalProperties") && b["additionalProperties"] == false;
    for (const auto& k : ra) {
      const bool in_b = b.contains("properties") && b["properties"].contains(k);
      if (b_closed && !in_b) return true;
      if (in_b && b["properties"][k] == false) return true;
      if (rb.count(k) && a.contains("properties") && a["properties"].contains(k) && in_b) {
        std::vector<Json> va, vb;
        auto values = [](const Json& p, std::vector<Json>* out) {
          if (!p.is_object()) return false;
          if (p.contains("const")) {
            out->push_back(p["const"]);
            return true;
          }
          if (p.contains("enum") && p["enum"].is_array()) {
            for (const auto& v : p["enum"]) out->push_back(v);
            return true;
          }
          return false;
        };
        if (values(a["properties"][k], &va) && values(b["properties"][k], &vb)) {
          bool share = false;
          for (const auto& x : va)
            for (const auto& y : vb) share |= x == y;
          if (!share) return true;
        }
      }
    }
    return false;
  }

  // oneOf is only compiled when its branches cannot both match one instance.
  void CheckDisjoint(const std::vector<Json>& branches, const std::string& ptr) {
    auto types_of = [](const Json& b) {
      std::set<std::string> s;
      if (b.is_object() && (b.contains("const") || b.contains("enum")))
        return s;  // handled as values
      if (b.is_object() && b.contains("type")) {
        if (b["type"].is_string())
          s.insert(b["type"].get<std::string>());
        else
          for (const auto& x : b["type"]) s.insert(x.get<std::string>());
      } else {
        s = {"null", "boolean", "object", "array", "string", "number"};
      }
      if (s.count("number")) s.insert("integer");
      return s;
    };
    auto values_of = [](const Json& b, std::vector<Json>* out) {
      if (!b.is_object()) return false;
      if (b.contains("const")) {
        out->push_back(b["const"]);
        return true;
      }
      if (b.contains("enum") && b["enum"].is_array()) {
        for (const auto& v : b["enum"]) out->push_back(v);
        return true;
      }
      return false;
    };
    for (size_t i = 0; i < branches.size(); ++i) {
      for (size_t j = i + 1; j < branches.size(); ++j) {
        std::vector<Json> vi, vj;
        const bool ci = values_of(branches[i], &vi), cj = values_of(branches[j], &vj);
        if (ci && cj) {
          for (const auto& a : vi)
            for (const auto& b : vj)
              if (a == b) Error(ptr, "oneOf", "branches overlap");
          continue;
        }
        if (ci || cj) {
          const auto& vals = ci ? vi : vj;
          const auto ts = types_of(ci ? branches[j] : branches[i]);
          for (const auto& v : vals) {
            if (ts.count(TypeOf(v))) Error(ptr, "oneOf", "branches may overlap");
          }
          continue;
        }
        if (ObjectsDisjoint(branches[i], branches[j]) || ObjectsDisjoint(branches[j], branches[i]))
          continue;
        const auto a = types_of(branches[i]), b = types_of(branches[j]);
        for (const auto& t : a) {
          if (b.count(t)) Error(ptr, "oneOf", "branches may overlap (both allow " + t + ")");
        }
      }
    }
  }

  // A JSON value as json.dumps would print it, with JSON whitespace allowed between tokens.
  std::string ValueLiteral(const Json& v) {
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

  std::string CompileType(const Json& s, const std::string& type, const std::string& ptr) {
    if (type == "null") return "jnull";
    if (type == "boolean") return "jboolean";
    if (type == "integer" || type == "number") return CompileNumber(s, type == "integer", ptr);
    if (type == "string") return CompileString(s, ptr);
    if (type == "array") return CompileArray(s, ptr);
    return CompileObject(s, ptr);
  }

  std::string CompileNumber(const Json& s, bool integer, const std::string& ptr) {
    NumberBounds b;
    auto num = [&](const char* k) -> std::optional<double> {
      if (!s.contains(k)) return std::nullopt;
      if (s[k].is_boolean()) return std::nullopt;
      if (!s[k].is_number()) Error(ptr, k, "must be a number");
      return s[k].get<double>();
    };
    b.lo = num("minimum");
    b.hi = num("maximum");
    if (auto x = num("exclusiveMinimum")) {
      if (!b.lo || *x >= *b.lo) {
        b.lo = x;
        b.lo_exclusive = true;
      }
    } else if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"] == true) {
      b.lo_exclusive = true;  // draft 4
    }
    if (auto x = num("exclusiveMaximum")) {
      if (!b.hi || *x <= *b.hi) {
        b.hi = x;
        b.hi_exclusive = true;
      }
    } else if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"] == true) {
      b.hi_exclusive = true;
    }
    if (s.contains("multipleOf")) return CompileMultiple(s, b, ptr);
    auto r = NumberGbnf(integer, b);
    if (!r.ok())
      Error(ptr, r.status().message().substr(0, r.status().message().find(':')),
            r.status().message());
    if (!b.lo && !b.hi) return integer ? "jinteger" : "jnumber";
    return NewRule(*r);
  }

  // multipleOf k (a positive integer): integers only (a number type spelled "10.0" is refused, a
  // sound restriction). Bounded on both sides: the multiples themselves as alternatives; otherwise
  // the remainder automaton over the decimal digits (state r, digit d -> (10 r + d) mod k), with
  // at most the bound 0 / 1 below or 0 / -1 above. Other combinations are errors.
  std::string CompileMultiple(const Json& s, const NumberBounds& b, const std::string& ptr) {
    const Json& m = s["multipleOf"];
    if (!m.is_number() || m.get<double>() <= 0)
      Error(ptr, "multipleOf", "must be a positive number");
    const double kd = m.get<double>();
    if (kd != std::floor(kd) || kd > 1e15)
      Error(ptr, "multipleOf", "only integral divisors are supported");
    const int64_t k = static_cast<int64_t>(kd);
    // The integer bounds [lo, hi] (nullopt: unbounded).
    std::optional<int64_t> lo, hi;
    if (b.lo) {
      if (std::fabs(*b.lo) > 1e15) Error(ptr, "minimum", "out of range");
      const double c = std::ceil(*b.lo);
      lo = static_cast<int64_t>(c) + (b.lo_exclusive && c == *b.lo ? 1 : 0);
    }
    if (b.hi) {
      if (std::fabs(*b.hi) > 1e15) Error(ptr, "maximum", "out of range");
      const double f = std::floor(*b.hi);
      hi = static_cast<int64_t>(f) - (b.hi_exclusive && f == *b.hi ? 1 : 0);
    }
    if (lo && hi) {
      if (*lo > *hi) Error(ptr, "minimum", "no integer within the bounds", true);
      const int64_t first = *lo >= 0 ? (*lo + k - 1) / k * k : -((-*lo) / k * k);
      if (first > *hi) Error(ptr, "multipleOf", "no multiple within the bounds", true);
      if ((*hi - first) / k >= 4096)
        Error(ptr, "multipleOf", "together with bounds holding more than 4096 multiples");
      std::string body;
      for (int64_t v = first; v <= *hi; v += k)
        body += (body.empty() ? "" : " | ") + ("\"" + std::to_string(v) + "\"");
      return NewRule(body);
    }
    if (k == 1 && !lo && !hi) return "jinteger";
    if (k == 1) {
      auto r = NumberGbnf(true, b);
      if (!r.ok()) Error(ptr, "multipleOf", r.status().message());
      return NewRule(*r);
    }
    if (k > 1000) Error(ptr, "multipleOf", "divisors above 1000 need both bounds");
    // m<r>: the digits read so far leave remainder r; the number may end at r == 0.
    const std::string base = "m" + std::to_string(n_++) + "-";
    std::vector<std::string> rem(static_cast<size_t>(k));
    for (int64_t r = 0; r < k; ++r) rem[r] = base + std::to_string(r);
    auto digits_to = [&](int64_t r, int d0) {  // alternatives "[digits] m<t>" grouped by target t
      std::map<int64_t, std::string> by_target;
      for (int d = d0; d <= 9; ++d)
        by_target[(10 * r + d) % k].push_back(static_cast<char>('0' + d));
      std::string alts;
      for (const auto& [t, ds] : by_target)
        alts += (alts.empty() ? "" : " | ") + ("[" + ds + "] " + rem[t]);
      return alts;
    };
    for (int64_t r = 0; r < k; ++r)
      rules_ += rem[r] + " ::= " + (r == 0 ? "\"\" | " : "") + digits_to(r, 0) + "\n";
    const std::string positive = NewRule(digits_to(0, 1));  // a leading digit 1-9, then any
    const std::string nonneg = NewRule("\"0\" | " + positive);
    if (!lo && !hi) return NewRule("\"-\"? " + nonneg);
    if (lo && !hi && (*lo == 0 || *lo == 1)) return *lo == 0 ? nonneg : positive;
    if (hi && !lo && (*hi == 0 || *hi == -1))
      return NewRule(*hi == 0 ? "\"0\" | \"-\" " + positive : "\"-\" " + positive);
    Error(ptr, "multipleOf", "together with a one-sided bound other than 0 / 1 / -1");
  }

  std::string CompileString(const Json& s, const std::string& ptr) {
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
  static const std::set<std::string>& KnownFormats() {
    static const std::set<std::string> k = {
        "email",        "idn-email",     "hostname",     "idn-hostname",
        "ipv4",         "ipv6",          "uri",          "uri-reference",
        "iri",          "iri-reference", "date-time",    "time",
        "date",         "regex",         "json-pointer", "relative-json-pointer",
        "uri-template", "duration",      "uuid",         "color"};
    return k;
  }
  static Json WithoutFormat(const Json& s) {
    Json c = s;
    c.erase("format");
    return c;
  }

  static std::string FormatRegex(const std::string& f) {
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

  std::string CompileArray(const Json& s, const std::string& ptr) {
    std::vector<std::string> prefix;
    std::string rest = "jvalue";
    bool rest_allowed = true;
    auto item_rule = [&](const Json& sub, const std::string& p) -> std::string {
      if (sub.is_boolean() && !sub.get<bool>()) return "";
      return CompileOrNever(sub, p);
    };
    if (s.contains("prefixItems")) {
      const Json& pi = s["prefixItems"];
      for (size_t i = 0; i < pi.size(); ++i)
        prefix.push_back(item_rule(pi[i], ptr + "/prefixItems/" + std::to_string(i)));
      if (s.contains("items")) {
        rest = item_rule(s["items"], ptr + "/items");
        rest_allowed = !rest.empty();
      }
    } else if (s.contains("items") && s["items"].is_array()) {  // draft 4 tuple form
      const Json& pi = s["items"];
      for (size_t i = 0; i < pi.size(); ++i)
        prefix.push_back(item_rule(pi[i], ptr + "/items/" + std::to_string(i)));
      if (s.contains("additionalItems")) {
        rest = item_rule(s["additionalItems"], ptr + "/additionalItems");
        rest_allowed = !rest.empty();
      }
    } else if (s.contains("items")) {
      rest = item_rule(s["items"], ptr + "/items");
      rest_allowed = !rest.empty();
    }
    int64_t min = 0, max = -1;
    if (s.contains("minItems")) min = static_cast<int64_t>(s["minItems"].get<double>());
    if (s.contains("maxItems")) max = static_cast<int64_t>(s["maxItems"].get<double>());
    if (min > 10000 || max > 10000) Error(ptr, "maxItems", "count too large");
    // A false prefix item stops the array before it.
    int64_t limit = rest_allowed ? -1 : static_cast<int64_t>(prefix.size());
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (prefix[i].empty()) {
        limit = static_cast<int64_t>(i);
        prefix.resize(i);
        break;
      }
    }
    if (limit >= 0 && (max < 0 || max > limit)) max = limit;
    if (max >= 0 && min > max) Error(ptr, "minItems", "no array length satisfies the schema");
    const int64_t explicit_n = std::max<int64_t>(static_cast<int64_t>(prefix.size()), min);
    const int64_t n = max >= 0 ? std::min(explicit_n, max) : explicit_n;
    auto item_at = [&](int64_t j) {
      return j < static_cast<int64_t>(prefix.size()) ? prefix[j] : rest;
    };
    // Tail after position n.
    std::string tail;
    const std::string sep = "ws \",\" ws ";
    if (max < 0 || max > n) {
      const std::string reps = max < 0 ? "*" : "{0," + std::to_string(max - n) + "}";
      if (n == 0) {
        tail = NewRule("(" + rest + " (" + sep + rest + ")" +
                       (max < 0 ? "*" : "{0," + std::to_string(max - 1) + "}") + ")?");
      } else {
        tail = NewRule("(" + sep + rest + ")" + reps);
      }
    } else {
      tail = NewRule("\"\"");
    }
    std::string next = tail;
    for (int64_t j = n - 1; j >= 0; --j) {
      std::string body = (j > 0 ? sep : "") + item_at(j) + " " + next;
      if (j >= min) body += " | \"\"";
      next = NewRule(body);
    }
    return NewRule("\"[\" ws " + next + " ws \"]\"");
  }

  // Key content (between the quotes) not equal to any of `keys` (encoded forms without '\').
  std::string OtherKey(const std::vector<std::string>& keys) {
    struct TrieNode {
      std::map<uint32_t, int> next;
      bool terminal = false;
    };
    std::vector<TrieNode> trie(1);
    for (const auto& k : keys) {
      if (k.find('\\') != std::string::npos) continue;
      int cur = 0;
      for (size_t i = 0; i < k.size();) {
        const unsigned char c = static_cast<unsigned char>(k[i]);
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        uint32_t v = len == 1 ? c : len == 2 ? (c & 31) : len == 3 ? (c & 15) : (c & 7);
        for (int j = 1; j < len && i + j < k.size(); ++j)
          v = (v << 6) | (static_cast<unsigned char>(k[i + j]) & 63);
        i += len;
        auto it = trie[cur].next.find(v);
        if (it == trie[cur].next.end()) {
          trie[cur].next[v] = static_cast<int>(trie.size());
          cur = static_cast<int>(trie.size());
          trie.emplace_back();
        } else {
          cur = it->second;
        }
      }
      trie[cur].terminal = true;
    }
    const std::string raw = "[^\"\\\\\\x00-\\x1F]";
    std::function<std::string(int)> emit = [&](int node) -> std::string {
      const TrieNode& t = trie[node];
      CodepointRanges taken;
      for (auto& [cp, child] : t.next) taken.push_back({cp, cp});
      CodepointRanges free_set = ComplementRanges(NormalizeRanges(taken));
      CodepointRanges restricted;
      for (auto [lo, hi] : free_set) {
        const std::pair<uint32_t, uint32_t> keep[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}};
        for (auto [a, b] : keep) {
          const uint32_t l = std::max(lo, a), h = std::min(hi, b);
          if (l <= h) restricted.push_back({l, h});
        }
      }
      std::vector<std::string> alts;
      if (!restricted.empty()) {
        std::string cls = "[";
        for (auto [lo, hi] : NormalizeRanges(restricted)) {
          cls += fmt::format("\\U{:08X}", lo);
          if (hi != lo) cls += fmt::format("-\\U{:08X}", hi);
        }
        cls += "]";
        alts.push_back(cls + " " + raw + "*");
      }
      for (auto& [cp, child] : t.next) {
        std::string lit;
        AppendUtf8(cp, &lit);
        alts.push_back(GbnfLiteral(lit) + " " + emit(child));
      }
      if (!t.terminal) alts.push_back("\"\"");
      std::string body;
      for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
      return NewRule(body);
    };
    return emit(0);
  }

  // Objects with few declared properties take them in any order: one rule per set of properties
  // already written (2^n of them), each property at most once, the end only once every required one
  // is there; other keys may come anywhere.
  static constexpr size_t kMaxFreeOrder = 6;
  struct KeyValue {
    std::string rule;  // `"key" ws ":" ws value`
    bool required;
  };
  template <class P>
  std::vector<KeyValue> props_kv(const std::vector<P>& props) {
    std::vector<KeyValue> out;
    for (const auto& p : props) {
      out.push_back({NewRule(GbnfLiteral(p.key) + " ws \":\" ws " + p.value_rule), p.required});
    }
    return out;
  }
  std::string FreeOrderObject(const std::vector<KeyValue>& kvs, const std::string& extra_kv) {
    const size_t n = kvs.size();
    const uint32_t full = (1u << n) - 1;
    uint32_t required = 0;
    for (size_t i = 0; i < n; ++i)
      if (kvs[i].required) required |= 1u << i;
    const std::string base = "o" + std::to_string(n_++) + "x";
    auto name = [&](uint32_t m, bool first) {
      return base + std::to_string(m) + (first ? "f" : "r");
    };
    for (uint32_t m = 0; m <= full; ++m) {
      for (bool first : {true, false}) {
        const std::string sep = first ? "" : "ws \",\" ws ";
        std::string body;
        auto alt = [&](const std::string& a) { body += (body.empty() ? "" : " | ") + a; };
        for (size_t i = 0; i < n; ++i) {
          if (m & (1u << i)) continue;
          alt(sep + kvs[i].rule + " " + name(m | (1u << i), false));
        }
        if (!extra_kv.empty()) alt(sep + extra_kv + " " + name(m, false));
        if ((m & required) == required) alt("\"\"");
        if (body.empty()) body = "\"\"";  // unreachable: m == full always satisfies required
        rules_ += name(m, first) + " ::= " + body + "\n";
      }
    }
    return NewRule("\"{\" ws " + name(0, true) + " ws \"}\"");
  }

  // Does the JSON-encoded key content match the pattern expression `g` (a kJsonString regex)?
  static bool KeyMatches(const std::string& g, const std::string& key) {
    auto grammar = Grammar::FromGbnf("root ::= " + g + "\nws ::= \"\"\n" + kBaseRules);
    if (!grammar.ok()) return true;  // be conservative
    static const auto bytes = [] {
      std::vector<std::string> t;
      for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
      return *TokenTrie::FromTokens(t);
    }();
    Matcher m(*grammar, bytes);
    return m.AcceptBytes(key) && m.CanEnd();
  }

  std::string CompileObject(const Json& s, const std::string& ptr) {
    for (const char* k : {"minProperties", "maxProperties"}) {
      if (s.contains(k)) {
        std::set<Json> distinct;
        if (s.contains("required") && s["required"].is_array())
          distinct.insert(s["required"].begin(), s["required"].end());
        const int64_t req = static_cast<int64_t>(distinct.size());
        // maxProperties holds by construction when only the declared properties can appear and
        // there are no more of them than the maximum.
        if (std::string(k) == "maxProperties" && s[k].is_number() &&
            s.contains("additionalProperties") && s["additionalProperties"] == false &&
            !s.contains("patternProperties")) {
          const size_t declared =
              s.contains("properties") && s["properties"].is_object() ? s["properties"].size() : 0;
          if (static_cast<double>(declared) <= s[k].get<double>()) continue;
        }
        if (std::string(k) == "minProperties" && s[k].is_number() &&
            s[k].get<double>() <= static_cast<double>(req)) {
          continue;
        }
        if (std::string(k) == "minProperties" && s[k].is_number() && s[k].get<double>() <= 0)
          continue;
        Error(ptr, k, "not supported");
      }
    }
    struct Prop {
      std::string key;  // json.dumps-encoded, with quotes
      std::string value_rule;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    std::vector<std::string> required_order;
    if (s.contains("required")) {
      for (const auto& r : s["required"]) {
        if (r.is_string() && required.insert(r.get<std::string>()).second)
          required_order.push_back(r.get<std::string>());
      }
    }
    std::vector<std::string> known;  // encoded keys without quotes
    std::set<std::string> seen;
    Json additional = s.contains("additionalProperties") ? s["additionalProperties"] : Json(true);
    auto encode = [](const std::string& k) {
      std::string e;
      Json(k).AppendPython(&e);
      return e;
    };
    if (s.contains("properties")) {
      const Json& ps = s["properties"];
      if (!ps.is_object()) Error(ptr, "properties", "must be an object");
      for (auto it = ps.begin(); it != ps.end(); ++it) {
        const std::string e = encode(it.key());
        known.push_back(e.substr(1, e.size() - 2));
        seen.insert(it.key());
        const bool req = required.count(it.key()) > 0;
        if (it.value().is_boolean() && !it.value().get<bool>()) {
          if (req)
            Error(ptr + "/properties/" + PointerEscape(it.key()), "required",
                  "required property with a false schema");
          continue;
        }
        const std::string prop_ptr = ptr + "/properties/" + PointerEscape(it.key());
        const std::string rule =
            req ? Compile(it.value(), prop_ptr) : CompileOrNever(it.value(), prop_ptr);
        if (rule.empty()) continue;  // an optional property that no value satisfies cannot appear
        props.push_back({e, rule, req});
      }
    }
    const bool extra_allowed = !(additional.is_boolean() && !additional.get<bool>());
    for (const auto& r : required_order) {
      if (seen.count(r)) continue;
      if (!extra_allowed) Error(ptr, "required", "'" + r + "' is required but not allowed");
      const std::string e = encode(r);
      known.push_back(e.substr(1, e.size() - 2));
      props.push_back({e, Compile(additional, ptr + "/additionalProperties"), true});
    }
    std::string tail_rest = NewRule("\"\"");
    std::string tail_first = tail_rest;
    std::string extra_kv;  // one other key and its value, when other keys may appear
    if (s.contains("patternProperties") && s["patternProperties"].is_object() &&
        !s["patternProperties"].empty()) {
      // Other keys must match a pattern (keys matching none are not produced: a sound restriction).
      const Json& pp = s["patternProperties"];
      const Json& schema0 = pp.begin().value();
      std::string keys;
      for (auto it = pp.begin(); it != pp.end(); ++it) {
        if (it.value() != schema0)
          Error(ptr, "patternProperties", "patterns with different schemas");
        std::string g;
        Status st = RegexToGbnf(it.key(), RegexMode::kJsonString, &g);
        if (!st.ok()) Error(ptr, "patternProperties", st.message());
        for (const auto& k : known) {
          if (k.find('\\') != std::string::npos)
            Error(ptr, "patternProperties", "declared property with an escape");
          if (KeyMatches(g, k))
            Error(ptr, "patternProperties", "declared property '" + k + "' matches a pattern");
        }
        keys += (keys.empty() ? "" : " | ") + g;
      }
      const std::string value = Compile(schema0, ptr + "/patternProperties");
      const std::string kv = NewRule("\"\\\"\" (" + keys + ") \"\\\"\" ws \":\" ws " + value);
      extra_kv = kv;
      tail_rest = NewRule("(ws \",\" ws " + kv + ")*");
      tail_first = NewRule("(" + kv + " " + tail_rest + ")?");
    } else if (extra_allowed) {
      const std::string value = Compile(additional, ptr + "/additionalProperties");
      const std::string key = OtherKey(known);
      const std::string kv = NewRule("\"\\\"\" " + key + " \"\\\"\" ws \":\" ws " + value);
      extra_kv = kv;
      tail_rest = NewRule("(ws \",\" ws " + kv + ")*");
      tail_first = NewRule("(" + kv + " " + tail_rest + ")?");
    }
    if (props.size() >= 2 && props.size() <= kMaxFreeOrder)
      return FreeOrderObject(props_kv(props), extra_kv);
    std::string rest = tail_rest, first = tail_first;
    for (int64_t i = static_cast<int64_t>(props.size()) - 1; i >= 0; --i) {
      const std::string kv =
          NewRule(GbnfLiteral(props[i].key) + " ws \":\" ws " + props[i].value_rule);
      std::string r = "ws \",\" ws " + kv + " " + rest;
      std::string f = kv + " " + rest;
      if (!props[i].required) {
        r += " | " + rest;
        f += " | " + first;
      }
      const std::string nr = NewRule(r), nf = NewRule(f);
      rest = nr;
      first = nf;
    }
    return NewRule("\"{\" ws " + first + " ws \"}\"");
  }

  const Json& root_;
  bool compact_;
  std::string rules_;
  std::map<std::string, std::string> ref_rules_;
  int n_ = 0;
  int depth_ = 0;
  int merge_depth_ = 0;
};

}  // namespace

StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_text,
                                       const JsonSchemaOptions& options) {
  QWENRT_ASSIGN_OR_RETURN(const Json root,
                          Json::Parse(schema_text, Json::Limits{kMaxSchemaDepth}, "schema"));
  SchemaCompiler c(root, options.compact);
  return c.Run();
}

}  // namespace qwenrt
