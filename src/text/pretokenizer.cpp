// The `qwen35` pre-tokenizer (see pretokenizer.h): each step below is one alternative of the
// regex, tried in the regex's order; the first that matches at `pos` wins.
#include "text/pretokenizer.h"

#include "text/unicode.h"

namespace qwenrt {

void PreTokenizeQwen35(std::span<const uint32_t> c, std::vector<PreToken>* out) {
  using namespace unicode;  // NOLINT: Flags and class helpers
  const size_t n = c.size();
  const auto flags = [&](size_t i) { return GetFlags(c[i]); };
  constexpr uint8_t kLM = kLetter | kMark;
  constexpr uint8_t kNotPunct = kWhitespace | kLetter | kMark | kNumber;
  const auto is_newline = [&](size_t i) { return c[i] == '\r' || c[i] == '\n'; };
  const auto emit = [&](size_t b, size_t e) {
    out->push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
  };
  size_t pos = 0;
  while (pos < n) {
    const uint32_t cp = c[pos];
    const uint8_t f = flags(pos);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (cp == '\'' && pos + 1 < n) {
      const uint32_t a = ToLower(c[pos + 1]);
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(pos, pos + 2);
        pos += 2;
        continue;
      }
      if (pos + 2 < n) {
        const uint32_t b = ToLower(c[pos + 2]);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
          emit(pos, pos + 3);
          pos += 3;
          continue;
        }
      }
    }
    // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ : one optional non-letter prefix, then the letter/mark run.
    if (!is_newline(pos) && !(f & kNumber) &&
        ((f & kLM) || (pos + 1 < n && (flags(pos + 1) & kLM)))) {
      size_t end = pos + 1;
      while (end < n && (flags(end) & kLM)) ++end;
      emit(pos, end);
      pos = end;
      continue;
    }
    // \p{N}: digits one by one.
    if (f & kNumber) {
      emit(pos, pos + 1);
      ++pos;
      continue;
    }
    //  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
    const size_t p = cp == ' ' ? pos + 1 : pos;
    if (p < n && !(flags(p) & kNotPunct)) {
      size_t end = p + 1;
      while (end < n && !(flags(end) & kNotPunct)) ++end;
      while (end < n && is_newline(end)) ++end;
      emit(pos, end);
      pos = end;
      continue;
    }
    // \s*[\r\n]+ | \s+(?!\S) | \s+
    if (f & kWhitespace) {
      size_t end = pos;
      size_t last_newline = n;
      while (end < n && (flags(end) & kWhitespace)) {
        if (is_newline(end)) last_newline = end;
        ++end;
      }
      if (last_newline != n) {
        end = last_newline + 1;  // up to and including the run's last \r or \n
      } else if (end - pos > 1 && end < n) {
        --end;  // leave the last space to prefix the following word or punctuation
      }
      emit(pos, end);
      pos = end;
      continue;
    }
    emit(pos, pos + 1);  // unreachable with the classes above; keeps the scan total
    ++pos;
  }
}

}  // namespace qwenrt
