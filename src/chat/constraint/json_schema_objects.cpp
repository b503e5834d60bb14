// JSON Schema compiler: objects, their properties (in order, or in any order when few), required,
// additionalProperties and patternProperties (see json_schema_compiler.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/regex_gbnf.h"
#include "chat/constraint/token_trie.h"
#include "chat/constraint/utf8_ranges.h"

namespace qwenrt::schema {

// Key content (between the quotes) not equal to any of `keys` (encoded forms without '\').
std::string SchemaCompiler::OtherKey(const std::vector<std::string>& keys) {
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

template <class P>
std::vector<SchemaCompiler::KeyValue> SchemaCompiler::props_kv(const std::vector<P>& props) {
  std::vector<KeyValue> out;
  for (const auto& p : props) {
    out.push_back({NewRule(GbnfLiteral(p.key) + " ws \":\" ws " + p.value_rule), p.required});
  }
  return out;
}

// The properties in any order: one state per set m of declared properties written and count e of
// other keys written (capped where the count bounds stop caring: at maxProperties when there is
// one, else at minProperties), so that required, counted and dependent properties are all checked
// by construction.
std::string SchemaCompiler::FreeOrderObject(const std::vector<KeyValue>& kvs,
                                            const std::string& extra_kv, const ObjectLimits& limits,
                                            const std::string& ptr) {
  const size_t n = kvs.size();
  const uint32_t full = (1u << n) - 1;
  uint32_t required = 0;
  for (size_t i = 0; i < n; ++i)
    if (kvs[i].required) required |= 1u << i;
  const bool bounded = limits.max_count < INT64_MAX;
  const int64_t cap = extra_kv.empty() ? 0
                      : bounded        ? std::min(limits.max_count, kMaxCountedProperties)
                                       : std::min(limits.min_count, kMaxCountedProperties);
  auto count = [](uint32_t m, int64_t e) {
    return static_cast<int64_t>(__builtin_popcount(m)) + e;
  };
  auto can_end = [&](uint32_t m, int64_t e) {
    bool ok = (m & required) == required && count(m, e) >= limits.min_count &&
              count(m, e) <= limits.max_count;
    for (auto [trigger, need] : limits.implied) ok &= !(m & trigger) || (m & need) == need;
    return ok;
  };
  // Another key moves e up (saturating without a maximum; never past it with one).
  auto more = [&](int64_t e) { return bounded ? e + 1 : std::min(e + 1, cap); };
  auto id = [&](uint32_t m, int64_t e) { return static_cast<size_t>(m) * (cap + 1) + e; };
  // A state is live when some state reachable from it (supersets, more other keys) can end: the
  // grammar never enters one from which the object cannot be closed.
  std::vector<bool> live((full + 1) * static_cast<size_t>(cap + 1), false);
  for (uint32_t m = full + 1; m-- > 0;) {
    for (int64_t e = cap; e >= 0; --e) {
      bool l = can_end(m, e);
      for (size_t i = 0; i < n && !l; ++i)
        if (!(m & (1u << i))) l = live[id(m | (1u << i), e)];
      if (!l && !extra_kv.empty() && more(e) <= cap && more(e) != e &&
          (!bounded || count(m, e) < limits.max_count))
        l = live[id(m, more(e))];
      live[id(m, e)] = l;
    }
  }
  if (!live[id(0, 0)])
    Error(ptr, "minProperties", "no set of the properties satisfies the object", true);
  const std::string base = "o" + std::to_string(n_++) + "x";
  auto name = [&](uint32_t m, int64_t e, bool first) {
    return base + std::to_string(m) + (cap ? "e" + std::to_string(e) : "") + (first ? "f" : "r");
  };
  for (uint32_t m = 0; m <= full; ++m) {
    for (int64_t e = 0; e <= cap; ++e) {
      if (!live[id(m, e)]) continue;
      for (bool first : {true, false}) {
        const std::string sep = first ? "" : "ws \",\" ws ";
        std::string body;
        auto alt = [&](const std::string& a) { body += (body.empty() ? "" : " | ") + a; };
        for (size_t i = 0; i < n; ++i) {
          if ((m & (1u << i)) || !live[id(m | (1u << i), e)]) continue;
          alt(sep + kvs[i].rule + " " + name(m | (1u << i), e, false));
        }
        if (!extra_kv.empty() && (!bounded || count(m, e) < limits.max_count) &&
            (more(e) > cap ? false : live[id(m, more(e))]))
          alt(sep + extra_kv + " " + name(m, more(e), false));
        if (can_end(m, e)) alt("\"\"");
        if (body.empty()) body = "\"\"";  // unreachable: a live state can end or grow
        rules_ += name(m, e, first) + " ::= " + body + "\n";
      }
    }
  }
  return NewRule("\"{\" ws " + name(0, 0, true) + " ws \"}\"");
}

// More declared properties than the any-order object takes, with property dependencies: the
// properties in schema order (the sound restriction of every ordered object), one state per
// position and set of dependency properties written. A trigger is written only after its needs
// that come before it; a need that comes after a written trigger cannot be skipped. States from
// which the object cannot end are never entered.
std::string SchemaCompiler::OrderedObject(const std::vector<KeyValue>& kvs,
                                          const std::string& tail_first,
                                          const std::string& tail_rest,
                                          const std::vector<std::pair<uint32_t, uint32_t>>& implied,
                                          const std::string& ptr) {
  const size_t n = kvs.size();
  uint32_t tracked = 0;  // the properties dependencies speak of
  for (auto [trigger, need] : implied) tracked |= trigger | need;
  if (__builtin_popcount(tracked) > 12)
    Error(ptr, "dependencies", "more than 12 properties involved in dependencies");
  std::map<std::tuple<size_t, uint32_t, bool>, std::string> memo;  // "" once known dead
  std::function<std::string(size_t, uint32_t, bool)> state = [&](size_t i, uint32_t w, bool first) {
    if (i == n) return first ? tail_first : tail_rest;
    const auto key = std::make_tuple(i, w, first);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    const uint32_t bit = i < 32 ? 1u << i : 0;
    std::string body;
    bool can_write = true, can_skip = !kvs[i].required;
    for (auto [trigger, need] : implied) {
      if (trigger == bit && (need & (bit - 1) & ~w) != 0) can_write = false;  // a need was skipped
      if ((w & trigger) && (need & bit)) can_skip = false;  // a written trigger needs this one
    }
    if (can_write) {
      const std::string next = state(i + 1, w | (bit & tracked), false);
      if (!next.empty()) body = (first ? "" : "ws \",\" ws ") + kvs[i].rule + " " + next;
    }
    if (can_skip) {
      const std::string next = state(i + 1, w, first);
      if (!next.empty()) body += (body.empty() ? "" : " | ") + next;
    }
    std::string name = body.empty() ? "" : NewRule(body);
    memo[key] = name;
    return name;
  };
  const std::string start = state(0, 0, true);
  if (start.empty())
    Error(ptr, "dependencies", "no set of the properties satisfies the dependencies", true);
  return NewRule("\"{\" ws " + start + " ws \"}\"");
}

Matcher::Limits ShortTextLimits() {
  Matcher::Limits limits;
  limits.max_nodes = 1 << 18;
  limits.max_sets = 1 << 12;
  limits.mask_cache_bytes = 0;
  return limits;
}

const std::shared_ptr<const TokenTrie>& SingleByteTrie() {
  static const std::shared_ptr<const TokenTrie> bytes = [] {
    std::vector<std::string> t;
    for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
    return *TokenTrie::FromTokens(std::move(t));
  }();
  return bytes;
}

// Does the JSON-encoded key content match the pattern expression `g` (a kJsonString regex)?
bool SchemaCompiler::KeyMatches(const std::string& g, const std::string& key) {
  auto grammar = Grammar::FromGbnf("root ::= " + g + "\nws ::= \"\"\n" + kBaseRules);
  if (!grammar.ok()) return true;  // be conservative
  Matcher m(*grammar, SingleByteTrie());
  return m.AcceptBytes(key) && m.CanEnd();
}

std::string SchemaCompiler::CompileObject(const Json& s, const std::string& ptr) {
  // Only other keys (nothing declared, required or patterned): a count of them is a repetition.
  auto names_none = [&](const char* k) {
    return !s.contains(k) || (s[k].is_object() && s[k].empty()) ||
           (s[k].is_array() && s[k].empty());
  };
  const bool only_other_keys =
      names_none("properties") && names_none("required") && names_none("patternProperties") &&
      !(s.contains("additionalProperties") && s["additionalProperties"] == false);
  auto count_bound = [&](const char* k) -> std::optional<int64_t> {
    if (!s.contains(k)) return std::nullopt;
    if (!s[k].is_number_integer() || s[k].get<int64_t>() < 0)
      Error(ptr, k, "must be a non-negative integer");
    if (s[k].get<int64_t>() > kMaxCountedProperties)
      Error(ptr, k, "above " + std::to_string(kMaxCountedProperties) + " is not supported");
    return s[k].get<int64_t>();
  };
  std::optional<int64_t> min_other, max_other;
  if (only_other_keys) {
    min_other = count_bound("minProperties");
    max_other = count_bound("maxProperties");
    if (min_other && max_other && *min_other > *max_other)
      Error(ptr, "minProperties", "above maxProperties", true);
  }
  // Only the declared properties may appear: their count is the set the any-order object tracks.
  const bool closed = s.contains("additionalProperties") && s["additionalProperties"] == false &&
                      names_none("patternProperties");
  ObjectLimits limits;
  const char* open_counted = nullptr;  // the keyword that made an open object counted
  if (closed && !only_other_keys) {
    limits.min_count = count_bound("minProperties").value_or(0);
    limits.max_count = count_bound("maxProperties").value_or(INT64_MAX);
  }
  for (const char* k : {"minProperties", "maxProperties"}) {
    if (s.contains(k) && !only_other_keys && !closed) {
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
      // Declared properties beside other keys: the any-order object counts both.
      limits.min_count = count_bound("minProperties").value_or(0);
      limits.max_count = count_bound("maxProperties").value_or(INT64_MAX);
      open_counted = k;
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
  // Property dependencies (draft 4-7 `dependencies` with lists, 2019+ `dependentRequired`):
  // trigger -> the keys its presence requires. A required trigger makes its list required (to a
  // fixed point); an undeclared trigger is kept out of the other keys (a sound restriction: it
  // never appears); a declared optional one is tracked by the any-order object (FreeOrderObject),
  // or refused where the properties come in a fixed order.
  std::map<std::string, std::vector<std::string>> depends;
  for (const char* k : {"dependencies", "dependentRequired"}) {
    if (!s.contains(k)) continue;
    if (!s[k].is_object()) Error(ptr, k, "must be an object");
    for (auto it = s[k].begin(); it != s[k].end(); ++it) {
      if (!it.value().is_array()) Error(ptr, k, "schema dependencies are not supported");
      for (const auto& d : it.value()) {
        if (!d.is_string()) Error(ptr, k, "must list property names");
        depends[it.key()].push_back(d.get<std::string>());
      }
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [trigger, keys] : depends) {
      if (!required.count(trigger)) continue;
      for (const auto& d : keys) {
        if (required.insert(d).second) {
          required_order.push_back(d);
          grew = true;
        }
      }
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
  // The optional triggers whose lists are not all required: as bits over `props` (any order).
  for (const auto& [trigger, keys] : depends) {
    if (required.count(trigger)) continue;
    bool pending = false;
    for (const auto& d : keys) pending |= !required.count(d);
    if (!pending) continue;
    const std::string e = encode(trigger);
    auto index_of = [&](const std::string& enc) -> int {
      for (size_t i = 0; i < props.size(); ++i)
        if (props[i].key == enc) return static_cast<int>(i);
      return -1;
    };
    const int t = index_of(e);
    if (t >= 32) Error(ptr, "dependencies", "a trigger past the 32nd property");
    if (t < 0) {
      if (!seen.count(trigger) && s.contains("patternProperties"))
        Error(ptr, "dependencies", "a trigger that patternProperties may match");
      known.push_back(e.substr(1, e.size() - 2));  // never written as another key
      continue;
    }
    uint32_t need = 0;
    for (const auto& d : keys) {
      const int i = index_of(encode(d));
      if (i < 0) Error(ptr, "dependencies", "'" + d + "' is not a declared property");
      if (i >= 32) Error(ptr, "dependencies", "a dependency past the 32nd property");
      need |= 1u << i;
    }
    limits.implied.emplace_back(1u << t, need);
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
      if (it.value() != schema0) Error(ptr, "patternProperties", "patterns with different schemas");
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
    if (min_other || max_other) {
      // n other keys, lo <= n <= hi (a key written twice counts twice: JSON leaves duplicates
      // undefined, and the grammar never needs them).
      const int64_t lo = min_other.value_or(0);
      const std::string more = "(ws \",\" ws " + kv + ")";
      const std::string hi_more =
          max_other ? std::to_string(std::max<int64_t>(*max_other - 1, 0)) : std::string();
      if (max_other && *max_other == 0) {
        tail_first = NewRule("\"\"");
      } else if (lo == 0) {
        tail_first = NewRule("(" + kv + " " + more + "{0," + hi_more + "})?");
      } else {
        tail_first = NewRule(kv + " " + more + "{" + std::to_string(lo - 1) + "," + hi_more + "}");
      }
    }
  }
  const bool counted = limits.min_count > 0 ||
                       limits.max_count < static_cast<int64_t>(props.size()) ||
                       (limits.max_count < INT64_MAX && !extra_kv.empty());
  if (!counted && !limits.implied.empty() && props.size() > kMaxFreeOrder)
    return OrderedObject(props_kv(props), tail_first, tail_rest, limits.implied, ptr);
  if ((counted || !limits.implied.empty()) && props.size() > kMaxFreeOrder)
    Error(ptr,
          open_counted ? open_counted
          : counted    ? "minProperties"
                       : "dependencies",
          "needs the properties in any order, which is only compiled for up to " +
              std::to_string(kMaxFreeOrder));
  if ((props.size() >= 2 && props.size() <= kMaxFreeOrder) || counted || !limits.implied.empty())
    return FreeOrderObject(props_kv(props), extra_kv, limits, ptr);
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

}  // namespace qwenrt::schema
