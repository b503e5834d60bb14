// JSON Schema compiler: `not` in its exact forms, and the disjointness check oneOf is compiled
// under (see json_schema_compiler.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/json_schema_validate.h"
#include "chat/constraint/regex_product.h"

namespace qwenrt::schema {

// The exact forms of `not`: not false (nothing excluded), not true / {} (nothing left),
// not {not: X} (X itself, merged like allOf), not {type: T} (T removed from the types; removing
// "integer" while "number" stays would leave non-integral numbers only, which is not compiled).
// Beside enum / const, any `not`: the values its schema rejects, decided one by one by the
// validator (json_schema_validate.h). Anything else stays an error naming `not`.
std::string SchemaCompiler::CompileNot(const Json& s, const std::string& ptr) {
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
  if (rest.contains("enum") || rest.contains("const")) {
    // Beside enum / const: the values `not`'s schema rejects, decided value by value.
    if (rest.contains("enum") && !rest["enum"].is_array()) Error(ptr, "enum", "must be an array");
    std::vector<Json> values;  // const ∩ enum
    if (rest.contains("const")) values.push_back(rest["const"]);
    if (rest.contains("enum")) {
      std::vector<Json> in_enum;
      for (const auto& v : rest["enum"]) {
        bool listed = !rest.contains("const");
        for (const auto& c : values) listed |= c == v;
        if (listed) in_enum.push_back(v);
      }
      values = std::move(in_enum);
    }
    Json kept = Json::array();
    for (const Json& v : values) {
      const Verdict r = Validate(root_, n, v);
      if (r == Verdict::kUnknown)
        Error(ptr, "not", "cannot decide whether " + v.dump() + " matches its schema");
      if (r == Verdict::kInvalid) kept.push_back(v);
    }
    if (kept.empty()) Error(ptr, "not", "excludes every enum/const value", true);
    rest.erase("const");
    rest["enum"] = kept;
    return Compile(rest, ptr);
  }
  if (rest.size() == 1 && rest.contains("type") && rest["type"] == "string" && n.is_object() &&
      n.size() == 1 && (n.contains("enum") || n.contains("const"))) {
    // A string other than the listed ones: the other-key automaton (strings written without
    // escapes, so no listed string slips through spelled otherwise).
    const Json list = n.contains("const") ? Json::array({n["const"]}) : n["enum"];
    if (!list.is_array()) Error(at, "enum", "must be an array");
    std::vector<std::string> excluded;
    for (const Json& v : list) {
      if (!v.is_string()) continue;  // not a string: excludes no string
      std::string e;
      v.AppendPython(&e);
      excluded.push_back(e.substr(1, e.size() - 2));
    }
    return NewRule("\"\\\"\" " + OtherKey(excluded) + " \"\\\"\"");
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
  Error(ptr, "not",
        "not supported (only not: false / true / {not: ...} / {type: ...}, or beside enum/const)");
}

// Both are object-only schemas and no object satisfies both: a property `a` requires is forbidden
// by `b`, or required by both with const/enum values that share nothing.
bool SchemaCompiler::ObjectsDisjoint(const Json& a, const Json& b) {
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
// No string meets both branches' string keywords (pattern, format, minLength, maxLength): their
// product automaton (regex_product.h) is empty. False where a branch says more of strings than
// those keywords, or the product is past small limits.
bool SchemaCompiler::StringsDisjoint(const Json& a, const Json& b) {
  std::vector<std::string> regexes;
  int64_t lo = 0, hi = -1;
  for (const Json* x : {&a, &b}) {
    if (!x->is_object()) return false;
    for (const char* k : {"not", "anyOf", "oneOf", "allOf", "$ref", "if", "enum", "const",
                          "$dynamicRef", "$recursiveRef"})
      if (x->contains(k)) return false;
    if (x->contains("pattern")) {
      const Json& p = (*x)["pattern"];
      for (const Json& r : p.is_array() ? p : Json::array({p})) {
        if (!r.is_string()) return false;
        regexes.push_back(r.get<std::string>());
      }
    }
    if (x->contains("format") && (*x)["format"].is_string()) {
      const std::string f = (*x)["format"].get<std::string>();
      const std::string re = FormatRegex(f);
      if (!re.empty())
        regexes.push_back(re);
      else if (KnownFormats().count(f))
        return false;
    }
    for (const char* k : {"minLength", "maxLength"}) {
      if (!x->contains(k)) continue;
      if (!(*x)[k].is_number_integer() || (*x)[k].get<int64_t>() < 0) return false;
      const int64_t v = (*x)[k].get<int64_t>();
      if (std::string(k) == "minLength")
        lo = std::max(lo, v);
      else
        hi = hi < 0 ? v : std::min(hi, v);
    }
  }
  if (hi >= 0 && hi < lo) return true;
  if (hi > 100000 || lo > 100000) return false;
  RegexProductLimits limits;
  limits.min_len = lo;
  limits.max_len = hi;
  limits.max_states = 4096;
  limits.max_transitions = 65536;
  std::string scratch, start;
  int n = 0;
  const Status st = RegexProductGbnf(
      regexes, limits, [&] { return fmt::format("t{}", n++); }, &scratch, &start);
  return st.ok() && start.empty();
}

void SchemaCompiler::CheckDisjoint(const std::vector<Json>& branches, const std::string& ptr) {
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
        if (!b.count(t) || (t == "string" && StringsDisjoint(branches[i], branches[j]))) continue;
        Error(ptr, "oneOf", "branches may overlap (both allow " + t + ")");
      }
    }
  }
}

