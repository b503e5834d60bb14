// Byte-level BPE tokenizer (see tokenizer.h). Encoding: special-token partition
// (docs/spec/tokenizer-and-chat.md §3.1) -> per raw fragment: lenient UTF-8 decode, optional NFC,
// `qwen35` pre-tokenization (tokenizer-and-chat.md §3.2) -> per piece: BPE over raw bytes with a
// (left id, right id) -> (rank, result) hash table (tokenizer-and-chat.md §3.3,
// tokenizer-and-chat.md §3.4). Token texts are converted from the GPT-2 byte mapping to raw bytes
// once, at load, so neither encoding nor decoding touches the mapped form afterwards.
#include "text/tokenizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <new>
#include <numeric>
#include <utility>

#include "base/guard_alloc.h"
#include "qwenrt/gguf.hpp"
#include "text/pretokenizer.h"
#include "text/unicode.h"

namespace qwenrt {
namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};
// Pieces longer than this are not cached: long letter runs (e.g. CJK sentences without
// spaces) rarely repeat and would fill the cache.
constexpr size_t kMaxCachedPieceBytes = 64;

// GPT-2 byte mapping (tokenizer-and-chat.md §3.3): byte -> code point of its printable stand-in,
// and back.
struct ByteMap {
  std::array<uint32_t, 256> byte_to_cp;
  std::array<int16_t, 0x144> cp_to_byte;  // every stand-in is below U+0144; -1 = none
  ByteMap() {
    cp_to_byte.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_to_cp[b] = printable ? b : next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& GetByteMap() {
  static const ByteMap map;
  return map;
}

// Mapped text -> raw bytes; false if a code point is outside the byte alphabet.
bool UnmapBytes(std::string_view mapped, std::string* raw) {
  const ByteMap& map = GetByteMap();
  raw->clear();
  size_t i = 0;
  while (i < mapped.size()) {
    size_t len = 1;
    const uint32_t cp = unicode::DecodeLenient(mapped.data() + i, mapped.size() - i, &len);
    if (cp >= map.cp_to_byte.size() || map.cp_to_byte[cp] < 0 ||
        (cp == unicode::kReplacementChar && len == 1)) {
      return false;
    }
    raw->push_back(static_cast<char>(map.cp_to_byte[cp]));
    i += len;
  }
  return true;
}

// Texts that are chat markup: always rendered when decoding, whatever their stored type
// (tokenizer-and-chat.md §4).
bool IsMarkupText(std::string_view t) {
  return t == "<think>" || t == "</think>" || t == "<tool_call>" || t == "</tool_call>" ||
         t == "<tool_response>" || t == "</tool_response>";
}

uint64_t MergeHash(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 17; }

}  // namespace

// Per-Encode working storage, reused across the fragments and pieces of one call.
struct Tokenizer::Scratch {
  struct Fragment {
    int32_t token;  // -1: raw text [begin, end)
    size_t begin, end;
  };
  struct HeapItem {
    int32_t rank;
    int32_t left;  // symbol index = byte offset of the left symbol's start
    int32_t left_id, right_id;
  };
  std::vector<Fragment> fragments, next_fragments;
  std::vector<uint32_t> cps;
  unicode::NfcScratch nfc;
  std::vector<PreToken> pieces;
  std::string bytes;
  std::vector<int32_t> piece_ids;
  // BPE symbols: a doubly linked list over the piece's bytes.
  std::vector<int32_t> sym_id, sym_prev, sym_next;
  std::vector<HeapItem> heap;
};

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromVocab(VocabData vocab,
                                                          const TokenizerOptions& options) {
  std::unique_ptr<Tokenizer> t(new (std::nothrow) Tokenizer());
  if (!t) return OutOfMemory("tokenizer");
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc([&] { return t->Init(std::move(vocab), options); }, "tokenizer tables"));
  return t;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::File& file,
                                                         const TokenizerOptions& options) {
  VocabData v;
  gguf::Error err;
  const auto fail = [&](std::string_view what) {
    return BadFormat("tokenizer metadata: {}: {}", what, err.ToString());
  };
  const auto read_strings = [&]() -> Status {
    if (!file.GetString("tokenizer.ggml.model", &v.model, &err)) return fail("model");
    if (!file.GetString("tokenizer.ggml.pre", &v.pre, &err)) return fail("pre-tokenizer");
    if (!file.GetStringArray("tokenizer.ggml.tokens", &v.tokens, &err)) return fail("tokens");
    if (!file.GetI32Array("tokenizer.ggml.token_type", &v.token_types, &err))
      return fail("token types");
    if (!file.Has("tokenizer.ggml.merges"))
      return BadFormat("tokenizer metadata: tokenizer.ggml.merges is missing");
    if (!file.GetStringArray("tokenizer.ggml.merges", &v.merges, &err)) return fail("merges");
    return OkStatus();
  };
  QWENRT_RETURN_IF_ERROR(GuardAlloc(read_strings, "tokenizer metadata"));
  for (auto [key, out] : {std::pair{"tokenizer.ggml.eos_token_id", &v.eos_id},
                          std::pair{"tokenizer.ggml.padding_token_id", &v.padding_id},
                          std::pair{"tokenizer.ggml.bos_token_id", &v.bos_id}}) {
    const gguf::Value* value = file.Find(key);
    if (value == nullptr) continue;
    int64_t id = 0;
    if (!value->ToInt64(&id)) return BadFormat("tokenizer metadata: {} is not an integer", key);
    if (id < 0 || id >= static_cast<int64_t>(v.tokens.size())) {
      return BadFormat("tokenizer metadata: {} = {} is outside the vocabulary (size {})", key, id,
                       v.tokens.size());
    }
    *out = static_cast<int32_t>(id);
  }
  // The chat template is parsed elsewhere (chat_template.h), but a present one of another type
  // must not pass for "no template" (AsString() of a non-string is empty).
  if (const gguf::Value* tmpl = file.Find("tokenizer.chat_template");
      tmpl != nullptr && tmpl->type() != gguf::ValueType::STRING) {
    return BadFormat("tokenizer metadata: tokenizer.chat_template has type {}, expected string",
                     tmpl->is_array() ? "array" : gguf::ValueTypeName(tmpl->type()));
  }
  for (auto [key, out] : {std::pair{"tokenizer.ggml.add_bos_token", &v.add_bos},
                          std::pair{"tokenizer.ggml.add_eos_token", &v.add_eos}}) {
    if (file.Has(key) && !file.GetBool(key, out, &err)) return fail(key);
  }
  return FromVocab(std::move(v), options);
}

