// The three-valued validator of one value (see json_schema_validate.h).
#include "chat/constraint/json_schema_validate.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chat/constraint/grammar.h"
#include "chat/constraint/json_schema_compiler.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/regex_gbnf.h"

namespace qwenrt::schema {
namespace {

constexpr Verdict kValid = Verdict::kValid;
constexpr Verdict kInvalid = Verdict::kInvalid;
constexpr Verdict kUnknown = Verdict::kUnknown;

Verdict Of(bool valid) { return valid ? kValid : kInvalid; }
Verdict Not(Verdict v) { return v == kUnknown ? kUnknown : Of(v == kInvalid); }

// Conjunction: one invalid part decides it whatever the unknown ones say.
struct All {
  Verdict v = kValid;
  void Add(Verdict x) {
    if (x == kInvalid || v == kInvalid)
      v = kInvalid;
    else if (x == kUnknown)
      v = kUnknown;
  }
  bool decided_invalid() const { return v == kInvalid; }
};

// Numbers are compared as doubles; integers beyond 2^53 are not exactly doubles.
bool ExactDouble(const Json& v) {
  constexpr double k2p53 = 9007199254740992.0;
  if (v.is_number_unsigned()) return static_cast<double>(v.get<uint64_t>()) <= k2p53;
  if (v.is_number_integer()) return std::fabs(static_cast<double>(v.get<int64_t>())) <= k2p53;
  return std::isfinite(v.get<double>());
}

bool IsInteger(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

// A number as the decimal its shortest text spells, mantissa x 10^-scale with |mantissa| < 10^18:
// JSON Schema's multipleOf is arithmetic on the numbers the document wrote (0.0075 is a multiple
// of 0.0001), which binary doubles cannot do. False when it does not fit.
bool Decimal(const Json& v, int64_t* mantissa, int* scale) {
  const std::string t = v.dump();
  int64_t m = 0;
  int sc = 0, digits = 0, exp = 0;
  bool neg = false, frac = false;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') neg = true, ++i;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      frac = true;
      continue;
    }
    if (t[i] < '0' || t[i] > '9') return false;
    if (m == 0 && t[i] == '0') {
      if (frac) ++sc;
      continue;
    }
    if (++digits > 17) return false;
    m = m * 10 + (t[i] - '0');
    if (frac) ++sc;
  }
  if (i < t.size()) {
    const std::string e = t.substr(i + 1);
    if (e.empty() || e.size() > 4) return false;
    exp = std::stoi(e);
  }
  sc -= exp;
  for (; sc < 0; ++sc) {  // 12e3: a whole number
    if (m > 99'999'999'999'999'999 / 10) return false;
    m *= 10;
  }
  while (sc > 0 && m % 10 == 0 && m != 0) m /= 10, --sc;
  if (sc > 18) return false;
  *mantissa = neg ? -m : m;
  *scale = m == 0 ? 0 : sc;
  return true;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  Verdict Eval(const Json& s, const Json& v) {
    if (--steps_left_ < 0 || depth_ > kMaxDepth) return kUnknown;
    ++depth_;
    const Verdict r = EvalInner(s, v);
    --depth_;
    return r;
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxPatterns = 64;

  Verdict EvalInner(const Json& s, const Json& v) {
    if (s.is_boolean()) return Of(s.get<bool>());
    if (!s.is_object()) return kUnknown;
    All all;
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return kUnknown;
      std::string decoded, why;
      const Json* t = ResolveLocalRef(root_, s["$ref"].get<std::string>(), &decoded, &why);
      if (t == nullptr) return kUnknown;
      const Verdict ref = Eval(*t, v);
      Json siblings = s;
      siblings.erase("$ref");
      All both;
      both.Add(ref);
      both.Add(Eval(siblings, v));
      // Drafts up to 7 ignore the siblings of $ref, later ones apply them: certain only when
      // both readings agree.
      return both.v == ref ? ref : kUnknown;
    }
    for (auto it = s.begin(); it != s.end() && !all.decided_invalid(); ++it) {
      all.Add(Keyword(s, it.key(), it.value(), v));
    }
    return all.v;
  }

  Verdict Keyword(const Json& s, const std::string& k, const Json& x, const Json& v) {
    if (IsAnnotation(k)) return kValid;
    if (k == "type") return Type(x, v);
    if (k == "enum") {
      if (!x.is_array()) return kUnknown;
      for (const auto& e : x)
        if (e == v) return kValid;
      return kInvalid;
    }
    if (k == "const") return Of(x == v);
    if (k == "allOf" || k == "anyOf" || k == "oneOf") return Combinator(k, x, v);
    if (k == "not") return Not(Eval(x, v));
    if (k == "if") {
      const Verdict cond = Eval(x, v);
      if (cond == kUnknown) return kUnknown;
      const char* branch = cond == kValid ? "then" : "else";
      return s.contains(branch) ? Eval(s[branch], v) : kValid;
    }
    if (k == "then" || k == "else") return kValid;  // through "if"
    if (v.is_object()) return ObjectKeyword(s, k, x, v);
    if (v.is_array()) return ArrayKeyword(s, k, x, v);
    if (v.is_string()) return StringKeyword(k, x, v);
    if (v.is_number()) return NumberKeyword(s, k, x, v);
    return Known(k) ? kValid : kUnknown;
  }

  // Keywords that apply only to other types (and so pass this value), or that every validator
  // ignores; anything else (format, unevaluated*, dynamic references) is left undecided.
  static bool Known(const std::string& k) {
    static const char* const kKnown[] = {"properties",
                                         "required",
                                         "additionalProperties",
                                         "patternProperties",
                                         "propertyNames",
                                         "minProperties",
                                         "maxProperties",
                                         "dependencies",
                                         "dependentRequired",
                                         "dependentSchemas",
                                         "items",
                                         "prefixItems",
                                         "additionalItems",
                                         "minItems",
                                         "maxItems",
                                         "uniqueItems",
                                         "contains",
                                         "minContains",
                                         "maxContains",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "multipleOf"};
    for (const char* known : kKnown)
      if (k == known) return true;
    static const char* const kUndecided[] = {"format",           "unevaluatedProperties",
                                             "unevaluatedItems", "$dynamicRef",
                                             "$recursiveRef",    "contentSchema"};
    for (const char* u : kUndecided)
      if (k == u) return false;
    return true;  // an unknown keyword: validators ignore it
  }

  static Verdict Type(const Json& t, const Json& v) {
    auto one = [&](const Json& name) -> Verdict {
      if (!name.is_string()) return kUnknown;
      const std::string n = name.get<std::string>();
      if (n == "integer") return Of(IsInteger(v));
      if (n == "number") return Of(v.is_number());
      if (n == "null" || n == "boolean" || n == "object" || n == "array" || n == "string")
        return Of(n == v.type_name());
      return kUnknown;
    };
    if (!t.is_array()) return one(t);
    Verdict any = kInvalid;
    for (const auto& name : t) {
      const Verdict r = one(name);
      if (r == kValid) return kValid;
      if (r == kUnknown) any = kUnknown;
    }
    return any;
  }

  Verdict Combinator(const std::string& k, const Json& x, const Json& v) {
    if (!x.is_array() || x.empty()) return kUnknown;
    int valid = 0, unknown = 0;
    All all;
    for (const auto& sub : x) {
      const Verdict r = Eval(sub, v);
      all.Add(r);
      valid += r == kValid;
      unknown += r == kUnknown;
    }
    if (k == "allOf") return all.v;
    if (k == "anyOf") return valid > 0 ? kValid : unknown > 0 ? kUnknown : kInvalid;
    if (valid >= 2) return kInvalid;  // oneOf
    if (unknown > 0) return kUnknown;
    return Of(valid == 1);
  }

  // Does `text` contain a match of the ECMAScript regex? Through the library's own translation
  // (the one `pattern` compiles with), on the JSON-escaped text it reads.
  Verdict Search(const std::string& regex, const std::string& text) {
    for (unsigned char c : text)
      if (c == '"' || c == '\\' || c < 0x20) return kUnknown;
    auto it = patterns_.find(regex);
    if (it == patterns_.end()) {
      if (static_cast<int>(patterns_.size()) >= kMaxPatterns) return kUnknown;
      std::shared_ptr<const Grammar> g;
      std::string expr;
      if (RegexToGbnf(regex, RegexMode::kJsonString, &expr).ok()) {
        auto parsed = Grammar::FromGbnf("root ::= " + expr + "\nws ::= \"\"\n" + kBaseRules);
        if (parsed.ok()) g = *parsed;
      }
      it = patterns_.emplace(regex, g).first;
    }
    if (it->second == nullptr) return kUnknown;
    Matcher m(it->second, SingleByteTrie(), ShortTextLimits());
    const bool ok = m.AcceptBytes(text) && m.CanEnd();
    if (m.failed()) return kUnknown;
    return Of(ok);
  }

  Verdict ObjectKeyword(const Json& s, const std::string& k, const Json& x, const Json& v) {
    if (k == "properties") {
      if (!x.is_object()) return kUnknown;
      All all;
      for (auto it = v.begin(); it != v.end(); ++it)
        if (x.contains(it.key())) all.Add(Eval(x[it.key()], it.value()));
      return all.v;
    }
    if (k == "required") {
      if (!x.is_array()) return kUnknown;
      for (const auto& r : x) {
        if (!r.is_string()) return kUnknown;
        if (!v.contains(r.get<std::string>())) return kInvalid;
      }
      return kValid;
    }
    if (k == "patternProperties" || k == "additionalProperties") {
      // Both need, per key, which patterns it matches.
      const Json empty = Json::object();
      const Json& pp = s.contains("patternProperties") && s["patternProperties"].is_object()
                           ? s["patternProperties"]
                           : empty;
      if (s.contains("patternProperties") && !s["patternProperties"].is_object()) return kUnknown;
      const Json& props =
          s.contains("properties") && s["properties"].is_object() ? s["properties"] : empty;
      All all;
      for (auto it = v.begin(); it != v.end() && !all.decided_invalid(); ++it) {
        bool matched = false, unsure = false;
        for (auto p = pp.begin(); p != pp.end(); ++p) {
          const Verdict m = Search(p.key(), it.key());
          if (m == kUnknown) unsure = true;
          if (m != kValid) continue;
          matched = true;
          if (k == "patternProperties") all.Add(Eval(p.value(), it.value()));
        }
        if (k == "patternProperties") {
          if (unsure) all.Add(kUnknown);
          continue;
        }
        if (props.contains(it.key()) || matched) continue;
        const Verdict extra = Eval(x, it.value());
        all.Add(unsure && extra != kValid ? kUnknown : extra);
      }
      return all.v;
    }
    if (k == "propertyNames") {
      All all;
      for (auto it = v.begin(); it != v.end() && !all.decided_invalid(); ++it)
        all.Add(Eval(x, Json(it.key())));
      return all.v;
    }
    if (k == "minProperties" || k == "maxProperties") {
      if (!x.is_number()) return kUnknown;
      const double n = static_cast<double>(v.size());
      return Of(k == "minProperties" ? n >= x.get<double>() : n <= x.get<double>());
    }
    if (k == "dependencies" || k == "dependentRequired" || k == "dependentSchemas") {
      if (!x.is_object()) return kUnknown;
      All all;
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (!v.contains(it.key())) continue;
        if (it.value().is_array()) {
          for (const auto& r : it.value()) {
            if (!r.is_string()) return kUnknown;
            all.Add(Of(v.contains(r.get<std::string>())));
          }
        } else {
          all.Add(Eval(it.value(), v));
        }
      }
      return all.v;
    }
    return Known(k) ? kValid : kUnknown;
  }

