// Matcher: closure over grammar positions, interned stack sets with memoised byte transitions,
// and the trie walk. Right recursion and the last element of an alternative are tail calls (the
// continuation is the parent itself), so `x*` loops and string bodies keep one constant stack.
#include "chat/constraint/matcher.h"

#include <algorithm>

namespace qwenrt {
namespace {

uint64_t HashMembers(const std::vector<int32_t>& m) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t v : m) {
    h ^= static_cast<uint32_t>(v);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : Matcher(std::move(grammar), std::move(trie), Limits()) {}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                 const Limits& limits)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), limits_(limits) {
  elems_ = grammar_->elements().data();
  nodes_.push_back({-1, 0});  // node 0: the empty stack
  std::vector<int32_t> empty;
  InternSet(&empty);  // set 0: dead
  std::vector<int32_t> start;
  BeginClosures();
  for (int32_t a : grammar_->alternatives()[grammar_->root()]) Closure(a, 0, &start, 0);
  start_ = current_ = InternSet(&start);
  int max_depth = 0;
  for (const auto& n : trie_->nodes()) max_depth = std::max<int>(max_depth, n.depth);
  walk_.assign(static_cast<size_t>(max_depth) + 1, 0);
  covered_.assign(static_cast<size_t>(max_depth) + 1, 0);
}

int32_t Matcher::InternNode(int32_t pos, int32_t parent) {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  bool inserted = false;
  const int32_t id = node_ids_.Emplace(key, static_cast<int32_t>(nodes_.size()), &inserted);
  if (inserted) {
    if (static_cast<int64_t>(nodes_.size()) >= limits_.max_nodes) failed_ = budget_hit_ = true;
    nodes_.push_back({pos, parent});
  }
  return id;
}

