// Python string semantics on UTF-8 strings (see jinja_string.h). Unicode classes come from
// utf8proc so that `repr` escaping and case mapping follow the Unicode tables, as CPython's do.
#include "text/jinja/jinja_string.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "text/unicode.h"

namespace qwenrt::jinja {

char32_t DecodeUtf8(std::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  if (b0 < 0x80) {  // ASCII, the common case in templates: no call
    ++*pos;
    return b0;
  }
  size_t len = 1;
  const uint32_t cp = unicode::DecodeLenient(s.data() + *pos, s.size() - *pos, &len);
  *pos += len;
  return cp;
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::vector<size_t> CodePointOffsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    DecodeUtf8(s, &pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    DecodeUtf8(s, &pos);
    ++n;
  }
  return n;
}

bool IsPySpace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

namespace {

// The code points of `chars`, sorted, so a strip with a long `chars` stays O(n log m).
std::vector<char32_t> StripSet(const std::optional<std::string>& chars) {
  std::vector<char32_t> set;
  if (!chars) return set;
  for (size_t pos = 0; pos < chars->size();) set.push_back(DecodeUtf8(*chars, &pos));
  std::sort(set.begin(), set.end());
  return set;
}

// True when code point `cp` is in the strip set (whitespace when there is no `chars`).
bool InStripSet(char32_t cp, const std::optional<std::string>& chars,
                const std::vector<char32_t>& set) {
  if (!chars) return IsPySpace(cp);
  return std::binary_search(set.begin(), set.end(), cp);
}

bool IsCased(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

template <typename F>
std::string MapCodePoints(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) AppendUtf8(f(DecodeUtf8(s, &pos)), &out);
  return out;
}

char32_t ToUpper(char32_t cp) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<int32_t>(cp)));
}
char32_t ToLower(char32_t cp) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<int32_t>(cp)));
}

}  // namespace

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right) {
  const std::vector<char32_t> set = StripSet(chars);
  size_t begin = 0;
  size_t end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!InStripSet(DecodeUtf8(s, &next), chars, set)) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;  // back up to the lead byte of the last code point
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t probe = start;
      if (!InStripSet(DecodeUtf8(s, &probe), chars, set)) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

size_t PyFind(std::string_view s, std::string_view needle, size_t from) {
  if (from > s.size()) return std::string_view::npos;
  if (needle.empty()) return from;
  // glibc's memmem is the two-way algorithm: linear in the worst case, unlike string_view::find
  // (quadratic for 'a' * n searched for 'a' * (n / 2) + 'b').
  const void* hit = memmem(s.data() + from, s.size() - from, needle.data(), needle.size());
  return hit ? static_cast<size_t>(static_cast<const char*>(hit) - s.data())
             : std::string_view::npos;
}

size_t PyRFind(std::string_view s, std::string_view needle) {
  if (needle.size() > s.size()) return std::string_view::npos;
  if (needle.empty()) return s.size();
  // The last match is the first match in the reversed strings.
  const std::string rs(s.rbegin(), s.rend()), rn(needle.rbegin(), needle.rend());
  const size_t hit = PyFind(rs, rn, 0);
  return hit == std::string_view::npos ? hit : s.size() - hit - needle.size();
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t hit = PyFind(s, *sep, start);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t pos = 0;
  while (true) {
    // Skip whitespace, then take a run of non-whitespace.
    while (pos < s.size()) {
      size_t next = pos;
      if (!IsPySpace(DecodeUtf8(s, &next))) break;
      pos = next;
    }
    if (pos >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      // The remainder keeps its trailing whitespace stripped, as Python does.
      parts.push_back(PyStrip(s.substr(pos), std::nullopt, false, true));
      break;
    }
    const size_t start = pos;
    while (pos < s.size()) {
      size_t next = pos;
      if (IsPySpace(DecodeUtf8(s, &next))) break;
      pos = next;
    }
    parts.emplace_back(s.substr(start, pos - start));
  }
  return parts;
}

