// The Qwen3.5 tokenizer: byte-level BPE read from the GGUF's `tokenizer.ggml.*` keys, with the
// `qwen35` pre-tokenizer, special-token partition, NFC normalization (on by default, like the
// model's own tokenizer; off reproduces llama.cpp), decoding and a streaming detokenizer.
// Spec: docs/spec/tokenizer-and-chat.md §1-§5. Chat templates and sampling live elsewhere.
//
// Thread safety: a Tokenizer is immutable after creation except for its internal piece cache,
// which is guarded by a mutex; Encode/Decode may run on any thread concurrently.
// A StreamDecoder is per stream (one thread at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace qwenrt {

namespace gguf {
class File;
}

// `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// The tokenizer metadata as stored in a GGUF (FromGguf reads exactly this). Tests and tools may
// build one directly.
struct VocabData {
  std::string model = "gpt2";        // tokenizer.ggml.model
  std::string pre = "qwen35";        // tokenizer.ggml.pre
  std::vector<std::string> tokens;   // [V] texts; NORMAL ones in byte-level-mapped form
  std::vector<int32_t> token_types;  // [V] TokenType values
  std::vector<std::string> merges;   // "A B" (mapped form), index = rank
  int32_t eos_id = -1;               // -1: absent
  int32_t padding_id = -1;
  int32_t bos_id = -1;
  bool add_bos = false;
  bool add_eos = false;
};

struct TokenizerOptions {
  // Apply NFC before pre-tokenization, as the model's own (Hugging Face) tokenizer does.
  // false reproduces llama.cpp, which does not normalize.
  bool nfc = true;
  // Pieces cached for reuse across Encode calls (0 disables the cache); cleared when full.
  size_t cache_capacity = 1 << 16;
  // Always use the spec's one-pass-per-candidate special-token partition instead of the
  // equivalent single scan (for tests).
  bool multi_pass_partition = false;
};