namespace {

// *m as an object with the keys of k in `mask` required and the others forbidden; false when its
// required/properties are not a list/an object.
bool WithPresence(const std::vector<std::string>& k, uint32_t mask, Json* m) {
  (*m)["type"] = "object";
  if (!m->contains("required")) (*m)["required"] = Json::array();
  if (!m->contains("properties")) (*m)["properties"] = Json::object();
  if (!(*m)["required"].is_array() || !(*m)["properties"].is_object()) return false;
  for (size_t i = 0; i < k.size(); ++i) {
    if (mask >> i & 1) {
      bool have = false;
      for (const auto& r : (*m)["required"]) have |= r == k[i];
      if (!have) (*m)["required"].push_back(k[i]);
    } else {
      (*m)["properties"][k[i]] = false;
    }
  }
  return true;
}

}  // namespace

// oneOf of object branches that each require keys and whose values may overlap: each presence
// pattern P of the required keys (K, at most kMaxKeys) under which exactly one branch's list is
// all present becomes that branch with P required and K \ P forbidden. A sound restriction: every
// object it accepts meets that branch and misses a required key of every other, so exactly one
// holds; an object with several branches' lists present whose values fail all but one of them is
// refused (it is valid). Applies where only objects are meant (type object on the siblings or on
// every branch) and no branch's list contains another's.
bool SchemaCompiler::OneOfByRequired(const Json& siblings, const Json& branches,
                                     const std::string& ptr, std::vector<Json>* out) {
  constexpr size_t kMaxKeys = 8, kMaxBranches = 32;
  if (branches.size() < 2) return false;
  const bool sibling_object = siblings.contains("type") && siblings["type"] == "object";
  std::vector<std::set<std::string>> lists;
  std::set<std::string> keys;
  for (const auto& b : branches) {
    if (!b.is_object() || !b.contains("required") || !b["required"].is_array() ||
        b["required"].empty())
      return false;
    if (!sibling_object && !(b.contains("type") && b["type"] == "object")) return false;
    std::set<std::string> list;
    for (const auto& k : b["required"]) {
      if (!k.is_string()) return false;
      list.insert(k.get<std::string>());
    }
    keys.insert(list.begin(), list.end());
    lists.push_back(std::move(list));
  }
  if (keys.size() > kMaxKeys) return false;
  // A list inside another: every object with the larger one meets both, so that branch could never
  // be written (the values decide there, not the keys): not rewritten.
  for (size_t i = 0; i < lists.size(); ++i)
    for (size_t j = 0; j < lists.size(); ++j)
      if (i != j &&
          std::includes(lists[j].begin(), lists[j].end(), lists[i].begin(), lists[i].end()))
        return false;
  const std::vector<std::string> k(keys.begin(), keys.end());
  std::vector<Json> result;
  for (uint32_t mask = 0; mask < (1u << k.size()); ++mask) {
    int only = -1, n = 0;
    for (size_t i = 0; i < lists.size(); ++i) {
      bool all = true;
      for (size_t j = 0; j < k.size(); ++j)
        if (!(mask >> j & 1) && lists[i].count(k[j])) all = false;
      if (all) {
        only = static_cast<int>(i);
        ++n;
      }
    }
    if (n != 1) continue;
    Json m = siblings;
    if (!MergeOrNever(&m, branches[only], ptr + "/oneOf/" + std::to_string(only))) continue;
    if (!WithPresence(k, mask, &m)) return false;
    result.push_back(std::move(m));
    if (result.size() > kMaxBranches) return false;
  }
  if (result.empty()) Error(ptr, "oneOf", "no object satisfies exactly one branch", true);
  *out = std::move(result);
  return true;
}

