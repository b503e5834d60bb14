// JSON Schema compiler: numbers and integers, their bounds and multipleOf (see
// json_schema_compiler.h).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chat/constraint/json_schema_compiler.h"

namespace qwenrt::schema {
namespace {

// n when v is 10^-n (n >= 1) in its shortest decimal spelling, else -1.
int PowerOfTenth(double v) {
  const std::string t = fmt::format("{}", v);
  if (t.rfind("1e-", 0) == 0 && t.size() > 3 && t.size() <= 5 &&
      t.find_first_not_of("0123456789", 3) == std::string::npos)
    return std::stoi(t.substr(3));
  if (t.rfind("0.", 0) != 0 || t.back() != '1') return -1;
  const std::string frac = t.substr(2);
  if (frac.find_first_not_of('0') != frac.size() - 1) return -1;
  return static_cast<int>(frac.size());
}

}  // namespace

std::string SchemaCompiler::CompileNumber(const Json& s, bool integer, const std::string& ptr) {
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
  if (s.contains("multipleOf")) {
    // multipleOf 10^-n (0.1, 0.01, ...): every integer, and numbers with at most n fraction
    // digits before trailing zeros, compared as the decimals written (10.99 is a multiple of 0.01,
    // as the document means it, though 10.99 / 0.01 is not integral in binary floating point).
    const int n = s["multipleOf"].is_number() ? PowerOfTenth(s["multipleOf"].get<double>()) : -1;
    if (n < 0) return CompileMultiple(s, b, ptr);
    if (!integer) b.fraction_digits = n;
  }
  auto r = NumberGbnf(integer, b);
  if (!r.ok())
    Error(ptr, r.status().message().substr(0, r.status().message().find(':')),
          r.status().message());
  if (!b.lo && !b.hi && b.fraction_digits < 0) return integer ? "jinteger" : "jnumber";
  return NewRule(*r);
}

// multipleOf k (a positive integer): integers only (a number type spelled "10.0" is refused, a
// sound restriction). Bounded on both sides: the multiples themselves as alternatives; otherwise
// the remainder automaton over the decimal digits (state r, digit d -> (10 r + d) mod k), with
// at most the bound 0 / 1 below or 0 / -1 above. Other combinations are errors.
std::string SchemaCompiler::CompileMultiple(const Json& s, const NumberBounds& b,
                                            const std::string& ptr) {
  const Json& m = s["multipleOf"];
  if (!m.is_number() || m.get<double>() <= 0) Error(ptr, "multipleOf", "must be a positive number");
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
    for (int d = d0; d <= 9; ++d) by_target[(10 * r + d) % k].push_back(static_cast<char>('0' + d));
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

}  // namespace qwenrt::schema
