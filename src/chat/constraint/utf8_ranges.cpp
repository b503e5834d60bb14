// UTF-8 range splitting: split a range at the encoded-length boundaries, then at continuation-byte
// boundaries until each piece is a product of byte ranges.
#include "chat/constraint/utf8_ranges.h"

#include <algorithm>

namespace qwenrt {

CodepointRanges NormalizeRanges(CodepointRanges r) {
  CodepointRanges clipped;
  for (auto [lo, hi] : r) {
    if (lo > hi) continue;
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo > hi) continue;
    if (lo < 0xD800 && hi >= 0xD800) {
      clipped.push_back({lo, 0xD7FF});
      if (hi > 0xDFFF) clipped.push_back({0xE000, hi});
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi > 0xDFFF) clipped.push_back({0xE000, hi});
    } else {
      clipped.push_back({lo, hi});
    }
  }
  std::sort(clipped.begin(), clipped.end());
  CodepointRanges out;
  for (auto& p : clipped) {
    if (!out.empty() && p.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, p.second);
    } else {
      out.push_back(p);
    }
  }
  return out;
}

CodepointRanges ComplementRanges(const CodepointRanges& n) {
  CodepointRanges out;
  uint32_t next = 0;
  for (auto [lo, hi] : n) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return NormalizeRanges(out);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 63)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 63)));
    out->push_back(static_cast<char>(0x80 | (cp & 63)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 63)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 63)));
    out->push_back(static_cast<char>(0x80 | (cp & 63)));
  }
}

namespace {

void Split(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  if (lo > hi) return;
  for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= max && hi > max) {
      Split(lo, max, out);
      Split(max + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out->push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Split(lo, lo | m, out);
        Split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Split(lo, (hi & ~m) - 1, out);
        Split(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (size_t k = 0; k < a.size(); ++k) {
    seq.push_back({static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])});
  }
  out->push_back(std::move(seq));
}

}  // namespace

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> Utf8Sequences(const CodepointRanges& n) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> out;
  for (auto [lo, hi] : n) Split(lo, hi, &out);
  return out;
}

}  // namespace qwenrt