std::vector<std::string> PyRSplit(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  if (maxsplit < 0) return PySplit(s, sep, maxsplit);
  std::vector<std::string> parts;
  if (sep) {
    // Matching right to left without overlaps is matching left to right in the reversed strings
    // (one linear pass; repeated rfind calls would each rescan).
    const std::string rs(s.rbegin(), s.rend()), rsep(sep->rbegin(), sep->rend());
    for (std::string& part : PySplit(rs, rsep, maxsplit))
      parts.emplace_back(part.rbegin(), part.rend());
  } else {
    // Whitespace rsplit: mirror of PySplit, one scan from the right over the code point that
    // ends at `end` (a malformed byte counts as one non-space code point, as DecodeUtf8 reads it).
    auto space_before = [&](size_t end, size_t* start) {
      size_t p = end - 1;
      while (p > 0 && end - p < 4 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
      size_t q = p;
      char32_t cp = DecodeUtf8(s, &q);
      if (q != end) {
        p = end - 1;
        cp = 0xFFFD;
      }
      *start = p;
      return IsPySpace(cp);
    };
    size_t end = s.size();
    while (true) {
      size_t start = 0;
      while (end > 0 && space_before(end, &start)) end = start;
      if (end == 0) break;
      if (static_cast<int64_t>(parts.size()) == maxsplit) {
        parts.emplace_back(s.substr(0, end));
        break;
      }
      const size_t word_end = end;
      while (end > 0 && !space_before(end, &start)) end = start;
      parts.emplace_back(s.substr(end, word_end - end));
    }
  }
  return {parts.rbegin(), parts.rend()};
}

std::string PyReplace(std::string_view s, std::string_view old_s, std::string_view new_s,
                      int64_t count) {
  std::string out;
  if (old_s.empty()) {
    const std::vector<size_t> offs = CodePointOffsets(s);
    int64_t done = 0;
    for (size_t k = 0; k + 1 < offs.size(); ++k) {
      if (count < 0 || done < count) {
        out += new_s;
        ++done;
      }
      out += s.substr(offs[k], offs[k + 1] - offs[k]);
    }
    if (count < 0 || done < count) out += new_s;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = PyFind(s, old_s, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += new_s;
    start = hit + old_s.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

uint64_t PyReplaceSize(std::string_view s, std::string_view old_s, std::string_view new_s,
                       int64_t count) {
  uint64_t hits = 0;
  if (old_s.empty()) {
    hits = CodePointCount(s) + 1;
  } else {
    for (size_t p = PyFind(s, old_s, 0); p != std::string_view::npos;
         p = PyFind(s, old_s, p + old_s.size())) {
      if (count >= 0 && hits >= static_cast<uint64_t>(count)) break;
      ++hits;
    }
  }
  if (count >= 0) hits = std::min(hits, static_cast<uint64_t>(count));
  const uint64_t removed = old_s.empty() ? 0 : hits * old_s.size();
  uint64_t added = 0;
  if (__builtin_mul_overflow(hits, static_cast<uint64_t>(new_s.size()), &added)) return UINT64_MAX;
  const uint64_t kept = s.size() - removed;
  return added > UINT64_MAX - kept ? UINT64_MAX : kept + added;
}

std::string PyUpper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const char32_t cp = DecodeUtf8(s, &pos);
    if (cp == 0xDF) {
      out += "SS";  // the one full case mapping users meet in practice (German sharp s)
    } else {
      AppendUtf8(ToUpper(cp), &out);
    }
  }
  return out;
}
std::string PyLower(std::string_view s) { return MapCodePoints(s, ToLower); }

std::string PyTitle(std::string_view s) {
  bool prev_cased = false;
  return MapCodePoints(s, [&](char32_t cp) {
    const char32_t mapped = prev_cased
                                ? ToLower(cp)
                                : static_cast<char32_t>(utf8proc_totitle(static_cast<int32_t>(cp)));
    prev_cased = IsCased(cp);
    return mapped;
  });
}

std::string PyCapitalize(std::string_view s) {
  bool first = true;
  return MapCodePoints(s, [&](char32_t cp) {
    const char32_t mapped =
        first ? static_cast<char32_t>(utf8proc_totitle(static_cast<int32_t>(cp))) : ToLower(cp);
    first = false;
    return mapped;
  });
}

namespace {

// Python's `str.isprintable()` for one code point: everything except the "Other" and
// "Separator" categories, space excepted.
bool IsPrintable(char32_t cp) {
  if (cp == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string PyReprString(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  char buf[16];
  while (pos < s.size()) {
    const char32_t cp = DecodeUtf8(s, &pos);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp < 0x80 || IsPrintable(cp)) {
      AppendUtf8(cp, &out);
    } else if (cp <= 0xFF) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp <= 0xFFFF) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  char buf[8];
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (u < 0x20) {
          std::snprintf(buf, sizeof(buf), "\\u%04x", u);
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string PyFloatRepr(double v, bool json_style) {
  if (std::isnan(v)) return json_style ? "NaN" : "nan";
  if (std::isinf(v)) {
    if (json_style) return v > 0 ? "Infinity" : "-Infinity";
    return v > 0 ? "inf" : "-inf";
  }
  // Shortest round-trip digits in scientific form, e.g. "1.2345e+05" or "5e-324".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exp10);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  // Value = 0.DIGITS * 10^decpt, CPython's convention in float_repr_style 'short'.
  const int decpt = exp10 + 1;
  const int n = static_cast<int>(digits.size());
  if (digits == "0") {
    out += "0.0";
  } else if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out.push_back('.');
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out.push_back(digits[0]);
    if (n > 1) {
      out.push_back('.');
      out += digits.substr(1);
    }
    const int e = decpt - 1;
    std::snprintf(buf, sizeof(buf), "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    out += buf;
  }
  return out;
}

}  // namespace qwenrt::jinja
