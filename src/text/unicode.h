// Unicode helpers for the tokenizer: lenient UTF-8 decoding (llama.cpp's rules), UTF-8 encoding,
// the code-point classes of the `qwen35` pre-tokenizer (letters, marks, numbers, whitespace) and
// NFC normalization via utf8proc. Grapheme clusters, case folding and other forms are left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qwenrt::unicode {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Decodes the code point starting at s[0] (n >= 1 bytes available) and stores its byte length in
// *len. Follows llama.cpp exactly: a lead byte with enough continuation bytes is decoded
// arithmetically (overlong forms and surrogates are not rejected, 0xF8..0xFF leads are invalid);
// anything else yields U+FFFD and consumes one byte.
uint32_t DecodeLenient(const char* s, size_t n, size_t* len);

// Appends the UTF-8 encoding of `cp` (1-4 bytes). Values above U+10FFFF (which DecodeLenient
// yields for 0xF5..0xF7 leads) become U+FFFD; surrogates are encoded arithmetically like llama.cpp.
void AppendUtf8(uint32_t cp, std::string* out);

// Decodes all of `text` with DecodeLenient into *out (cleared first).
void DecodeAll(std::string_view text, std::vector<uint32_t>* out);

// Length of a strictly valid UTF-8 sequence (RFC 3629: no overlongs, no surrogates, <= U+10FFFF)
// starting at s[0], 0 when s[0..n) starts with an invalid sequence, or -1 when s[0..n) is a valid
// but incomplete prefix of a sequence (more bytes may complete it).
int ValidSequenceLength(const char* s, size_t n);

// Whether `s` is strictly valid UTF-8 all the way (ValidSequenceLength > 0 to the end, no partial
// tail).
bool IsValidUtf8(std::string_view s);

// Appends `s` with every byte that does not start a valid sequence (a partial tail included)
// replaced by U+FFFD, one per byte: text that must pass intact through UTF-8 APIs.
void AppendValidUtf8(std::string_view s, std::string* out);

// Code-point classes used by the pre-tokenizer. `kLetter`/`kMark`/`kNumber` are the general
// categories L*, M*, N*; `kWhitespace` is the regex `\s` set (25 code points, see the spec).
// A code point with none of these flags (punctuation, symbols, controls, unassigned) is what the
// regex calls `[^\s\p{L}\p{M}\p{N}]`.
enum Flags : uint8_t {
  kLetter = 1,
  kMark = 2,
  kNumber = 4,
  kWhitespace = 8,
  kNfcMaybe = 16,    // may change under NFC or take part in a canonical composition
  kNfcTrigger = 32,  // >= U+0300 and kNfcMaybe: its presence means NFC work is needed
};

// Flags of `cp`; 0 for values above U+10FFFF.
uint8_t GetFlags(uint32_t cp);
inline bool IsLetterOrMark(uint32_t cp) { return GetFlags(cp) & (kLetter | kMark); }
inline bool IsNumber(uint32_t cp) { return GetFlags(cp) & kNumber; }
inline bool IsWhitespace(uint32_t cp) { return GetFlags(cp) & kWhitespace; }

// Simple (1:1) Unicode lower-casing.
uint32_t ToLower(uint32_t cp);

// Replaces *cps by its NFC form. Code points that are not Unicode scalar values (surrogates or
// > U+10FFFF, which the lenient decoder can produce) are left untouched and act as boundaries.
// The input is first made stream-safe (UAX #15 docs/spec/qwen35-architecture.md §13): a U+034F
// COMBINING GRAPHEME JOINER is inserted wherever more than 30 non-starters would follow each other,
// which bounds the work per code point (NFC sorts runs of non-starters); text with shorter runs,
// i.e. all real text, is unaffected. `scratch` is reused storage (no allocation once it has grown).
// Returns whether anything changed.
struct NfcScratch {
  std::string utf8;
  std::vector<int32_t> utf32;
  std::vector<uint32_t> out;
};
bool NormalizeNfc(std::vector<uint32_t>* cps, NfcScratch* scratch);

// Convenience for tests and tools: NFC of a UTF-8 string (invalid bytes become U+FFFD).
std::string NfcUtf8(std::string_view text);

// The Unicode version of utf8proc's tables (the overlay in unicode.cpp extends the L/M/N classes
// to the version that generated it).
const char* Utf8procUnicodeVersion();

}  // namespace qwenrt::unicode
