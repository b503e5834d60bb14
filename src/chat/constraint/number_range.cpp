// Digit-wise range expressions: [a, b] of equal length splits at the first differing digit into a
// low edge, a free middle and a high edge; lengths between are free runs of digits.
#include "chat/constraint/number_range.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qwenrt {
namespace {

std::string Digit(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

// Equal-length decimal strings lo <= hi.
std::string SameLength(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "";
  if (lo[0] == hi[0]) {
    std::string rest = SameLength(lo.substr(1), hi.substr(1));
    return Digit(lo[0], lo[0]) + (rest.empty() ? "" : " " + rest);
  }
  const size_t n = lo.size() - 1;
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  const bool lo_min = lo_rest == std::string(n, '0'), hi_max = hi_rest == std::string(n, '9');
  std::vector<std::string> alts;
  char mid_lo = static_cast<char>(lo[0] + 1), mid_hi = static_cast<char>(hi[0] - 1);
  if (lo_min)
    mid_lo = lo[0];
  else
    alts.push_back(Digit(lo[0], lo[0]) + " (" + SameLength(lo_rest, std::string(n, '9')) + ")");
  if (hi_max) mid_hi = hi[0];
  if (mid_lo <= mid_hi)
    alts.push_back(Digit(mid_lo, mid_hi) + (n ? " [0-9]{" + std::to_string(n) + "}" : ""));
  if (!hi_max)
    alts.push_back(Digit(hi[0], hi[0]) + " (" + SameLength(std::string(n, '0'), hi_rest) + ")");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

}  // namespace

std::string UnsignedRangeGbnf(int64_t a, int64_t b) {
  if (a < 0) a = 0;
  if (b >= 0 && a > b) return "";
  std::vector<std::string> alts;
  const std::string as = std::to_string(a);
  const size_t la = as.size();
  const size_t lb = b < 0 ? la : std::to_string(b).size();
  for (size_t len = la; len <= lb; ++len) {
    std::string lo = as;
    if (len != la) {  // 10...0 (not "1" + zeros: GCC 12 -Wrestrict false positive)
      lo.assign(len, '0');
      lo[0] = '1';
    }
    std::string hi = (b >= 0 && len == lb) ? std::to_string(b) : std::string(len, '9');
    alts.push_back(SameLength(lo, hi));
  }
  if (b < 0) alts.push_back("[1-9] [0-9]{" + std::to_string(la) + ",}");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

namespace {

// A set of fraction digit strings by value: 0.D within [lo, hi], each side optional; a bound is
// the digits after the point without trailing zeros ("" is 0).
struct Frac {
  std::optional<std::string> lo, hi;
  bool lo_incl = true, hi_incl = true;
};

std::string Rest(const std::string& d) { return d.empty() ? "" : d.substr(1); }

// Whether the value 0 (no fraction digits, or only zeros) is in f.
bool HoldsZero(const Frac& f) {
  const bool lo_ok = !f.lo || (f.lo->empty() && f.lo_incl);
  const bool hi_ok = !f.hi || !f.hi->empty() || f.hi_incl;
  return lo_ok && hi_ok;
}

// Any digit strings (empty too when allow_empty) with at most `cap` digits before the zeros that
// end them (cap -1: no limit): the fractions of multipleOf 10^-cap.
std::string AnyDigits(int cap, bool allow_empty) {
  if (cap < 0) return allow_empty ? "[0-9]*" : "[0-9]+";
  if (cap == 0) return allow_empty ? "\"0\"*" : "\"0\"+";
  return fmt::format("[0-9]{{{},{}}} \"0\"*", allow_empty ? 0 : 1, cap);
}

// Non-empty digit strings with a digit other than 0 (within the first `cap`).
std::string NonZeroDigits(int cap) {
  if (cap < 0) return "[0-9]* [1-9] [0-9]*";
  std::vector<std::string> alts;
  for (int z = 0; z < cap; ++z) {  // z leading zeros, then the first non-zero digit
    alts.push_back(fmt::format("{}[1-9] {}", z ? fmt::format("\"0\"{{{}}} ", z) : "",
                               AnyDigits(cap - 1 - z, true)));
  }
  if (alts.empty()) return "";
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Digit strings D (empty too when allow_empty: the value 0) whose value 0.D lies in f, with at most
// `cap` digits before trailing zeros (-1: any); "" when there are none. Recursion on the first
// digit: one strictly between the bounds' first digits frees the rest; one equal to a bound's first
// digit carries that bound's remaining digits.
std::string FracGbnf(Frac f, bool allow_empty, int cap) {
  const bool zero_ok = HoldsZero(f);
  if (f.lo && f.lo->empty() && f.lo_incl) f.lo.reset();  // >= 0 always holds
  if (cap == 0 || (f.hi && f.hi->empty())) {             // zeros only
    if (!zero_ok) return "";
    return allow_empty ? "\"0\"*" : "\"0\"+";
  }
  if (!f.hi && !f.lo) return AnyDigits(cap, allow_empty);
  if (!f.hi && f.lo->empty()) return NonZeroDigits(cap);  // > 0
  const char ca = f.lo && !f.lo->empty() ? (*f.lo)[0] : '0';
  const char cb = f.hi ? (*f.hi)[0] : '9';
  const int next_cap = cap < 0 ? -1 : cap - 1;
  std::vector<std::string> alts;
  if (allow_empty && zero_ok) alts.push_back("\"\"");
  for (char d = ca; d <= cb; ++d) {
    const bool lo_edge = f.lo && d == ca, hi_edge = f.hi && d == cb;
    if (!lo_edge && !hi_edge) {
      // The free middle as one class.
      char e = d;
      while (e + 1 <= cb && !(f.hi && e + 1 == cb)) ++e;
      alts.push_back(Digit(d, e) + " " + AnyDigits(next_cap, true));
      d = e;
      continue;
    }
    Frac t;
    t.lo_incl = f.lo_incl;
    t.hi_incl = f.hi_incl;
    if (lo_edge) t.lo = Rest(*f.lo);
    if (hi_edge) t.hi = Rest(*f.hi);
    const std::string tail = FracGbnf(t, true, next_cap);
    if (tail.empty()) continue;
    alts.push_back(Digit(d, d) + (tail == "\"\"" ? "" : " (" + tail + ")"));
  }
  if (alts.empty()) return "";
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

struct Piece {
  int64_t lo, hi;  // integer-part range, hi < 0: unbounded
  Frac frac;
};

// A decimal bound >= 0: integer part and fraction digits (no trailing zeros).
struct Dec {
  int64_t ip = 0;
  std::string frac;
};

// Pieces for y >= 0 with optional lower (L, excl) and upper (H, excl) bounds on y; a bound below
// zero is given as nullopt (lower) or makes the set empty (upper, via h_negative).
std::vector<Piece> Pieces(std::optional<Dec> L, bool lx, std::optional<Dec> H, bool hx,
                          bool h_negative) {
  std::vector<Piece> lower, upper, out;
  if (h_negative) return {};
  if (!L) {
    lower.push_back({0, -1, {}});
  } else {
    lower.push_back({L->ip + 1, -1, {}});
    Frac f;
    f.lo = L->frac;
    f.lo_incl = !lx;
    lower.push_back({L->ip, L->ip, f});
  }
  if (!H) {
    upper.push_back({0, -1, {}});
  } else {
    if (H->ip > 0) upper.push_back({0, H->ip - 1, {}});
    Frac f;
    f.hi = H->frac;
    f.hi_incl = !hx;
    upper.push_back({H->ip, H->ip, f});
  }
  for (const Piece& a : lower) {
    for (const Piece& b : upper) {
      const int64_t lo = std::max(a.lo, b.lo);
      int64_t hi;
      if (a.hi < 0)
        hi = b.hi;
      else if (b.hi < 0)
        hi = a.hi;
      else
        hi = std::min(a.hi, b.hi);
      if (hi >= 0 && lo > hi) continue;
      Frac f = a.frac;  // lower pieces bound the fraction from below, upper ones from above
      f.hi = b.frac.hi;
      f.hi_incl = b.frac.hi_incl;
      out.push_back({lo, hi, f});
    }
  }
  return out;
}

std::string PiecesGbnf(const std::vector<Piece>& pieces, bool integer, int cap) {
  std::vector<std::string> alts;
  for (const Piece& p : pieces) {
    // An integer is a number with fraction 0; a number may also write its zero fraction.
    const bool zero_ok = HoldsZero(p.frac);
    std::string frac;
    if (integer) {
      if (!zero_ok) continue;
    } else {
      const std::string digits = FracGbnf(p.frac, false, cap);
      if (digits.empty() && !zero_ok) continue;
      if (!digits.empty()) frac = zero_ok ? " (\".\" " + digits + ")?" : " \".\" " + digits;
    }
    const std::string ip = UnsignedRangeGbnf(p.lo, p.hi);
    if (ip.empty()) continue;
    alts.push_back(ip + frac);
  }
  if (alts.empty()) return "";
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// |v| as a decimal: its shortest round-trip digits (1e-09 is 0.000000001), the point placed by
// the exponent; false past 40 fraction digits.
bool ToDec(double v, Dec* d) {
  const std::string t = fmt::format("{}", std::fabs(v));
  const size_t e = t.find_first_of("eE");
  const std::string mant = t.substr(0, e);
  const int exp = e == std::string::npos ? 0 : std::stoi(t.substr(e + 1));
  const size_t dot = mant.find('.');
  std::string digits = mant;
  if (dot != std::string::npos) digits.erase(dot, 1);
  // The point sits after `point` digits of `digits` (maybe beyond either end).
  const int64_t point = static_cast<int64_t>(dot == std::string::npos ? mant.size() : dot) + exp;
  if (point < -40 || point > 20) return false;
  if (point <= 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    d->ip = 0;
    d->frac = digits;
  } else {
    if (static_cast<size_t>(point) > digits.size()) digits.append(point - digits.size(), '0');
    d->ip = std::stoll(digits.substr(0, static_cast<size_t>(point)));
    d->frac = digits.substr(static_cast<size_t>(point));
  }
  while (!d->frac.empty() && d->frac.back() == '0') d->frac.pop_back();
  return true;
}

}  // namespace

StatusOr<std::string> NumberGbnf(bool integer, const NumberBounds& b) {
  if (!b.lo && !b.hi && b.fraction_digits < 0) {
    return std::string(
        integer ? "(\"-\"? (\"0\" | [1-9] [0-9]*))"
                : "(\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+-]? [0-9]+)?)");
  }
  bool lx = b.lo_exclusive, hx = b.hi_exclusive;
  std::optional<double> L = b.lo, H = b.hi;
  for (auto [v, kw] : {std::pair{L, lx ? "exclusiveMinimum" : "minimum"},
                       std::pair{H, hx ? "exclusiveMaximum" : "maximum"}}) {
    if (v && (!std::isfinite(*v) || std::fabs(*v) > 1e15))
      return InvalidArgument("{}: bound out of range", kw);
  }
  if (integer) {  // integral bounds, inclusive
    if (L) L = lx ? std::floor(*L) + 1 : std::ceil(*L);
    if (H) H = hx ? std::ceil(*H) - 1 : std::floor(*H);
    lx = hx = false;
  }
  Dec l, h;
  if ((L && !ToDec(*L, &l)) || (H && !ToDec(*H, &h)))
    return InvalidArgument("minimum: a bound with more than 40 fraction digits");
  const bool l_neg = L && *L < 0, h_neg = H && *H < 0;
  // x >= 0 written without a sign; x = -y with y > 0 written "-" y.
  const std::string pos = PiecesGbnf(Pieces(L && !l_neg ? std::optional<Dec>(l) : std::nullopt, lx,
                                            H ? std::optional<Dec>(h) : std::nullopt, hx, h_neg),
                                     integer, b.fraction_digits);
  std::string neg;
  // x <= H  <=>  y >= -H (a constraint on y only when H <= 0); x >= L  <=>  y <= -L (none left
  // when L >= 0, except L = 0 inclusive: y = 0, which "-0" would spell again and is dropped).
  if (!L || l_neg) {
    std::optional<Dec> yl;
    bool ylx = false;
    if (H && (h_neg || *H == 0)) {
      yl = h;
      ylx = hx;
    }
    if (!yl || (yl->ip == 0 && yl->frac.empty() && !ylx)) {
      yl = Dec{};  // y > 0: "-0" is not written
      ylx = true;
    }
    std::vector<Piece> pieces =
        Pieces(yl, ylx, L ? std::optional<Dec>(l) : std::nullopt, lx, false);
    neg = PiecesGbnf(pieces, integer, b.fraction_digits);
  }
  if (pos.empty() && neg.empty()) return InvalidArgument("minimum/maximum: empty range");
  if (neg.empty()) return pos;
  if (pos.empty()) return "(\"-\" " + neg + ")";
  return "(" + pos + " | \"-\" " + neg + ")";
}

}  // namespace qwenrt