  Verdict ArrayKeyword(const Json& s, const std::string& k, const Json& x, const Json& v) {
    const size_t n = v.size();
    if (k == "prefixItems") {
      if (!x.is_array()) return kUnknown;
      All all;
      for (size_t i = 0; i < n && i < x.size(); ++i) all.Add(Eval(x[i], v[i]));
      return all.v;
    }
    if (k == "items") {
      All all;
      if (x.is_array()) {  // drafts up to 2019-09: a tuple, then additionalItems
        if (s.contains("prefixItems")) return kUnknown;
        for (size_t i = 0; i < n && i < x.size(); ++i) all.Add(Eval(x[i], v[i]));
        if (s.contains("additionalItems"))
          for (size_t i = x.size(); i < n; ++i) all.Add(Eval(s["additionalItems"], v[i]));
        return all.v;
      }
      size_t first = 0;
      if (s.contains("prefixItems")) {
        if (!s["prefixItems"].is_array()) return kUnknown;
        first = s["prefixItems"].size();
      }
      for (size_t i = first; i < n && !all.decided_invalid(); ++i) all.Add(Eval(x, v[i]));
      return all.v;
    }
    if (k == "additionalItems") return kValid;  // through a tuple "items"
    if (k == "minItems" || k == "maxItems") {
      if (!x.is_number()) return kUnknown;
      const double size = static_cast<double>(n);
      return Of(k == "minItems" ? size >= x.get<double>() : size <= x.get<double>());
    }
    if (k == "uniqueItems") {
      if (x != true) return kValid;
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j)
          if (v[i] == v[j]) return kInvalid;
      return kValid;
    }
    if (k == "contains") {
      double lo = 1, hi = INFINITY;
      if (s.contains("minContains")) {
        if (!s["minContains"].is_number()) return kUnknown;
        lo = s["minContains"].get<double>();
      }
      if (s.contains("maxContains")) {
        if (!s["maxContains"].is_number()) return kUnknown;
        hi = s["maxContains"].get<double>();
      }
      double yes = 0, unsure = 0;
      for (size_t i = 0; i < n; ++i) {
        const Verdict r = Eval(x, v[i]);
        yes += r == kValid;
        unsure += r == kUnknown;
      }
      if (yes >= lo && yes + unsure <= hi) return kValid;
      if (yes + unsure < lo || yes > hi) return kInvalid;
      return kUnknown;
    }
    if (k == "minContains" || k == "maxContains") return kValid;  // through "contains"
    return Known(k) ? kValid : kUnknown;
  }

