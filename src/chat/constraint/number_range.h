// JSON numbers within bounds as GBNF: an integer range becomes digit-by-digit alternatives over the
// canonical decimal form; a bounded number splits into integer-part ranges times a fraction kind
// (any / all zeros / not all zeros), which is exact for integral bounds. Bounded numbers drop the
// exponent form (a sound restriction); non-integral number bounds are rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace qwenrt {

struct NumberBounds {
  std::optional<double> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
};

// A GBNF expression for an integer (`integer`) or number in the bounds. Errors name the keyword.
StatusOr<std::string> NumberGbnf(bool integer, const NumberBounds& bounds);

// Non-negative integers in [a, b] (b < 0: unbounded) in canonical decimal ("" when empty).
std::string UnsignedRangeGbnf(int64_t a, int64_t b);

}  // namespace qwenrt
