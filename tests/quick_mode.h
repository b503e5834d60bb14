// Quick mode for the sanitizer runs: scripts/sanitize.sh sets QWENRT_TEST_QUICK=1 for the ASan +
// UBSan ctest, where every instrumented instruction runs 5-10x slower. The few tests whose cost is
// a long sweep or a long prompt then run a smaller, deterministic part of it (each test says
// which); the plain ctest of scripts/test.sh runs them whole, so nothing goes unchecked, only
// unrepeated under the sanitizers.
#pragma once

#include <cstdlib>
#include <cstring>

namespace qwenrt::testing {

inline bool QuickMode() {
  const char* v = std::getenv("QWENRT_TEST_QUICK");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace qwenrt::testing
