// Small helpers shared by the unit tests: fixture paths, whole-file reads, UTF-8 validity and a
// relative error for comparing kernel outputs. Header only; each test is its own executable.
#pragma once

#include <time.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "text/json.h"
#include "text/unicode.h"

namespace qwenrt::test {

// `text` as a JSON document (deep ones allowed: the library's own callers bound the depth); a
// parse error fails the test with the parser's message.
inline Json ParseJson(std::string_view text, int max_depth = 1 << 20) {
  StatusOr<Json> r = Json::Parse(text, Json::Limits{max_depth});
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return std::move(*r);
}

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

// CPU seconds this thread has run. Complexity tests time with it rather than the wall clock: on a
// shared machine a long run is preempted in proportion to its length while a short one may finish
// in one time slice, which made linear code look super-linear (5x of wall time lost to others).
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
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