Status Tokenizer::Init(VocabData vocab, const TokenizerOptions& options) {
  options_ = options;
  if (vocab.model != "gpt2") {
    return Unsupported("tokenizer.ggml.model {} is not supported (only 'gpt2' byte-level BPE)",
                       gguf::QuoteBytes(vocab.model));
  }
  if (vocab.pre != "qwen35") {
    return Unsupported("tokenizer.ggml.pre {} is not supported (only 'qwen35')",
                       gguf::QuoteBytes(vocab.pre));
  }
  const size_t V = vocab.tokens.size();
  if (V == 0) return BadFormat("tokenizer.ggml.tokens is empty");
  if (V > static_cast<size_t>(INT32_MAX))
    return BadFormat("tokenizer.ggml.tokens has {} entries", V);
  if (vocab.token_types.size() != V) {
    return BadFormat("tokenizer.ggml.token_type has {} entries, tokenizer.ggml.tokens has {}",
                     vocab.token_types.size(), V);
  }
  if (vocab.merges.empty()) return BadFormat("tokenizer.ggml.merges is missing or empty");
  for (auto [name, id] :
       {std::pair{"eos_token_id", vocab.eos_id}, std::pair{"padding_token_id", vocab.padding_id},
        std::pair{"bos_token_id", vocab.bos_id}}) {
    if (id < -1 || id >= static_cast<int64_t>(V)) {
      return BadFormat("tokenizer.ggml.{} = {} is outside the vocabulary (size {})", name, id, V);
    }
  }

  texts_ = std::move(vocab.tokens);
  types_.resize(V);
  pieces_.resize(V);
  control_piece_.assign(V, 0);
  text_to_id_.reserve(V);
  std::unordered_map<std::string, int32_t> raw_to_id;  // NORMAL/BYTE tokens by raw bytes
  raw_to_id.reserve(V);
  std::fill(std::begin(byte_token_), std::end(byte_token_), -1);
  std::string raw;
  for (size_t i = 0; i < V; ++i) {
    const int32_t id = static_cast<int32_t>(i);
    const int32_t type = vocab.token_types[i];
    if (type < 0 || type > 6) return BadFormat("token {} has invalid token_type {}", id, type);
    types_[i] = static_cast<TokenType>(type);
    text_to_id_.emplace(texts_[i], id);  // first id wins for duplicate texts
    switch (types_[i]) {
      case TokenType::kNormal:
      case TokenType::kByte:
        if (!UnmapBytes(texts_[i], &raw)) {
          return BadFormat("token {} ({}) has a character outside the byte-level alphabet", id,
                           gguf::QuoteBytes(texts_[i]));
        }
        pieces_[i] = raw;
        if (raw.size() == 1 && byte_token_[static_cast<uint8_t>(raw[0])] < 0) {
          byte_token_[static_cast<uint8_t>(raw[0])] = id;
        }
        raw_to_id.emplace(raw, id);
        break;
      case TokenType::kUserDefined:
        pieces_[i] = texts_[i];
        specials_.push_back(id);
        break;
      case TokenType::kControl:
      case TokenType::kUnknown:
        pieces_[i] = texts_[i];
        control_piece_[i] = IsMarkupText(texts_[i]) ? 0 : 1;
        specials_.push_back(id);
        break;
      case TokenType::kUnused:
        unused_.push_back(id);
        break;
      case TokenType::kUndefined:
        break;
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (byte_token_[b] < 0) return BadFormat("the vocabulary has no token for byte 0x{:02X}", b);
  }
  // Empty texts can never be matched; longest first so that longer tokens win.
  std::erase_if(specials_, [&](int32_t id) { return texts_[static_cast<size_t>(id)].empty(); });
  std::stable_sort(specials_.begin(), specials_.end(), [&](int32_t a, int32_t b) {
    return texts_[static_cast<size_t>(a)].size() > texts_[static_cast<size_t>(b)].size();
  });
  for (int32_t id : specials_)
    special_first_byte_[static_cast<uint8_t>(texts_[static_cast<size_t>(id)][0])] = true;
  for (int b = 0; b < 256; ++b) {
    if (!special_first_byte_[b]) continue;
    special_single_first_byte_ = special_single_first_byte_ == -1 ? b : -2;
  }
  if (special_single_first_byte_ < 0) special_single_first_byte_ = -1;
  specials_scan_ok_ = std::none_of(specials_.begin(), specials_.end(), [&](int32_t id) {
    const std::string& t = texts_[static_cast<size_t>(id)];
    return std::any_of(t.begin() + 1, t.end(),
                       [&](char c) { return special_first_byte_[static_cast<uint8_t>(c)]; });
  });

  // Merge table: open addressing, load factor <= 1/2.
  const size_t n_merges = vocab.merges.size();
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, 2 * n_merges));
  merges_.assign(capacity, MergeEntry{kEmptyKey, 0, 0});
  merge_mask_ = capacity - 1;
  std::string left_raw, right_raw;
  for (size_t r = 0; r < n_merges; ++r) {
    const std::string& m = vocab.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos)
      return BadFormat("merge {} ({}) has no separating space", r, gguf::QuoteBytes(m));
    if (!UnmapBytes(std::string_view(m).substr(0, sp), &left_raw) ||
        !UnmapBytes(std::string_view(m).substr(sp + 1), &right_raw)) {
      return BadFormat("merge {} ({}) has a character outside the byte-level alphabet", r,
                       gguf::QuoteBytes(m));
    }
    const auto left = raw_to_id.find(left_raw);
    const auto right = raw_to_id.find(right_raw);
    const auto result = raw_to_id.find(left_raw + right_raw);
    if (left == raw_to_id.end() || right == raw_to_id.end() || result == raw_to_id.end()) {
      return BadFormat("merge {} ({}): its parts or their concatenation are not tokens", r,
                       gguf::QuoteBytes(m));
    }
    const uint64_t key =
        (static_cast<uint64_t>(left->second) << 32) | static_cast<uint32_t>(right->second);
    uint64_t slot = MergeHash(key) & merge_mask_;
    while (merges_[slot].key != kEmptyKey && merges_[slot].key != key)
      slot = (slot + 1) & merge_mask_;
    if (merges_[slot].key == key) continue;  // duplicate merge: the lower rank stays
    merges_[slot] = MergeEntry{key, static_cast<int32_t>(r), result->second};
  }

  // Well-known ids and the end-of-generation set (tokenizer-and-chat.md §2.3).
  const auto find = [&](std::string_view text) {
    auto it = text_to_id_.find(text);
    return it == text_to_id_.end() ? -1 : it->second;
  };
  special_.endoftext = find("<|endoftext|>");
  special_.im_start = find("<|im_start|>");
  special_.im_end = find("<|im_end|>");
  special_.think = find("<think>");
  special_.think_end = find("</think>");
  special_.tool_call = find("<tool_call>");
  special_.tool_call_end = find("</tool_call>");
  special_.tool_response = find("<tool_response>");
  special_.tool_response_end = find("</tool_response>");
  special_.eos = vocab.eos_id;
  special_.padding = vocab.padding_id;
  special_.eot = special_.im_end >= 0 ? special_.im_end : special_.endoftext;
  for (std::string_view text : {"<|im_end|>", "<|endoftext|>", "<|fim_pad|>", "<|repo_name|>",
                                "<|file_sep|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"}) {
    if (int32_t id = find(text); id >= 0) eog_.push_back(id);
  }
  if (vocab.eos_id >= 0) eog_.push_back(vocab.eos_id);
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
  return OkStatus();
}