// Which special tokens Encode recognises in the text (tokenizer-and-chat.md §3.1).
enum class SpecialTokens {
  kNone,         // plain BPE of the whole text (the "ordinary" encoding)
  kUserDefined,  // USER_DEFINED tokens such as <think> only: parse_special = false
  kAll,          // also CONTROL and UNKNOWN tokens such as <|im_start|>: parse_special = true
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model,pre,tokens,token_type,merges,eos_token_id,...}. Errors:
  // BAD_FORMAT for missing/mistyped keys, length mismatches, special ids >= vocab size, merges
  // whose parts are not tokens, a missing single-byte token; UNSUPPORTED for a model other than
  // "gpt2" or a pre-tokenizer other than "qwen35".
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::File& file,
                                                       const TokenizerOptions& options = {});
  static StatusOr<std::unique_ptr<Tokenizer>> FromVocab(VocabData vocab,
                                                        const TokenizerOptions& options = {});

  // Appends the ids of `text` to *out. Never fails: invalid UTF-8 bytes become U+FFFD (like
  // llama.cpp), every byte has a token. BOS/EOS are never added (Qwen3.5 sets neither).
  void Encode(std::string_view text, SpecialTokens special, std::vector<int32_t>* out) const;
  std::vector<int32_t> Encode(std::string_view text, bool parse_special = false) const;

  // Bytes of one token (tokenizer-and-chat.md §4): NORMAL tokens decode to their raw bytes
  // (possibly part of a UTF-8 character), USER_DEFINED ones and the <think>/<tool_call> markers to
  // their text, CONTROL/UNKNOWN ones to their text only when `special`, UNUSED ones to nothing.
  // Out-of-range ids give "".
  std::string_view TokenToPiece(int32_t id, bool special = false) const;
  // Concatenated pieces; no clean-up of spaces (clean_spaces = false).
  std::string Decode(std::span<const int32_t> ids, bool special = false) const;

  int32_t n_vocab() const { return static_cast<int32_t>(texts_.size()); }
  // The token's text as stored in the GGUF ("" if out of range).
  std::string_view TokenText(int32_t id) const;
  TokenType GetTokenType(int32_t id) const;
  // Id of the token whose stored text is exactly `text`.
  std::optional<int32_t> FindToken(std::string_view text) const;

  // Well-known ids, looked up by text at load (-1 when the vocabulary lacks them).
  struct SpecialIds {
    int32_t endoftext = -1, im_start = -1, im_end = -1;
    int32_t think = -1, think_end = -1;
    int32_t tool_call = -1, tool_call_end = -1, tool_response = -1, tool_response_end = -1;
    int32_t eos = -1, eot = -1, padding = -1;
  };
  const SpecialIds& special_ids() const { return special_; }

  // End-of-generation set (tokenizer-and-chat.md §2.3): EOS, <|im_end|>, <|endoftext|> and the FIM
  // pad/repo/file-separator tokens present in the vocabulary.
  bool IsEog(int32_t id) const;
  std::span<const int32_t> eog_ids() const { return eog_; }
  // Ids the model has logits for but the tokenizer never produces (UNUSED padding entries):
  // mask them before sampling.
  std::span<const int32_t> unused_ids() const { return unused_; }

  bool nfc() const { return options_.nfc; }

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

 private:
  struct MergeEntry {
    uint64_t key;  // left id << 32 | right id; kEmptyKey when free
    int32_t rank;
    int32_t result;
  };
  struct Scratch;
  struct StringViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  Tokenizer() = default;
  Status Init(VocabData vocab, const TokenizerOptions& options);
  const MergeEntry* FindMerge(int32_t left, int32_t right) const;
  void Partition(std::string_view text, SpecialTokens special, Scratch* s) const;
  void EncodeRaw(std::string_view text, Scratch* s, std::vector<int32_t>* out) const;
  void EncodePiece(std::string_view bytes, Scratch* s, std::vector<int32_t>* out) const;
  void Bpe(std::string_view bytes, Scratch* s, std::vector<int32_t>* out) const;

  TokenizerOptions options_;
  std::vector<std::string> texts_;      // [V] stored texts
  std::vector<TokenType> types_;        // [V]
  std::vector<std::string> pieces_;     // [V] decoded bytes, special = false
  std::vector<uint8_t> control_piece_;  // [V] 1: piece is the text only when special = true
  std::unordered_map<std::string_view, int32_t> text_to_id_;
  int32_t byte_token_[256] = {};    // id of each single-byte token
  std::vector<MergeEntry> merges_;  // open addressing, power-of-two size
  uint64_t merge_mask_ = 0;
  // Special-token candidates, longest text first (ties by id): ids with their text.
  std::vector<int32_t> specials_;
  // Fast partition (one left-to-right scan) is exact when no candidate contains, after its first
  // byte, a byte that starts a candidate: then matches can only overlap when they start at the
  // same position, where the longest wins in both procedures. True for the Qwen tokens.
  bool specials_scan_ok_ = false;
  bool special_first_byte_[256] = {};
  int special_single_first_byte_ = -1;  // the only first byte of all candidates, or -1
  SpecialIds special_;
  std::vector<int32_t> eog_;
  std::vector<int32_t> unused_;

  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringViewHash, std::equal_to<>>
      cache_;
};

// Streaming detokenizer: turns ids into text as they are generated without ever emitting part
// of a UTF-8 character. Bytes of an incomplete character are held until the next token completes
// it; bytes that can never form a valid character are replaced by U+FFFD, so the output is
// always valid UTF-8 and, for valid input, equals Decode() of all ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool special = false);

  // Appends the text completed by `id` to *out (possibly nothing).
  void Push(int32_t id, std::string* out);
  // Ends the stream: held bytes (an incomplete character) are emitted as U+FFFD.
  void Flush(std::string* out);
  void Reset() { pending_.clear(); }
  // Bytes held back (0..3).
  size_t pending() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool special_;
  std::string pending_;
};

// Splits a `__ggml_vocab_test__`-separated text file (the format of tests/data/tokenizer/*.inp,
// tokenizer-and-chat.md §5) into its cases.
std::vector<std::string> SplitVocabTestFile(std::string_view contents);

}  // namespace qwenrt
