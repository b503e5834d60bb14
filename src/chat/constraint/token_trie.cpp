// Trie construction: sort the token byte strings, then emit nodes in preorder while keeping the
// open path; a node's subtree ends when a later string leaves its prefix.
#include "chat/constraint/token_trie.h"

#include <algorithm>
#include <numeric>

#include "text/tokenizer.h"

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

StatusOr<std::shared_ptr<const TokenTrie>> TokenTrie::FromTokens(std::vector<std::string> tokens) {
  std::shared_ptr<TokenTrie> t(new TokenTrie());
  try {
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
    t->nodes_.push_back({-1, 0, 0, 0});
    std::vector<int32_t> path = {0};  // path[d] = node at depth d
    std::string_view prev;
    for (int32_t id : order) {
      const std::string_view s = tokens[id];
      size_t common = 0;
      while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
      while (path.size() > common + 1) {
        t->nodes_[path.back()].subtree_end = static_cast<int32_t>(t->nodes_.size());
        path.pop_back();
      }
      for (size_t d = common; d < s.size(); ++d) {
        path.push_back(static_cast<int32_t>(t->nodes_.size()));
        t->nodes_.push_back({-1, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
      }
      Node& end = t->nodes_[path.back()];
      if (end.token < 0) {
        end.token = id;
      } else {
        t->extra_.push_back({path.back(), id});
      }
      prev = s;
    }
    while (!path.empty()) {
      t->nodes_[path.back()].subtree_end = static_cast<int32_t>(t->nodes_.size());
      path.pop_back();
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemory("token trie: out of memory");
  }
  return std::shared_ptr<const TokenTrie>(std::move(t));
}

std::string_view TokenTrie::TokenBytes(int32_t id) const {
  if (id < 0 || id >= n_vocab_) return {};
  return std::string_view(blob_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

}  // namespace qwenrt
