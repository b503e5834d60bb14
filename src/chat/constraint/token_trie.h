// The vocabulary as a byte trie, built once per tokenizer and shared by every Matcher: nodes in
// depth-first preorder with the index one past their subtree, so a mask walk skips a whole subtree
// (every token sharing a rejected prefix) with one jump. Special (non-NORMAL) tokens are left out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qwenrt {

class Tokenizer;

class TokenTrie {
 public:
  struct Node {
    int32_t token;        // a token whose bytes end here, -1 if none (more in `extra_tokens`)
    int32_t subtree_end;  // index one past the last node of this subtree
    int32_t rank;         // tokens (nodes with `token` >= 0) before this node in preorder
    uint16_t depth;       // bytes from the root (root = 0)
    uint8_t byte;         // the byte leading into this node
    uint8_t flags;        // kBoundary | kHasNonPlain
  };
  static constexpr uint8_t kBoundary = 1;     // the bytes up to here are complete UTF-8 characters
  static constexpr uint8_t kHasNonPlain = 2;  // the subtree holds a token that is not plain

  // NORMAL and BYTE tokens, as raw bytes (TokenToPiece). Any thread.
  static StatusOr<std::shared_ptr<const TokenTrie>> Build(const Tokenizer& tokenizer);
  // [V] byte strings; empty ones are never allowed (use for excluded ids).
  static StatusOr<std::shared_ptr<const TokenTrie>> FromTokens(std::vector<std::string> tokens);

  int32_t n_vocab() const { return n_vocab_; }
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0] is the root
  // (node, token) pairs for tokens with the same bytes as an earlier one.
  const std::vector<std::pair<int32_t, int32_t>>& extra_tokens() const { return extra_; }
  // The bytes of token `id` ("" when excluded or out of range).
  std::string_view TokenBytes(int32_t id) const;

  // "Plain" tokens: well-formed UTF-8 with no control character, '"' or '\\' (the last character
  // may be cut by the token's end) -- the tokens a JSON string body takes. When the matcher's state
  // maps every plain character back to itself at a character boundary, every plain token below that
  // node is allowed at once: by id for the whole vocabulary (`plain_bits`, [ceil(V/32)]), or for a
  // subtree as the rank range [node.rank, nodes[node.subtree_end].rank) of `plain_rank_bits`
  // ([ceil(R/64)], R = ranked tokens), mapped back to ids through `rank_tokens`.
  const std::vector<uint32_t>& plain_bits() const { return plain_bits_; }
  // The characters of the longest plain token (a cut last character counts as one): a state that
  // takes this many more plain characters takes every plain token. Real vocabularies hold plain
  // tokens of well over 96 characters (runs of '-', '*', spaces).
  int max_plain_chars() const { return max_plain_chars_; }
  // plain_upto(c): [ceil(V/32)] plain tokens of at most c characters, c <= plain_upto_max()
  // (= min(max_plain_chars(), kMaxPlainUpto): the table's memory stays bounded).
  static constexpr int kMaxPlainUpto = 256;
  int plain_upto_max() const { return static_cast<int>(plain_upto_.size()) - 1; }
  const std::vector<uint32_t>& plain_upto(int c) const { return plain_upto_[c]; }
  const std::vector<uint64_t>& plain_rank_bits() const { return plain_rank_bits_; }
  const std::vector<int32_t>& rank_tokens() const { return rank_tokens_; }
  static bool IsPlain(std::string_view bytes);
  // Tokens holding a byte >= 0xF8 (never in UTF-8; grammars' marker bytes, Grammar::SpecialToken).
  const std::vector<int32_t>& marker_byte_tokens() const { return marker_byte_tokens_; }

 private:
  TokenTrie() = default;
  int32_t n_vocab_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::pair<int32_t, int32_t>> extra_;
  std::vector<uint32_t> plain_bits_;
  std::vector<uint64_t> plain_rank_bits_;
  std::vector<std::vector<uint32_t>> plain_upto_;  // [plain_upto_max() + 1][ceil(V/32)]
  int max_plain_chars_ = 0;
  std::vector<int32_t> rank_tokens_;  // [R] token of each rank
  std::vector<int32_t> marker_byte_tokens_;
  std::string blob_;               // all token bytes
  std::vector<uint32_t> offsets_;  // [V + 1] into blob_
};

}  // namespace qwenrt
