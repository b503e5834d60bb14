// The `qwen35` pre-tokenizer: splits a run of code points into the pieces that byte-level BPE
// encodes independently. A hand-written scanner equivalent to the reference regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//   ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (docs/spec/tokenizer-and-chat.md §3.2). Special-token splitting and NFC happen before, in
// tokenizer.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qwenrt {

// A piece [begin, end) of code-point indices.
struct PreToken {
  uint32_t begin, end;
};

// Appends the pieces of `cps` to *out, left to right; together they cover `cps` exactly.
void PreTokenizeQwen35(std::span<const uint32_t> cps, std::vector<PreToken>* out);

}  // namespace qwenrt
