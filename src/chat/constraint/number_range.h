// JSON numbers within bounds as GBNF: an integer range becomes digit-by-digit alternatives over the
// canonical decimal form; a bounded number splits into integer-part ranges times a range of
// fraction digits by value (10.25 <= x: integer part 11 or more with any fraction, or 10 with a
// fraction of at least .25), compared as the decimals written, exactly. Bounds are read as their
// shortest decimal spelling (0.1, not 0.1000000000000000055); one that needs an exponent is an
// error. Bounded numbers drop the exponent form and "-0" (sound restrictions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace qwenrt {

struct NumberBounds {
  std::optional<double> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
  int fraction_digits = -1;  // >= 0: at most this many before trailing zeros (multipleOf 10^-n)
};

// A GBNF expression for an integer (`integer`) or number in the bounds. Errors name the keyword.
StatusOr<std::string> NumberGbnf(bool integer, const NumberBounds& bounds);

// Non-negative integers in [a, b] (b < 0: unbounded) in canonical decimal ("" when empty).
std::string UnsignedRangeGbnf(int64_t a, int64_t b);

}  // namespace qwenrt
