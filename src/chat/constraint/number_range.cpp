// Digit-wise range expressions: [a, b] of equal length splits at the first differing digit into a
// low edge, a free middle and a high edge; lengths between are free runs of digits.
#include "chat/constraint/number_range.h"

#include <cmath>
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
    std::string lo = len == la ? as : "1" + std::string(len - 1, '0');
    std::string hi = (b >= 0 && len == lb) ? std::to_string(b) : std::string(len, '9');
    alts.push_back(SameLength(lo, hi));
  }
  if (b < 0) alts.push_back("[1-9] [0-9]{" + std::to_string(la) + ",}");
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

namespace {

enum class Frac { kAny, kZero, kNonZero };
struct Piece {
  int64_t lo, hi;  // integer-part range, hi < 0: unbounded
  Frac frac;
};

// Pieces for y >= 0 with optional lower (L, excl) and upper (H, excl) integral bounds on y.
std::vector<Piece> Pieces(std::optional<int64_t> L, bool lx, std::optional<int64_t> H, bool hx) {
  std::vector<Piece> lower, upper, out;
  if (!L || *L < 0 || (*L == 0 && !lx)) {
    lower.push_back({0, -1, Frac::kAny});
  } else if (!lx) {
    lower.push_back({*L, -1, Frac::kAny});
  } else {
    lower.push_back({*L + 1, -1, Frac::kAny});
    lower.push_back({*L, *L, Frac::kNonZero});
  }
  if (!H) {
    upper.push_back({0, -1, Frac::kAny});
  } else if (*H < 0) {
    return {};
  } else {
    if (*H > 0) upper.push_back({0, *H - 1, Frac::kAny});
    if (!hx) upper.push_back({*H, *H, Frac::kZero});
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
      Frac f;
      if (a.frac == Frac::kAny)
        f = b.frac;
      else if (b.frac == Frac::kAny || b.frac == a.frac)
        f = a.frac;
      else
        continue;
      out.push_back({lo, hi, f});
    }
  }
  return out;
}

std::string PiecesGbnf(const std::vector<Piece>& pieces, bool integer) {
  std::vector<std::string> alts;
  for (const Piece& p : pieces) {
    std::string frac;
    if (integer) {
      if (p.frac == Frac::kNonZero) continue;
    } else if (p.frac == Frac::kAny) {
      frac = " (\".\" [0-9]+)?";
    } else if (p.frac == Frac::kZero) {
      frac = " (\".\" \"0\"+)?";
    } else {
      frac = " \".\" [0-9]* [1-9] [0-9]*";
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

}  // namespace

StatusOr<std::string> NumberGbnf(bool integer, const NumberBounds& b) {
  if (!b.lo && !b.hi) {
    return std::string(
        integer ? "(\"-\"? (\"0\" | [1-9] [0-9]*))"
                : "(\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+-]? [0-9]+)?)");
  }
  std::optional<int64_t> L, H;
  bool lx = b.lo_exclusive, hx = b.hi_exclusive;
  auto check = [&](double v, const char* kw) -> Status {
    if (!std::isfinite(v) || std::fabs(v) > 1e15)
      return InvalidArgument("{}: bound out of range", kw);
    if (!integer && v != std::floor(v))
      return InvalidArgument("{}: non-integral bound on a number", kw);
    return OkStatus();
  };
  if (b.lo) {
    QWENRT_RETURN_IF_ERROR(check(*b.lo, b.lo_exclusive ? "exclusiveMinimum" : "minimum"));
    if (integer) {
      L = static_cast<int64_t>(lx ? std::floor(*b.lo) + 1 : std::ceil(*b.lo));
      lx = false;
    } else {
      L = static_cast<int64_t>(*b.lo);
    }
  }
  if (b.hi) {
    QWENRT_RETURN_IF_ERROR(check(*b.hi, b.hi_exclusive ? "exclusiveMaximum" : "maximum"));
    if (integer) {
      H = static_cast<int64_t>(hx ? std::ceil(*b.hi) - 1 : std::floor(*b.hi));
      hx = false;
    } else {
      H = static_cast<int64_t>(*b.hi);
    }
  }
  // x >= 0 written without a sign; x = -y with y >= 0 written "-" y.
  const std::string pos = PiecesGbnf(Pieces(L, lx, H, hx), integer);
  std::string neg;
  {
    std::optional<int64_t> yl, yh;
    bool ylx = false, yhx = false;
    bool empty = false;
    if (H) {  // x <= H  <=>  y >= -H
      if (-*H >= 0) {
        yl = -*H;
        ylx = hx;
      }
    }
    if (L) {  // x >= L  <=>  y <= -L
      if (-*L < 0 || (-*L == 0 && lx))
        empty = true;
      else {
        yh = -*L;
        yhx = lx;
      }
    }
    if (!empty) {
      // Integers: y = 0 is "-0", which json.dumps never writes; drop it to keep one spelling.
      std::vector<Piece> pieces = Pieces(yl, ylx, yh, yhx);
      if (integer) {
        for (auto& p : pieces)
          if (p.lo == 0) p.lo = 1;
      }
      neg = PiecesGbnf(pieces, integer);
    }
  }
  if (pos.empty() && neg.empty()) return InvalidArgument("minimum/maximum: empty range");
  if (neg.empty()) return pos;
  if (pos.empty()) return "(\"-\" " + neg + ")";
  return "(" + pos + " | \"-\" " + neg + ")";
}

}  // namespace qwenrt
