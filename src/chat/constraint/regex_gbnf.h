// Regex (ECMAScript syntax as JSON Schema's `pattern` uses it) -> GBNF text. Supported: literals,
// escapes (\d \w \s and negations, \n \t \xHH \uHHHH ...), classes, `.`, groups ((?:...) and named
// ones), alternation, * + ? {m} {m,} {m,n} (lazy forms match the same language), and ^ / $ at the
// ends of a top-level alternative. Lookaround, backreferences, word boundaries, Unicode properties
// and flags cannot be enforced by a context-free grammar and are errors naming the construct.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace qwenrt {

enum class RegexMode {
  kWholeText,   // the regex must match the whole output (anchors optional), raw bytes
  kJsonString,  // inside a JSON string: search semantics (unanchored sides match any string
                // character, rule `jchar`), and the regex's own characters may not be ones JSON
                // must escape (", \, control characters): such strings are rejected, never let
                // through
};

// Appends a GBNF expression (a parenthesised group) to *out.
Status RegexToGbnf(std::string_view regex, RegexMode mode, std::string* out);

}  // namespace qwenrt