const Tokenizer::MergeEntry* Tokenizer::FindMerge(int32_t left, int32_t right) const {
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  uint64_t slot = MergeHash(key) & merge_mask_;
  while (true) {
    const MergeEntry& e = merges_[slot];
    if (e.key == key) return &e;
    if (e.key == kEmptyKey) return nullptr;
    slot = (slot + 1) & merge_mask_;
  }
}

void Tokenizer::Encode(std::string_view text, SpecialTokens special,
                       std::vector<int32_t>* out) const {
  Scratch s;
  Partition(text, special, &s);
  for (const Scratch::Fragment& f : s.fragments) {
    if (f.token >= 0) {
      out->push_back(f.token);
    } else {
      EncodeRaw(text.substr(f.begin, f.end - f.begin), &s, out);
    }
  }
}

// tokenizer-and-chat.md §3.1: split off special tokens, longest candidates first; token fragments
// are final.
void Tokenizer::Partition(std::string_view text, SpecialTokens special, Scratch* s) const {
  s->fragments.clear();
  const auto wanted = [&](int32_t id) {
    return special == SpecialTokens::kAll ||
           types_[static_cast<size_t>(id)] == TokenType::kUserDefined;
  };
  if (special == SpecialTokens::kNone || specials_.empty()) {
    s->fragments.push_back({-1, 0, text.size()});
    return;
  }
  if (specials_scan_ok_ && !options_.multi_pass_partition) {
    // One scan: at each byte that can start a candidate, take the longest candidate there.
    size_t raw_begin = 0;
    for (size_t pos = 0; pos < text.size();) {
      if (special_single_first_byte_ >= 0) {  // usually '<': let memchr skip ahead
        const void* p =
            std::memchr(text.data() + pos, special_single_first_byte_, text.size() - pos);
        if (p == nullptr) break;
        pos = static_cast<size_t>(static_cast<const char*>(p) - text.data());
      } else if (!special_first_byte_[static_cast<uint8_t>(text[pos])]) {
        ++pos;
        continue;
      }
      int32_t hit = -1;
      for (int32_t id : specials_) {
        const std::string& tok = texts_[static_cast<size_t>(id)];
        if (wanted(id) && text.compare(pos, tok.size(), tok) == 0) {
          hit = id;
          break;
        }
      }
      if (hit < 0) {
        ++pos;
        continue;
      }
      if (pos > raw_begin) s->fragments.push_back({-1, raw_begin, pos});
      const size_t end = pos + texts_[static_cast<size_t>(hit)].size();
      s->fragments.push_back({hit, pos, end});
      pos = raw_begin = end;
    }
    if (raw_begin < text.size()) s->fragments.push_back({-1, raw_begin, text.size()});
    return;
  }
  // General procedure of the spec: one pass over the fragments per candidate.
  s->fragments.push_back({-1, 0, text.size()});
  for (int32_t id : specials_) {
    if (!wanted(id)) continue;
    const std::string& tok = texts_[static_cast<size_t>(id)];
    if (text.find(tok) == std::string_view::npos) continue;
    s->next_fragments.clear();
    for (const Scratch::Fragment& f : s->fragments) {
      if (f.token >= 0) {
        s->next_fragments.push_back(f);
        continue;
      }
      size_t pos = f.begin;
      while (pos < f.end) {
        const size_t hit = text.substr(0, f.end).find(tok, pos);
        if (hit == std::string_view::npos) break;
        if (hit > pos) s->next_fragments.push_back({-1, pos, hit});
        s->next_fragments.push_back({id, hit, hit + tok.size()});
        pos = hit + tok.size();
      }
      if (pos < f.end) s->next_fragments.push_back({-1, pos, f.end});
    }
    s->fragments.swap(s->next_fragments);
  }
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  Encode(text, parse_special ? SpecialTokens::kAll : SpecialTokens::kUserDefined, &ids);
  return ids;
}

