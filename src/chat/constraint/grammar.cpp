// Grammar checks and flattening: undefined rules, left recursion (through nullable prefixes too:
// the pushdown matcher would expand such a rule forever), and the flat element layout the matcher
// walks. The front ends (GBNF, JSON Schema, regex) live in their own files.
#include "chat/constraint/grammar.h"

#include <functional>

#include "chat/constraint/json_schema.h"
#include "chat/constraint/regex_gbnf.h"

namespace qwenrt {

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromRuleSet(RuleSet set, std::string source) {
  const size_t n = set.rules.size();
  for (size_t r = 0; r < n; ++r) {
    if (!set.defined[r]) return InvalidArgument("undefined rule '{}'", set.names[r]);
  }
  if (set.root < 0) return InvalidArgument("no 'root' rule");
  for (const SpecialToken& t : set.special_tokens) {
    if (t.byte < kMarkerFirst || t.token < 0)
      return InvalidArgument("special token {} has marker byte {}", t.token, t.byte);
  }
  // Nullable rules (fixpoint).
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : set.rules[r]) {
        bool all = true;
        for (const auto& e : alt) {
          if (e.kind == GrammarElement::Kind::kBytes || !nullable[e.index]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Left-corner graph: r -> s when s can be the first thing r expands to.
  std::vector<std::vector<int32_t>> left(n);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : set.rules[r]) {
      for (const auto& e : alt) {
        if (e.kind == GrammarElement::Kind::kBytes) break;
        left[r].push_back(e.index);
        if (!nullable[e.index]) break;
      }
    }
  }
  // Iterative DFS for a cycle (0 = new, 1 = on stack, 2 = done).
  std::vector<uint8_t> mark(n, 0);
  std::vector<std::pair<int32_t, size_t>> stack;
  for (size_t start = 0; start < n; ++start) {
    if (mark[start]) continue;
    stack.push_back({static_cast<int32_t>(start), 0});
    mark[start] = 1;
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      if (i < left[r].size()) {
        const int32_t s = left[r][i++];
        if (mark[s] == 1) return InvalidArgument("left recursion through rule '{}'", set.names[s]);
        if (mark[s] == 0) {
          mark[s] = 1;
          stack.push_back({s, 0});
        }
      } else {
        mark[r] = 2;
        stack.pop_back();
      }
    }
  }
  std::shared_ptr<Grammar> g(new Grammar());
  g->alts_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : set.rules[r]) {
      g->alts_[r].push_back(static_cast<int32_t>(g->elements_.size()));
      g->elements_.insert(g->elements_.end(), alt.begin(), alt.end());
      g->elements_.push_back({GrammarElement::Kind::kEnd, 0});
    }
  }
  g->byte_sets_ = std::move(set.byte_sets);
  g->names_ = std::move(set.names);
  g->root_ = set.root;
  g->source_ = std::move(source);
  g->special_ = std::move(set.special_tokens);
  return std::shared_ptr<const Grammar>(std::move(g));
}

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromRegex(std::string_view text,
                                                            const GrammarLimits& limits) {
  std::string body;
  QWENRT_RETURN_IF_ERROR(RegexToGbnf(text, RegexMode::kWholeText, &body));
  return FromGbnf("root ::= " + body + "\n", limits);
}

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromJsonSchema(std::string_view text,
                                                                 const JsonSchemaOptions& options) {
  QWENRT_ASSIGN_OR_RETURN(std::string gbnf, JsonSchemaToGbnf(text, options));
  return FromGbnf(gbnf, options.limits);
}

}  // namespace qwenrt
