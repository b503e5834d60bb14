// Code point ranges -> UTF-8 byte-range sequences: [U+0080, U+07FF] becomes [C2-DF][80-BF], and so
// on. Lets a character class over code points run on a byte-level matcher. Surrogates excluded.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qwenrt {

using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order

// Sorted, merged, clipped to [0, 0x10FFFF], surrogates [D800, DFFF] removed.
CodepointRanges NormalizeRanges(CodepointRanges ranges);
// The complement of normalized ranges within the Unicode scalar values.
CodepointRanges ComplementRanges(const CodepointRanges& normalized);
// Each sequence: per byte position an inclusive [lo, hi] byte range; their union encodes exactly
// the code points of `normalized`.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> Utf8Sequences(
    const CodepointRanges& normalized);
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace qwenrt
