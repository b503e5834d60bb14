// The compiled constraint: a context-free grammar over bytes (rules of alternatives of element
// sequences; an element is a byte set or a rule reference), immutable and shared by every Matcher
// that runs it. GBNF, JSON Schema and regex all compile to this one form (the schema and the regex
// are translated to GBNF text first, see json_schema.h and regex_gbnf.h). Matching is matcher.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qwenrt {

// 256 bits: which byte values an element accepts.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool Has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void Add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct GrammarElement {
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind;
  int32_t index;  // into Grammar::byte_sets() (kBytes) or the rules (kRule); unused for kEnd
};

// Budgets for one compile; exceeding one is an error (never a hang or unbounded memory).
struct GrammarLimits {
  int64_t max_elements = 4'000'000;  // grammar elements after desugaring repetitions
  double max_compile_ms = 2000;      // wall time of one compile
};

struct JsonSchemaOptions {
  bool compact = false;  // no whitespace between tokens (json.dumps' ", " / ": " still pass: false)
  GrammarLimits limits;
};

class Grammar {
 public:
  // llama.cpp's GBNF (rules `name ::= ...`, "literals", [classes], ., (groups), | * + ? {m,n},
  // `#` comments); the start rule is `root`. Errors: InvalidArgument "line L, column C: ...".
  static StatusOr<std::shared_ptr<const Grammar>> FromGbnf(std::string_view text,
                                                           const GrammarLimits& limits = {});
  // A JSON Schema (draft 2020-12 subset, docs/constraints.md). Errors: InvalidArgument naming the
  // JSON pointer and the keyword that cannot be enforced exactly.
  static StatusOr<std::shared_ptr<const Grammar>> FromJsonSchema(
      std::string_view text, const JsonSchemaOptions& options = {});
  // An ECMAScript-style regex that the whole output must match.
  static StatusOr<std::shared_ptr<const Grammar>> FromRegex(std::string_view text,
                                                            const GrammarLimits& limits = {});

  // Flat element array: each alternative is its elements followed by one kEnd element.
  const std::vector<GrammarElement>& elements() const { return elements_; }
  // [rule] -> start positions (into elements()) of its alternatives.
  const std::vector<std::vector<int32_t>>& alternatives() const { return alts_; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  const std::vector<std::string>& rule_names() const { return names_; }
  int32_t root() const { return root_; }
  // The GBNF this grammar was parsed from (for schemas and regexes: the translation).
  const std::string& source() const { return source_; }
  // Special tokens the grammar spells as one marker byte (kMarkerFirst..0xFF: never in UTF-8, so
  // only rules built for them can take them; GBNF, schema and regex text cannot). The matcher
  // allows such a token where its byte may come next, and refuses every vocabulary token holding
  // a marker byte. Tool-call grammars use them for <tool_call> / </tool_call>.
  static constexpr uint8_t kMarkerFirst = 0xF8;
  struct SpecialToken {
    int32_t token;
    uint8_t byte;  // >= kMarkerFirst
  };
  const std::vector<SpecialToken>& special_tokens() const { return special_; }

  // Internal: used by the GBNF parser once the rules are complete. Checks for undefined rules and
  // left recursion (which a pushdown matcher cannot run) and flattens.
  struct RuleSet {
    std::vector<std::string> names;
    std::vector<bool> defined;
    std::vector<std::vector<std::vector<GrammarElement>>> rules;  // [rule][alt][element]
    std::vector<ByteSet> byte_sets;
    int32_t root = -1;
    std::vector<SpecialToken> special_tokens;
  };
  static StatusOr<std::shared_ptr<const Grammar>> FromRuleSet(RuleSet set, std::string source);

 private:
  Grammar() = default;
  std::vector<GrammarElement> elements_;
  std::vector<std::vector<int32_t>> alts_;
  std::vector<ByteSet> byte_sets_;
  std::vector<std::string> names_;
  int32_t root_ = -1;
  std::string source_;
  std::vector<SpecialToken> special_;
};

}  // namespace qwenrt
