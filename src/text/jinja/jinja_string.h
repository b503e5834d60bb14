// Python string semantics the chat-template engine needs on UTF-8 `std::string`s: code-point
// indexing, `str.strip`/`split`, `isspace`, `repr()` and `json.dumps` escaping, and Python's float
// `repr`. Everything here is pure and allocation-light; none of it knows about template values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/unicode.h"

namespace qwenrt::jinja {

// Decodes one code point at `s[*pos]` (*pos < s.size()) and advances `*pos`, with the rules of
// unicode::DecodeLenient: malformed bytes decode as U+FFFD and advance by one byte, so callers
// never loop forever on bad UTF-8. Encoding is unicode::AppendUtf8 (> U+10FFFF becomes U+FFFD).
char32_t DecodeUtf8(std::string_view s, size_t* pos);
using unicode::AppendUtf8;

// Byte offset of every code point of `s`, plus a final entry `s.size()`. ASCII-only strings
// (the common case) are detected by the callers to avoid building this.
std::vector<size_t> CodePointOffsets(std::string_view s);
size_t CodePointCount(std::string_view s);
bool IsAscii(std::string_view s);

// Python `str.isspace()` for one code point.
bool IsPySpace(char32_t cp);

// Python `str.strip()` / `lstrip()` / `rstrip()`: without `chars`, Unicode whitespace; with it,
// any code point contained in `chars`.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right);

// Position of the first `needle` in `s` at or after `from` (npos when none), in linear time in the
// worst case; PyRFind: the last one. Every substring search of the engine goes through these.
size_t PyFind(std::string_view s, std::string_view needle, size_t from);
size_t PyRFind(std::string_view s, std::string_view needle);

// Python `str.split(sep, maxsplit)`; `sep` absent splits on runs of whitespace. An empty `sep` is
// an error in Python, reported by the caller.
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit);
// Python `str.rsplit(sep, maxsplit)`.
std::vector<std::string> PyRSplit(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit);

// Python `str.replace(old, new, count)` (count < 0: all). An empty `old` inserts `new` between
// code points, as Python does.
std::string PyReplace(std::string_view s, std::string_view old_s, std::string_view new_s,
                      int64_t count);
// The size PyReplace's result will have, found in one scan without building it (saturating), so
// callers refuse a 10^15-byte result before allocating any of it.
uint64_t PyReplaceSize(std::string_view s, std::string_view old_s, std::string_view new_s,
                       int64_t count);

// Python `str.upper()`/`lower()`/`title()`/`capitalize()` per code point (simple case mapping;
// special cases such as 'ß' -> 'SS' are not applied).
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyTitle(std::string_view s);
std::string PyCapitalize(std::string_view s);

// Python `repr(str)`: quotes chosen as Python does, non-printable code points escaped.
std::string PyReprString(std::string_view s);

// `json.dumps(str, ensure_ascii=False)`: `"`, `\`, control characters escaped; the rest verbatim.
void AppendJsonString(std::string_view s, std::string* out);

// Python `repr(float)`: shortest round-trip digits, "1e+16" / "1e-05" exponent forms, "1.0".
// `json_style` spells non-finite values "Infinity"/"-Infinity"/"NaN" (json.dumps) instead of
// "inf"/"-inf"/"nan".
std::string PyFloatRepr(double v, bool json_style);

}  // namespace qwenrt::jinja