void Matcher::Closure(int32_t pos, int32_t parent, std::vector<int32_t>* out, int depth) {
  if (depth > 100000 || failed_) {
    failed_ = true;
    return;
  }
  while (true) {
    // Past the first 2^20 states of a batch (steps of real grammars stay far below, and pay no
    // hashing), a state already expanded is skipped: its stacks are in *out. Duplicates from before
    // are harmless (InternSet dedupes); what matters is that no state is expanded many times.
    if (++closure_states_ > kDedupeAfter) {
      const uint64_t state =
          (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
      if (!closure_seen_.insert(state).second) return;
      if (closure_states_ > limits_.max_closure_states) {
        failed_ = true;
        return;
      }
    }
    const GrammarElement& e = elems_[pos];
    if (e.kind == GrammarElement::Kind::kEnd) {
      if (parent == 0) {
        out->push_back(0);
        return;
      }
      pos = nodes_[parent].pos;
      parent = nodes_[parent].parent;
      continue;
    }
    if (e.kind == GrammarElement::Kind::kBytes) {
      out->push_back(InternNode(pos, parent));
      return;
    }
    const int32_t cont =
        elems_[pos + 1].kind == GrammarElement::Kind::kEnd ? parent : InternNode(pos + 1, parent);
    const auto& alts = grammar_->alternatives()[e.index];
    if (alts.empty()) return;
    for (size_t i = 0; i + 1 < alts.size(); ++i) Closure(alts[i], cont, out, depth + 1);
    pos = alts.back();  // the last alternative in this frame
    parent = cont;
    if (++depth > 100000) {
      failed_ = true;
      return;
    }
  }
}

int32_t Matcher::InternSet(std::vector<int32_t>* m) {
  std::sort(m->begin(), m->end());
  m->erase(std::unique(m->begin(), m->end()), m->end());
  if (static_cast<int64_t>(m->size()) > limits_.max_set_size) {
    failed_ = true;
    return 0;
  }
  const uint64_t h = HashMembers(*m);
  auto& bucket = set_ids_[h];
  for (int32_t id : bucket) {
    if (sets_[id].members == *m) return id;
  }
  if (static_cast<int64_t>(sets_.size()) >= limits_.max_sets) {
    failed_ = budget_hit_ = true;
    return 0;
  }
  Set s;
  s.members = *m;
  ByteSet first;  // bytes some member accepts
  for (int32_t n : s.members) {
    if (n == 0) continue;
    const ByteSet& b = grammar_->byte_sets()[elems_[nodes_[n].pos].index];
    for (int k = 0; k < 4; ++k) first.bits[k] |= b.bits[k];
  }
  s.next.reset(new int32_t[256]);
  for (int b = 0; b < 256; ++b) s.next[b] = first.Has(static_cast<uint8_t>(b)) ? -1 : 0;
  const int32_t id = static_cast<int32_t>(sets_.size());
  bucket.push_back(id);
  next_.push_back(s.next.get());
  sets_.push_back(std::move(s));
  return id;
}

int32_t Matcher::StepSlow(int32_t set, uint8_t byte) {
  if (failed_) return 0;
  scratch_.clear();
  BeginClosures();
  for (int32_t n : sets_[set].members) {
    if (n == 0) continue;
    const Node node = nodes_[n];
    if (!grammar_->byte_sets()[elems_[node.pos].index].Has(byte)) continue;
    Closure(node.pos + 1, node.parent, &scratch_, 0);
  }
  std::vector<int32_t> m = std::move(scratch_);
  const int32_t id = failed_ ? 0 : InternSet(&m);
  scratch_ = std::move(m);
  if (failed_) return 0;
  // The target depends only on which members accept the byte: every byte accepted by exactly the
  // same members leads to the same set (a string body's hundreds of characters: one closure).
  ByteSet group;
  group.bits.fill(~uint64_t{0});
  for (int32_t n : sets_[set].members) {
    if (n == 0) continue;
    const ByteSet& b = grammar_->byte_sets()[elems_[nodes_[n].pos].index];
    const bool takes = b.Has(byte);
    for (int k = 0; k < 4; ++k) group.bits[k] &= takes ? b.bits[k] : ~b.bits[k];
  }
  int32_t* next = sets_[set].next.get();
  for (int k = 0; k < 4; ++k) {
    for (uint64_t w = group.bits[k]; w != 0; w &= w - 1) {
      const int b = k * 64 + __builtin_ctzll(w);
      if (next[b] < 0) next[b] = id;
    }
  }
  next[byte] = id;
  return id;
}

inline int32_t Matcher::Step(int32_t set, uint8_t byte) {
  const int32_t t = next_[set][byte];
  return t >= 0 ? t : StepSlow(set, byte);
}

// The one set that every plain character (TokenTrie::IsPlain) read from `set` leads to, or -1.
// Checked once per set over the ASCII bytes and the well-formed UTF-8 byte-range rows, with the
// intermediate states deduplicated. Uniform(s) == s: a string-body loop, every plain token allowed.
int32_t Matcher::Uniform(int32_t set) {
  if (sets_[set].uniform != -2) return sets_[set].uniform;
  int32_t target = Step(set, 'a');
  bool ok = target != 0;
  for (int b = 0x20; b < 0x80 && ok; ++b) {
    if (b == '"' || b == '\\') continue;
    ok = Step(set, static_cast<uint8_t>(b)) == target;
  }
  struct Row {
    uint8_t lead_lo, lead_hi, second_lo, second_hi;
    int len;
  };
  static constexpr Row kRows[] = {{0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3},
                                  {0xE1, 0xEC, 0x80, 0xBF, 3}, {0xED, 0xED, 0x80, 0x9F, 3},
                                  {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4},
                                  {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4}};
  std::vector<int32_t> frontier, next;
  for (const Row& row : kRows) {
    if (!ok) break;
    frontier = {set};
    for (int pos = 0; pos < row.len && ok; ++pos) {
      const int lo = pos == 0 ? row.lead_lo : pos == 1 ? row.second_lo : 0x80;
      const int hi = pos == 0 ? row.lead_hi : pos == 1 ? row.second_hi : 0xBF;
      next.clear();
      for (int32_t f : frontier) {
        for (int b = lo; b <= hi && ok; ++b) {
          const int32_t t = Step(f, static_cast<uint8_t>(b));
          if (t == 0 || (pos + 1 == row.len && t != target)) ok = false;
          next.push_back(t);
        }
      }
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      frontier.swap(next);
      if (frontier.size() > 64) ok = false;  // not a simple character loop
    }
  }
  if (failed_) ok = false;
  sets_[set].uniform = ok ? target : -1;
  return sets_[set].uniform;
}

// No plain character can be read from `set` (e.g. a counted string at its maximum length).
bool Matcher::PlainDead(int32_t set) {
  for (int b = 0x20; b < 0x80; ++b) {
    if (b == '"' || b == '\\') continue;
    if (Step(set, static_cast<uint8_t>(b)) != 0) return false;
  }
  for (int b = 0xC2; b <= 0xF4; ++b) {
    if (Step(set, static_cast<uint8_t>(b)) != 0) return false;
  }
  return true;
}

// How many more plain characters `set` takes when every plain character moves it along one chain
// of sets (counted strings: jchar{0,n}): k when the chain dies after k characters, the cap
// (TokenTrie::max_plain_chars(): every plain token fits) when it loops or outlasts every token, -1
// when it is not a chain.
int Matcher::PlainChain(int32_t set) {
  if (sets_[set].chain != -2) return sets_[set].chain;
  const int cap = std::max(1, trie_->max_plain_chars());
  int result = -1;
  if (PlainDead(set)) {
    result = 0;
  } else {
    const int32_t t = Uniform(set);
    if (t == set) {
      result = cap;
    } else if (t > 0) {
      // Iterative along the chain (its sets are memoised as they are met).
      std::vector<int32_t> path = {set};  // path[i]: the set after i characters
      int32_t s = t;
      int k = 1;
      int tail = -1;
      bool capped = false;
      while (true) {
        if (sets_[s].chain != -2) {
          tail = sets_[s].chain;
          break;
        }
        if (k >= cap) {
          // No plain token is longer: `set` takes every one. What the later sets on the path take
          // is not known (s may take nothing more: with a bound of cap + 4, path[cap] has 4 left).
          capped = true;
          break;
        }
        const int32_t u = Uniform(s);
        if (u == s) {
          sets_[s].chain = cap;
          tail = sets_[s].chain;
          break;
        }
        if (u <= 0) {
          sets_[s].chain = PlainDead(s) ? 0 : -1;
          tail = sets_[s].chain;
          break;
        }
        path.push_back(s);
        s = u;
        ++k;
      }
      if (capped) {
        sets_[set].chain = cap;  // only path[0] is known to reach the cap
      } else {
        // path[i] takes (len - i) + tail characters.
        for (int i = static_cast<int>(path.size()) - 1; i >= 0; --i) {
          sets_[path[i]].chain =
              tail < 0 ? -1 : std::min<int>(cap, tail + static_cast<int>(path.size()) - i);
        }
      }
      result = sets_[set].chain;
    }
  }
  if (failed_) result = -1;
  sets_[set].chain = result;
  return result;
}

// Preorder walk: a rejected byte skips the node's subtree. Where the state at a character boundary
// maps every plain character back to itself, all plain tokens of the subtree are allowed at once
// (a word-wise OR over their rank range), and below it only subtrees holding non-plain tokens are
// visited.
void Matcher::Walk(bool covered_at_root, uint32_t* out) {
  const auto& nodes = trie_->nodes();
  const int32_t n = static_cast<int32_t>(nodes.size());
  int32_t* walk = walk_.data();
  uint8_t* covered = covered_.data();
  walk[0] = current_;
  covered[0] = covered_at_root;
  const uint64_t* plain = trie_->plain_rank_bits().data();
  bool any_rank = false;
  for (int32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    const bool above = covered[node.depth - 1];
    if (above && !(node.flags & TokenTrie::kHasNonPlain)) {
      i = node.subtree_end;
      continue;
    }
    const int32_t s = walk[node.depth - 1];
    int32_t next = next_[s][node.byte];
    if (next < 0) next = StepSlow(s, node.byte);
    if (next == 0) {
      i = node.subtree_end;
      continue;
    }
    walk[node.depth] = next;
    bool cov = above;
    if (!cov && (node.flags & TokenTrie::kBoundary) && Closed(next)) {
      // OR plain ranks [lo, hi) into rank_mask_.
      const int32_t lo = node.rank, hi = node.subtree_end < n
                                             ? nodes[node.subtree_end].rank
                                             : static_cast<int32_t>(trie_->rank_tokens().size());
      if (!any_rank) {
        rank_mask_.assign(trie_->plain_rank_bits().size(), 0);
        any_rank = true;
      }
      for (int32_t r = lo; r < hi;) {
        const int32_t w = r >> 6;
        const int32_t end = std::min(hi, (w + 1) << 6);
        uint64_t m = ~uint64_t{0};
        if (r & 63) m &= ~uint64_t{0} << (r & 63);
        if (end & 63) m &= ~uint64_t{0} >> (64 - (end & 63));
        rank_mask_[w] |= plain[w] & m;
        r = end;
      }
      cov = true;
    }
    covered[node.depth] = cov;
    if (node.token >= 0) out[node.token >> 5] |= 1u << (node.token & 31);
    ++i;
  }
  if (any_rank) {
    const int32_t* tokens = trie_->rank_tokens().data();
    for (size_t w = 0; w < rank_mask_.size(); ++w) {
      uint64_t m = rank_mask_[w];
      while (m) {
        const int b = __builtin_ctzll(m);
        m &= m - 1;
        const int32_t t = tokens[(w << 6) + b];
        out[t >> 5] |= 1u << (t & 31);
      }
    }
  }
  // Duplicated byte strings: allowed exactly when their twin is.
  for (auto [node, token] : trie_->extra_tokens()) {
    const int32_t twin = nodes[node].token;
    if ((out[twin >> 5] >> (twin & 31)) & 1) out[token >> 5] |= 1u << (token & 31);
  }
}

void Matcher::FillMask(std::vector<uint32_t>* bits) {
  const size_t words = (static_cast<size_t>(trie_->n_vocab()) + 31) / 32;
  auto cached = mask_cache_.find(current_);
  if (cached != mask_cache_.end()) {
    *bits = cached->second;
    return;
  }
  if (failed_ && budget_hit_) Compact();
  if (static_cast<int64_t>(sets_.size()) > limits_.max_sets / 2 ||
      static_cast<int64_t>(nodes_.size()) > limits_.max_nodes / 2) {
    Compact();  // keep room for this walk
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    bits->assign(words, 0);
    if (failed_ || current_ == 0) return;
    // Every plain token is decided at once when the state loops on plain characters or moves
    // along a chain of them; the walk then only visits subtrees holding other tokens.
    bool covered = Closed(current_);
    if (covered) {
      *bits = trie_->plain_bits();
    } else {
      // k >= the longest plain token: all of them; else those of at most k characters, where the
      // table reaches (a longer k and a shorter vocabulary maximum: the exact walk decides).
      const int k = PlainChain(current_);
      if (k >= trie_->max_plain_chars()) {
        *bits = trie_->plain_bits();
        covered = true;
      } else if (k >= 0 && k <= trie_->plain_upto_max()) {
        *bits = trie_->plain_upto(k);
        covered = true;
      }
    }
    Walk(covered, bits->data());
    if (!failed_) break;
    if (!budget_hit_ || attempt == 1) {
      bits->assign(words, 0);
      return;
    }
    Compact();  // the budget ran out inside this walk: once more on a fresh automaton
  }
  if (!grammar_->special_tokens().empty()) {
    // Marker bytes belong to the special tokens alone (no vocabulary token may spell them).
    for (int32_t t : trie_->marker_byte_tokens()) (*bits)[t >> 5] &= ~(1u << (t & 31));
    for (const Grammar::SpecialToken& t : grammar_->special_tokens()) {
      if (t.token < trie_->n_vocab() && Step(current_, t.byte) != 0)
        (*bits)[t.token >> 5] |= 1u << (t.token & 31);
    }
    if (failed_) {
      bits->assign(words, 0);
      return;
    }
  }
  const size_t bytes = words * 4;
  if (mask_cache_used_ + bytes <= limits_.mask_cache_bytes) {
    mask_cache_.emplace(current_, *bits);
    mask_cache_used_ += bytes;
  }
}

void Matcher::Compact() {
  ++compactions_;
  std::vector<std::vector<int32_t>> chains;  // per current stack: positions, top first
  for (int32_t n : sets_[current_].members) {
    std::vector<int32_t> chain;
    for (int32_t k = n; k != 0; k = nodes_[k].parent) chain.push_back(nodes_[k].pos);
    chains.push_back(std::move(chain));
  }
  nodes_.resize(1);
  node_ids_.Clear();
  sets_.resize(1);
  next_.resize(1);
  set_ids_.clear();
  set_ids_[HashMembers({})].push_back(0);
  mask_cache_.clear();
  mask_cache_used_ = 0;
  failed_ = budget_hit_ = false;
  std::vector<int32_t> start;
  BeginClosures();
  for (int32_t a : grammar_->alternatives()[grammar_->root()]) Closure(a, 0, &start, 0);
  start_ = InternSet(&start);
  std::vector<int32_t> members;
  for (const auto& chain : chains) {
    int32_t parent = 0;
    for (size_t i = chain.size(); i-- > 0;) parent = InternNode(chain[i], parent);
    members.push_back(parent);  // 0 for the empty stack
  }
  current_ = InternSet(&members);
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  if (budget_hit_ && failed_) Compact();
  const int32_t before = current_;
  const bool ok = AcceptBytesOnce(bytes);
  if (ok || !(failed_ && budget_hit_)) return ok;
  (void)before;
  Compact();  // the budget ran out midway: retry on a fresh automaton
  return AcceptBytesOnce(bytes);
}

bool Matcher::AcceptBytesOnce(std::string_view bytes) {
  int32_t s = current_;
  for (char c : bytes) {
    s = Step(s, static_cast<uint8_t>(c));
    if (s == 0) return false;
  }
  current_ = s;
  return true;
}

bool Matcher::Accept(int32_t token) {
  const auto& special = grammar_->special_tokens();
  for (const Grammar::SpecialToken& t : special) {
    if (t.token == token)
      return AcceptBytes(std::string_view(reinterpret_cast<const char*>(&t.byte), 1));
  }
  const std::string_view b = trie_->TokenBytes(token);
  if (b.empty()) return false;
  if (!special.empty() && std::any_of(b.begin(), b.end(), [](char c) {
        return static_cast<uint8_t>(c) >= Grammar::kMarkerFirst;
      })) {
    return false;  // a marker byte stands for its special token only
  }
  return AcceptBytes(b);
}

bool Matcher::CanEnd() const {
  const auto& m = sets_[current_].members;
  return !failed_ && !m.empty() && m[0] == 0;
}

bool Matcher::Done() const {
  const auto& m = sets_[current_].members;
  return failed_ || current_ == 0 || (m.size() == 1 && m[0] == 0);
}

}  // namespace qwenrt
