// Trie construction: sort the token byte strings, then emit nodes in preorder while keeping the
// open path; a node's subtree ends when a later string leaves its prefix.
#include "chat/constraint/token_trie.h"

#include <algorithm>
#include <numeric>

#include "base/guard_alloc.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace qwenrt {

StatusOr<std::shared_ptr<const TokenTrie>> TokenTrie::Build(const Tokenizer& tokenizer) {
  std::vector<std::string> tokens(static_cast<size_t>(tokenizer.n_vocab()));
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    const TokenType t = tokenizer.GetTokenType(id);
    if (t != TokenType::kNormal && t != TokenType::kByte) continue;
    tokens[id] = std::string(tokenizer.TokenToPiece(id, false));
  }
  return FromTokens(std::move(tokens));
}

namespace {

// Preorder trie of the given (sorted by bytes) token ids.
void BuildNodes(const std::vector<std::string>& tokens, const std::vector<int32_t>& order,
                std::vector<TokenTrie::Node>* nodes,
                std::vector<std::pair<int32_t, int32_t>>* extra) {
  nodes->push_back({-1, 0, 0, 0, 0, TokenTrie::kBoundary});
  std::vector<int32_t> path = {0};  // path[d] = node at depth d
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = tokens[id];
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (path.size() > common + 1) {
      (*nodes)[path.back()].subtree_end = static_cast<int32_t>(nodes->size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<int32_t>(nodes->size()));
      // A boundary: the prefix is whole characters, so a plain token's rest is whole plain
      // characters.
      const bool boundary = unicode::IsValidUtf8(s.substr(0, d + 1));
      nodes->push_back({-1, 0, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d]),
                        static_cast<uint8_t>(boundary ? TokenTrie::kBoundary : 0)});
    }
    TokenTrie::Node& end = (*nodes)[path.back()];
    if (end.token < 0) {
      end.token = id;
    } else {
      extra->push_back({path.back(), id});
    }
    prev = s;
  }
  while (!path.empty()) {
    (*nodes)[path.back()].subtree_end = static_cast<int32_t>(nodes->size());
    path.pop_back();
  }
}

}  // namespace

bool TokenTrie::IsPlain(std::string_view b) {
  for (size_t i = 0; i < b.size();) {
    const auto c = static_cast<uint8_t>(b[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') return false;
      ++i;
      continue;
    }
    const int len = unicode::ValidSequenceLength(b.data() + i, b.size() - i);
    if (len <= 0) {
      // A character cut by the end of the token: a state that maps every plain character back to
      // itself (or along a chain) takes each prefix of one too, so the token stays plain.
      return len < 0;  // -1: a valid prefix of a sequence, cut by the token's end
    }
    i += static_cast<size_t>(len);
  }
  return true;
}

StatusOr<std::shared_ptr<const TokenTrie>> TokenTrie::FromTokens(std::vector<std::string> tokens) {
  std::shared_ptr<TokenTrie> t(new TokenTrie());
  const auto build_tables = [&] {
    t->n_vocab_ = static_cast<int32_t>(tokens.size());
    t->offsets_.reserve(tokens.size() + 1);
    for (auto& s : tokens) {
      if (s.size() > 0xFFFF) s.clear();  // depth is 16 bits; no real token is that long
      t->offsets_.push_back(static_cast<uint32_t>(t->blob_.size()));
      t->blob_ += s;
    }
    t->offsets_.push_back(static_cast<uint32_t>(t->blob_.size()));
    std::vector<int32_t> order;
    for (int32_t i = 0; i < t->n_vocab_; ++i) {
      if (!tokens[i].empty()) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return tokens[a] != tokens[b] ? tokens[a] < tokens[b] : a < b;
    });
    BuildNodes(tokens, order, &t->nodes_, &t->extra_);
    t->plain_bits_.assign((tokens.size() + 31) / 32, 0);
    const auto chars_of = [](std::string_view s) {
      int chars = 0;
      for (char c : s) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
      return chars;
    };
    for (int32_t id : order) {
      if (IsPlain(tokens[id]))
        t->max_plain_chars_ = std::max(t->max_plain_chars_, chars_of(tokens[id]));
    }
    const int upto = std::min(t->max_plain_chars_, kMaxPlainUpto);
    t->plain_upto_.assign(static_cast<size_t>(upto) + 1,
                          std::vector<uint32_t>(t->plain_bits_.size(), 0));
    for (int32_t id : order) {
      if (std::any_of(tokens[id].begin(), tokens[id].end(),
                      [](char c) { return static_cast<uint8_t>(c) >= 0xF8; })) {
        t->marker_byte_tokens_.push_back(id);
      }
      if (!IsPlain(tokens[id])) continue;
      t->plain_bits_[id >> 5] |= 1u << (id & 31);
      for (int c = chars_of(tokens[id]); c <= upto; ++c)
        t->plain_upto_[c][id >> 5] |= 1u << (id & 31);
    }
    // Ranks in preorder, plain flags by rank, and which subtrees hold a non-plain token.
    auto& nodes = t->nodes_;
    int32_t rank = 0;
    for (auto& n : nodes) {
      n.rank = rank;
      if (n.token >= 0) {
        t->rank_tokens_.push_back(n.token);
        ++rank;
      }
    }
    t->plain_rank_bits_.assign((static_cast<size_t>(rank) + 64) / 64, 0);
    for (int32_t r = 0; r < rank; ++r) {
      if (IsPlain(tokens[t->rank_tokens_[r]]))
        t->plain_rank_bits_[r >> 6] |= uint64_t{1} << (r & 63);
    }
    for (int32_t i = static_cast<int32_t>(nodes.size()) - 1; i >= 0; --i) {
      if (nodes[i].token >= 0 && !IsPlain(tokens[nodes[i].token])) nodes[i].flags |= kHasNonPlain;
      // Children of i are nodes i+1.. in its subtree; propagate from each direct child.
      for (int32_t c = i + 1; c < nodes[i].subtree_end; c = nodes[c].subtree_end) {
        if (nodes[c].flags & kHasNonPlain) {
          nodes[i].flags |= kHasNonPlain;
          break;
        }
      }
    }
    for (auto [node, id] : t->extra_) {
      if (!IsPlain(tokens[id])) nodes[node].flags |= kHasNonPlain;  // ancestors: twins share bytes
    }
  };
  QWENRT_RETURN_IF_ERROR(GuardAlloc(build_tables, "token trie: out of memory"));
  return std::shared_ptr<const TokenTrie>(std::move(t));
}

std::string_view TokenTrie::TokenBytes(int32_t id) const {
  if (id < 0 || id >= n_vocab_) return {};
  return std::string_view(blob_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

}  // namespace qwenrt