namespace {

// A schema that speaks only of which keys an object has: `required` lists under `not`, `anyOf`,
// `allOf` and `oneOf` (annotations aside). Collects the keys it names; false for anything else.
bool PresenceFormula(const Json& b, int depth, std::set<std::string>* keys) {
  if (!b.is_object() || b.empty() || depth > 8) return false;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& kw = it.key();
    const Json& v = it.value();
    if (IsAnnotation(kw)) continue;
    if (kw == "required") {
      if (!v.is_array()) return false;
      for (const auto& k : v) {
        if (!k.is_string()) return false;
        keys->insert(k.get<std::string>());
      }
    } else if (kw == "not") {
      if (!PresenceFormula(v, depth + 1, keys)) return false;
    } else if (kw == "anyOf" || kw == "allOf" || kw == "oneOf") {
      if (!v.is_array() || v.empty()) return false;
      for (const auto& x : v)
        if (!PresenceFormula(x, depth + 1, keys)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// The formula's value for an object whose present keys (of k) are the bits of `mask`; for a
// non-object (object = false) every `required` holds.
bool Holds(const Json& b, const std::vector<std::string>& k, uint32_t mask, bool object) {
  bool all = true;
  for (auto it = b.begin(); it != b.end() && all; ++it) {
    const std::string& kw = it.key();
    const Json& v = it.value();
    if (kw == "required" && object) {
      for (const auto& r : v) {
        const std::string key = r.get<std::string>();
        for (size_t i = 0; i < k.size(); ++i)
          if (k[i] == key) all = all && (mask >> i & 1);
      }
    } else if (kw == "not") {
      all = !Holds(v, k, mask, object);
    } else if (kw == "anyOf" || kw == "allOf" || kw == "oneOf") {
      int n = 0;
      for (const auto& x : v) n += Holds(x, k, mask, object);
      all = kw == "anyOf" ? n > 0 : kw == "allOf" ? n == static_cast<int>(v.size()) : n == 1;
    }
  }
  return all;
}

}  // namespace

// oneOf whose branches only speak of which keys are present (PresenceFormula: `required` lists,
// maybe under not/anyOf/allOf/oneOf, two or more branches): over the keys they name (K), each
// presence pattern P ⊆ K that satisfies exactly one branch becomes a branch of its own — the
// siblings, an object, P required, K \ P forbidden — so the branches are disjoint by construction
// and compile like anyOf. A non-object makes every `required` hold; when that satisfies exactly
// one branch, non-objects are valid too and the rewrite (objects only) applies only where the
// siblings allow objects alone. More than kMaxPresenceKeys keys: not rewritten (the disjointness
// check then refuses it).
bool SchemaCompiler::OneOfByPresence(const Json& siblings, const Json& branches,
                                     const std::string& ptr, std::vector<Json>* out) {
  constexpr size_t kMaxPresenceKeys = 8;
  if (branches.size() < 2 || siblings.contains("anyOf")) return false;
  std::set<std::string> keys;
  for (const auto& b : branches)
    if (!PresenceFormula(b, 0, &keys)) return false;
  if (keys.size() > kMaxPresenceKeys) return false;
  const std::vector<std::string> k(keys.begin(), keys.end());
  auto satisfied = [&](uint32_t mask, bool object) {
    int n = 0;
    for (const auto& b : branches) n += Holds(b, k, mask, object);
    return n;
  };
  bool object = true, only_object = false;
  if (siblings.contains("type")) {
    const Json& t = siblings["type"];
    object = t == "object";
    only_object = object;
    if (t.is_array())
      for (const auto& x : t) object |= x == "object";
  }
  if (satisfied(0, false) == 1 && !only_object) return false;
  if (!object) Error(ptr, "oneOf", "every branch speaks of objects only", true);
  // Patterns the siblings rule out: one without a key they require, one with a key they forbid.
  const bool closed = siblings.contains("additionalProperties") &&
                      siblings["additionalProperties"] == false &&
                      !siblings.contains("patternProperties");
  uint32_t must = 0, never = 0;  // bits of k
  for (size_t i = 0; i < k.size(); ++i) {
    if (siblings.contains("required") && siblings["required"].is_array())
      for (const auto& r : siblings["required"])
        if (r == k[i]) must |= 1u << i;
    const Json* p = siblings.contains("properties") && siblings["properties"].is_object() &&
                            siblings["properties"].contains(k[i])
                        ? &siblings["properties"][k[i]]
                        : nullptr;
    if ((p != nullptr && *p == false) || (p == nullptr && closed)) never |= 1u << i;
  }
  auto possible = [&](uint32_t mask) { return (mask & must) == must && (mask & never) == 0; };
  for (uint32_t mask = 0; mask < (1u << k.size()); ++mask) {
    if (!possible(mask) || satisfied(mask, true) != 1) continue;
    Json m = siblings;
    if (!WithPresence(k, mask, &m)) return false;
    out->push_back(std::move(m));
  }
  if (out->empty()) Error(ptr, "oneOf", "no object satisfies exactly one branch", true);
  return true;
}

}  // namespace qwenrt::schema
