// Small helpers shared by the unit tests: fixture paths, whole-file reads, UTF-8 validity and a
// relative error for comparing kernel outputs. Header only; each test is its own executable.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "text/unicode.h"

namespace qwenrt::test {

// Path of `rel` inside tests/data.
// The fixtures: $QWENRT_TEST_DATA when set (binaries run from a copied tree, e.g. on a GPU
// machine), else the source tree's tests/data.
inline std::string DataPath(const std::string& rel) {
  const char* env = std::getenv("QWENRT_TEST_DATA");
  return std::string(env != nullptr && *env != '\0' ? env : QWENRT_TEST_DATA) + "/" + rel;
}

// The whole file at `path` (binary); fails the test when it cannot be opened.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using unicode::IsValidUtf8;  // strictly valid UTF-8 all the way

// max |a - b| / max |b| (b = the reference; max |a - b| when b is all zero); a non-finite value
// anywhere in a gives infinity. Relative to the max rather than element-wise because single
// outputs can be near zero.
inline double RelErr(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    max_diff = std::max(max_diff, std::fabs(double(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::fabs(double(b[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace qwenrt::test