  Verdict StringKeyword(const std::string& k, const Json& x, const Json& v) {
    const std::string str = v.get<std::string>();
    if (k == "minLength" || k == "maxLength") {
      if (!x.is_number()) return kUnknown;
      const double n = static_cast<double>(CodePoints(str));
      return Of(k == "minLength" ? n >= x.get<double>() : n <= x.get<double>());
    }
    if (k == "pattern") return x.is_string() ? Search(x.get<std::string>(), str) : kUnknown;
    return Known(k) ? kValid : kUnknown;
  }

  Verdict NumberKeyword(const Json& s, const std::string& k, const Json& x, const Json& v) {
    if (k != "minimum" && k != "maximum" && k != "exclusiveMinimum" && k != "exclusiveMaximum" &&
        k != "multipleOf")
      return Known(k) ? kValid : kUnknown;
    if (!ExactDouble(v)) return kUnknown;
    const double d = v.get<double>();
    if (k == "multipleOf") {
      if (!x.is_number() || !ExactDouble(x) || x.get<double>() <= 0) return kUnknown;
      const double m = x.get<double>();
      if (IsInteger(v) && std::floor(m) == m) return Of(std::fmod(d, m) == 0);
      // On the decimals: value / divisor is whole when value x 10^s is a whole multiple of
      // divisor x 10^s at the larger scale s.
      int64_t vm = 0, dm = 0;
      int vs = 0, ds = 0;
      if (!Decimal(v, &vm, &vs) || !Decimal(x, &dm, &ds) || dm <= 0) return kUnknown;
      for (; vs < ds; ++vs) {
        if (vm > INT64_MAX / 10 || vm < INT64_MIN / 10) return kUnknown;
        vm *= 10;
      }
      for (; ds < vs; ++ds) {
        if (dm > INT64_MAX / 10) return kUnknown;
        dm *= 10;
      }
      return Of(vm % dm == 0);
    }
    if (x.is_boolean()) return kValid;  // draft 4's exclusive flags, read with their bound
    if (!x.is_number() || !ExactDouble(x)) return kUnknown;
    const double b = x.get<double>();
    if (k == "minimum") {
      const bool excl = s.contains("exclusiveMinimum") && s["exclusiveMinimum"] == true;
      return Of(excl ? d > b : d >= b);
    }
    if (k == "maximum") {
      const bool excl = s.contains("exclusiveMaximum") && s["exclusiveMaximum"] == true;
      return Of(excl ? d < b : d <= b);
    }
    if (k == "exclusiveMinimum") return Of(d > b);
    return Of(d < b);
  }

  const Json& root_;
  int steps_left_ = 20000;
  int depth_ = 0;
  std::map<std::string, std::shared_ptr<const Grammar>> patterns_;
};

}  // namespace

Verdict Validate(const Json& root, const Json& schema, const Json& value) {
  Validator v(root);
  return v.Eval(schema, value);
}

}  // namespace qwenrt::schema
