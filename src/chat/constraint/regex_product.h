// The strings of a JSON string value that match several regexes at once and whose length lies in
// a range, as right-linear GBNF rules: JSON Schema's `pattern` beside `minLength`/`maxLength`, a
// `format` beside a `pattern`, two patterns from allOf. A context-free grammar cannot intersect two
// grammars, but regular languages intersect as automata: each regex becomes a Glushkov automaton
// (one state per character position, no empty moves), the product runs them in step with a counter
// of characters, and every live product state becomes one rule.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace qwenrt {

struct RegexProductLimits {
  int64_t min_len = 0;
  int64_t max_len = -1;             // -1: no upper bound
  size_t max_positions = 4096;      // per regex, after counted repetitions are unrolled
  size_t max_states = 40000;        // product states explored
  size_t max_transitions = 400000;  // product transitions explored
};

// Appends `name ::= body` lines to *rules (names from new_name()) and sets *start to the rule of
// the whole string (without its quotes), or to "" when no string meets them all. kJsonString mode.
// Errors: a regex that does not parse, an automaton over the limits.
Status RegexProductGbnf(const std::vector<std::string>& regexes, const RegexProductLimits& limits,
                        const std::function<std::string()>& new_name, std::string* rules,
                        std::string* start);

}  // namespace qwenrt