void Tokenizer::EncodeRaw(std::string_view text, Scratch* s, std::vector<int32_t>* out) const {
  unicode::DecodeAll(text, &s->cps);
  if (options_.nfc) unicode::NormalizeNfc(&s->cps, &s->nfc);
  s->pieces.clear();
  PreTokenizeQwen35(s->cps, &s->pieces);
  for (const PreToken& p : s->pieces) {
    // Re-encoding the code points (rather than slicing `text`) turns invalid bytes into U+FFFD
    // and applies NFC, exactly as llama.cpp rebuilds its pieces from code points.
    s->bytes.clear();
    for (uint32_t i = p.begin; i < p.end; ++i) unicode::AppendUtf8(s->cps[i], &s->bytes);
    EncodePiece(s->bytes, s, out);
  }
}

void Tokenizer::EncodePiece(std::string_view bytes, Scratch* s, std::vector<int32_t>* out) const {
  if (bytes.size() == 1) {
    out->push_back(byte_token_[static_cast<uint8_t>(bytes[0])]);
    return;
  }
  const bool cacheable = options_.cache_capacity > 0 && bytes.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(bytes);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  s->piece_ids.clear();
  Bpe(bytes, s, &s->piece_ids);
  out->insert(out->end(), s->piece_ids.begin(), s->piece_ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= options_.cache_capacity) cache_.clear();
    cache_.emplace(std::string(bytes), s->piece_ids);
  }
}

