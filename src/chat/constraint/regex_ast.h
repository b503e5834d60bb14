// A parsed regex (ECMAScript syntax as JSON Schema's `pattern` uses it) as a tree of character
// sets, sequences, alternatives and counted repetitions. One parse serves two printers: GBNF text
// for a pattern on its own (regex_gbnf.h) and the product automaton for a pattern that must also
// meet other patterns or a length (regex_product.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/constraint/utf8_ranges.h"

namespace qwenrt {

enum class RegexMode {
  kWholeText,   // the regex must match the whole output (anchors optional), raw bytes
  kJsonString,  // inside a JSON string: search semantics (unanchored sides match any string
                // character, node kJsonChar), and the regex's own characters may not be ones JSON
                // must escape (", \, control characters): such strings are rejected, never let
                // through
};

struct RegexNode {
  enum Kind {
    kEmpty,     // the empty string
    kSet,       // one character of `set`
    kJsonChar,  // one character of a JSON string, raw or escaped (GBNF rule `jchar`)
    kConcat,    // kids in order
    kAlt,       // one of kids
    kRepeat,    // kids[0], min..max times (max -1: unbounded)
  };
  Kind kind = kEmpty;
  CodepointRanges set;  // kSet: normalized, non-empty
  std::vector<int> kids;
  int64_t min = 0, max = -1;
};

struct Regex {
  std::vector<RegexNode> nodes;
  int root = -1;
};

// Supported: literals, escapes (\d \w \s and negations, \n \t \xHH \uHHHH ...), classes, `.`,
// groups ((?:...) and named ones), alternation, * + ? {m} {m,} {m,n} (lazy forms match the same
// language), and ^ / $ at the ends of a top-level alternative. Lookaround, backreferences, word
// boundaries, Unicode properties and flags cannot be enforced by a context-free grammar and are
// errors naming the construct.
Status ParseRegex(std::string_view regex, RegexMode mode, Regex* out);

}  // namespace qwenrt
