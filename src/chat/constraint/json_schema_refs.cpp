// JSON Schema compiler: $ref resolution (local JSON pointers, percent-decoded) and the allOf-style
// merge of subschemas (see json_schema_compiler.h).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "chat/constraint/json_schema_compiler.h"

namespace qwenrt::schema {

const Json* ResolveLocalRef(const Json& root, const std::string& ref, std::string* decoded,
                            std::string* why) {
  if (ref.empty() || ref[0] != '#') {
    *why = "only local references (#...) are supported: " + ref;
    return nullptr;
  }
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
  if (!dec.empty() && dec[0] != '/') {
    *why = "anchors are not supported: " + ref;
    return nullptr;
  }
  const Json* cur = &root;
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
    } else if (cur->is_array() && !key.empty() && key.size() < 10 &&
               key.find_first_not_of("0123456789") == std::string::npos &&
               std::stoul(key) < cur->size()) {
      cur = &(*cur)[std::stoul(key)];
    } else {
      *why = "unresolved reference " + ref;
      return nullptr;
    }
    i = j + 1;
  }
  *decoded = dec;
  return cur;
}

const Json& SchemaCompiler::Resolve(const std::string& ref, const std::string& ptr,
                                    std::string* target) {
  std::string why;
  const Json* t = ResolveLocalRef(root_, ref, target, &why);
  if (t == nullptr) Error(ptr, "$ref", why);
  return *t;
}

// allOf-style merge of b into a; conflicts are errors.
void SchemaCompiler::Merge(Json* a, const Json& b_in, const std::string& ptr) {
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
      for (auto it = x["properties"].begin(); it != x["properties"].end(); ++it) k.insert(it.key());
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
    if (IsAnnotation(k)) continue;
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
    } else if ((k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems") &&
               it.value().is_number() && (*a)[k].is_number()) {
      if (it.value().get<double>() > (*a)[k].get<double>()) (*a)[k] = it.value();
    } else if ((k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems") &&
               it.value().is_number() && (*a)[k].is_number()) {
      if (it.value().get<double>() < (*a)[k].get<double>()) (*a)[k] = it.value();
    } else if (k == "pattern" && it.value().is_string()) {
      // Both patterns hold: a list, which only a merge writes (a schema's own `pattern` must be
      // a string), compiled as one product automaton.
      Json list = (*a)[k].is_array() ? (*a)[k] : Json::array({(*a)[k]});
      bool have = false;
      for (const auto& x : list) have |= x == it.value();
      if (!have) list.push_back(it.value());
      (*a)[k] = list;
    } else if (k == "anyOf" && it.value().is_array() && (*a)[k].is_array() &&
               (*a)[k].size() * it.value().size() <= 64) {
      // (A1 or A2) and (B1 or B2): (A1 and B1) or (A1 and B2) or ... — each pair an allOf, merged
      // when its branch compiles (a pair that cannot hold drops out of the anyOf there).
      Json product = Json::array();
      for (const auto& x : (*a)[k])
        for (const auto& y : it.value())
          product.push_back(Json::object({{"allOf", Json::array({x, y})}}));
      (*a)[k] = product;
    } else if (k == "not") {
      // not A and not B: not (A or B).
      (*a)[k] = Json::object({{"anyOf", Json::array({(*a)[k], it.value()})}});
    } else {
      Error(ptr, "allOf", "conflicting '" + k + "'");
    }
  }
}

}  // namespace qwenrt::schema