// tokenizer-and-chat.md §3.4: repeatedly merge the adjacent pair with the lowest rank (ties:
// leftmost). Pairs sit in a min-heap keyed by (rank, left position); entries made stale by earlier
// merges are detected on pop by comparing the ids they were pushed with.
void Tokenizer::Bpe(std::string_view bytes, Scratch* s, std::vector<int32_t>* out) const {
  const int32_t n = static_cast<int32_t>(bytes.size());
  s->sym_id.resize(static_cast<size_t>(n));
  s->sym_prev.resize(static_cast<size_t>(n));
  s->sym_next.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    s->sym_id[static_cast<size_t>(i)] =
        byte_token_[static_cast<uint8_t>(bytes[static_cast<size_t>(i)])];
    s->sym_prev[static_cast<size_t>(i)] = i - 1;
    s->sym_next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  const auto later = [](const Scratch::HeapItem& a, const Scratch::HeapItem& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  s->heap.clear();
  const auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = s->sym_next[static_cast<size_t>(left)];
    if (right < 0) return;
    const int32_t l_id = s->sym_id[static_cast<size_t>(left)],
                  r_id = s->sym_id[static_cast<size_t>(right)];
    if (const MergeEntry* m = FindMerge(l_id, r_id)) {
      s->heap.push_back({m->rank, left, l_id, r_id});
      std::push_heap(s->heap.begin(), s->heap.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!s->heap.empty()) {
    std::pop_heap(s->heap.begin(), s->heap.end(), later);
    const Scratch::HeapItem item = s->heap.back();
    s->heap.pop_back();
    const size_t left = static_cast<size_t>(item.left);
    const int32_t right = s->sym_next[left];
    if (s->sym_id[left] != item.left_id || right < 0 ||
        s->sym_id[static_cast<size_t>(right)] != item.right_id) {
      continue;  // stale
    }
    s->sym_id[left] = FindMerge(item.left_id, item.right_id)->result;
    const int32_t after = s->sym_next[static_cast<size_t>(right)];
    s->sym_next[left] = after;
    if (after >= 0) s->sym_prev[static_cast<size_t>(after)] = item.left;
    s->sym_id[static_cast<size_t>(right)] = -1;  // dead: no stale entry can match it
    push_pair(s->sym_prev[left]);
    push_pair(item.left);
  }
  for (int32_t i = 0; i >= 0; i = s->sym_next[static_cast<size_t>(i)]) {
    out->push_back(s->sym_id[static_cast<size_t>(i)]);
  }
}

std::string_view Tokenizer::TokenToPiece(int32_t id, bool special) const {
  if (id < 0 || id >= n_vocab()) return {};
  const size_t i = static_cast<size_t>(id);
  if (control_piece_[i] && !special) return {};
  return pieces_[i];
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool special) const {
  std::string out;
  for (int32_t id : ids) out += TokenToPiece(id, special);
  return out;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return texts_[static_cast<size_t>(id)];
}

TokenType Tokenizer::GetTokenType(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUndefined;
  return types_[static_cast<size_t>(id)];
}

std::optional<int32_t> Tokenizer::FindToken(std::string_view text) const {
  auto it = text_to_id_.find(text);
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::IsEog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool special)
    : tokenizer_(&tokenizer), special_(special) {
  pending_.reserve(64);
}

void StreamDecoder::Push(int32_t id, std::string* out) {
  const std::string_view piece = tokenizer_->TokenToPiece(id, special_);
  // Fast path: nothing held and the piece is plain ASCII.
  if (pending_.empty() && std::all_of(piece.begin(), piece.end(),
                                      [](char c) { return static_cast<uint8_t>(c) < 0x80; })) {
    out->append(piece);
    return;
  }
  pending_.append(piece);
  size_t i = 0;
  while (i < pending_.size()) {
    const int len = unicode::ValidSequenceLength(pending_.data() + i, pending_.size() - i);
    if (len < 0) break;  // incomplete character at the end: hold it
    if (len == 0) {
      unicode::AppendUtf8(unicode::kReplacementChar, out);
      ++i;
      continue;
    }
    out->append(pending_, i, static_cast<size_t>(len));
    i += static_cast<size_t>(len);
  }
  pending_.erase(0, i);
}

void StreamDecoder::Flush(std::string* out) {
  if (!pending_.empty()) unicode::AppendUtf8(unicode::kReplacementChar, out);
  pending_.clear();
}

std::vector<std::string> SplitVocabTestFile(std::string_view contents) {
  static constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < contents.size()) {
    const size_t hit = contents.find(kSeparator, pos);
    if (hit == std::string_view::npos) {
      cases.emplace_back(contents.substr(pos));
      break;
    }
    cases.emplace_back(contents.substr(pos, hit - pos));
    pos = hit + kSeparator.size();
  }
  return cases;
}

}  // namespace qwenrt
