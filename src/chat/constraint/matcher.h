// Runs a Grammar over bytes and computes token masks. The matcher is a pushdown automaton whose
// configurations are sets of stacks of grammar positions (a node = position + parent node,
// interned, so stacks share tails). Sets of stacks are interned too and their byte transitions
// memoised, which makes the automaton a lazily built DFA: a mask walk over the TokenTrie costs one
// table lookup per trie node visited, and a rejected byte prunes the node's whole subtree.
//
// Thread safety: one Matcher per generation, one thread at a time; Grammar and TokenTrie are
// shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chat/constraint/flat_id_map.h"
#include "chat/constraint/grammar.h"
#include "chat/constraint/token_trie.h"

namespace qwenrt {

class Matcher {
 public:
  struct Limits {
    int64_t max_nodes = 4'000'000;  // interned stack nodes
    int64_t max_sets = 100'000;     // interned stack sets (DFA states), 1 KiB each
    int64_t max_set_size = 20'000;  // stacks in one set (ambiguous grammars)
    // Parser states one step's closures may expand. Each state is expanded once per step, so
    // this bounds the time of a step; nested nullable repetitions ("(a?){99}" inside "(...){99}")
    // reach a state along very many paths.
    int64_t max_closure_states = 4'000'000;
    size_t mask_cache_bytes = 64 << 20;
  };
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
          const Limits& limits);

  // bits[ceil(V/32)]: bit t set when token t may come next. Resized by the call.
  void FillMask(std::vector<uint32_t>* bits);
  // Advances over token's bytes; false (state unchanged) when the token is not allowed.
  bool Accept(int32_t token);
  // Back to the start of the grammar, keeping the memoised automaton (reuse across generations).
  void Reset() { current_ = start_; }
  // The current state, to come back to with Rewind() (after probing a token). A state is valid on
  // this matcher only while compactions() is unchanged: Compact() renumbers them.
  int32_t state() const { return current_; }
  void Rewind(int32_t state) { current_ = state; }
  // Advances over raw bytes (tests, forced text); false and unchanged when rejected.
  bool AcceptBytes(std::string_view bytes);
  // The text so far is a complete match.
  bool CanEnd() const;
  // Nothing more can follow (only the end is possible).
  bool Done() const;
  // A budget was exceeded: every further byte is rejected (sound: never accepts too much).
  bool failed() const { return failed_; }
  // How often the memoised automaton was dropped to stay within Limits.
  int64_t compactions() const { return compactions_; }

 private:
  struct Node {
    int32_t pos;     // into grammar elements; kBytes element (or any, for continuations)
    int32_t parent;  // node to continue with when this alternative ends; 0 = the empty stack
  };
  struct Set {
    std::vector<int32_t> members;     // sorted ready node ids; 0 = the empty stack (can end)
    std::unique_ptr<int32_t[]> next;  // [256] next set; 0 = dead, -1 = not computed yet
    int32_t uniform = -2;  // the one set every plain character leads to: -2 unknown, -1 none
    int32_t chain = -2;    // plain characters this set can still take (see PlainChain); -2 unknown
  };

  int32_t InternNode(int32_t pos, int32_t parent);
  // Drops every memoised node, set and mask, keeping only the current state (re-interned): the
  // automaton's memory stays bounded on long generations without refusing anything.
  void Compact();
  // Adds the ready stacks reachable from "at `pos`, then continue with `parent`" to *out. Calls
  // between two BeginClosures() form one batch: past kDedupeAfter states, a state already expanded
  // in the batch adds nothing.
  static constexpr int64_t kDedupeAfter = int64_t{1} << 20;
  void Closure(int32_t pos, int32_t parent, std::vector<int32_t>* out, int depth);
  void BeginClosures() {
    if (!closure_seen_.empty()) closure_seen_.clear();
    closure_states_ = 0;
  }
  int32_t InternSet(std::vector<int32_t>* members);
  int32_t Step(int32_t set, uint8_t byte);  // 0 = dead set
  int32_t StepSlow(int32_t set, uint8_t byte);
  bool AcceptBytesOnce(std::string_view bytes);
  int32_t Uniform(int32_t set);
  bool PlainDead(int32_t set);
  int PlainChain(int32_t set);
  bool Closed(int32_t set) { return Step(set, 'a') == set && Uniform(set) == set; }
  void Walk(bool covered_at_root, uint32_t* out);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  Limits limits_;
  const GrammarElement* elems_;
  std::vector<Node> nodes_;
  FlatIdMap node_ids_;  // (pos, parent) -> node id
  std::vector<Set> sets_;
  std::vector<int32_t*> next_;  // [sets] == sets_[i].next.get(), one load in the walk
  std::unordered_map<uint64_t, std::vector<int32_t>> set_ids_;  // hash -> candidate set ids
  std::unordered_map<int32_t, std::vector<uint32_t>> mask_cache_;
  size_t mask_cache_used_ = 0;
  std::vector<int32_t> scratch_;
  std::unordered_set<uint64_t>
      closure_seen_;  // (pos, parent) states this batch expanded (past kDedupeAfter)
  int64_t closure_states_ = 0;
  std::vector<int32_t> walk_;        // [max depth + 1] set per trie depth
  std::vector<uint8_t> covered_;     // [max depth + 1] plain tokens below are already set
  std::vector<uint64_t> rank_mask_;  // [ceil(R/64)] plain tokens allowed, by trie rank
  int32_t start_ = 0;
  int32_t current_ = 0;
  bool failed_ = false;
  bool budget_hit_ = false;
  int64_t compactions_ = 0;  // failed_ because of max_nodes / max_sets: Compact() recovers
};

}  // namespace qwenrt
