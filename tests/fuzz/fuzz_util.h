// Helpers shared by the libFuzzer targets in tests/fuzz: a property check that stops the run with
// a message (a trap, so libFuzzer saves the input), and the text contracts every error message and
// every returned string must meet.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "text/unicode.h"

namespace qwenrt::fuzz {

// Like assert, but also in release builds, and libFuzzer reports it as a crash with the input.
#define QWENRT_FUZZ_CHECK(cond, what)                                       \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "fuzz property failed: %s (%s)\n", #cond, what); \
      __builtin_trap();                                                     \
    }                                                                       \
  } while (0)

// Strict UTF-8 with no NUL byte: what a NUL-terminated C API may hand out.
inline bool IsCleanText(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\0') return false;
    const int len = unicode::ValidSequenceLength(s.data() + i, s.size() - i);
    if (len <= 0) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

using unicode::IsValidUtf8;  // strictly valid UTF-8 all the way

}  // namespace qwenrt::fuzz
