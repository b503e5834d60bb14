// A non-recursive nesting-depth check for untrusted JSON text (tools_json, tool-call arguments),
// run before the text is parsed. nlohmann::json parses and destroys iteratively (3.11: an explicit
// stack in the SAX parser and in `destroy`), but copying, comparing, dumping and our conversions
// of a value recurse once per level, so 5e4 nested brackets overflow the stack there. Checking the
// text first keeps every later step bounded. It is not a validator: malformed JSON within the
// depth limit passes and is left to the parser.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/status.h"

namespace qwenrt {

// The nesting depth the chat layer accepts in caller JSON: far more than any tool schema or
// arguments object needs, and few enough stack frames for any recursive walk on a 64 KiB stack.
inline constexpr int kMaxJsonDepth = 256;

// OK when no array/object in `json` is nested more than `max_depth` levels deep (`[]` is depth 1,
// `[[]]` depth 2); brackets inside strings (with `\"` escapes) do not count. Otherwise
// InvalidArgument naming the byte offset where the limit was passed. One pass, O(1) memory, no
// recursion. Any thread.
inline Status CheckJsonDepth(std::string_view json, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // skip the escaped character (a `\"` does not end the string)
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          return InvalidArgument("JSON nested deeper than {} levels (at byte {})", max_depth, i);
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced text is the parser's to report
        break;
      default:
        break;
    }
  }
  return OkStatus();
}

}  // namespace qwenrt
