// Regex -> tree (regex_ast.h) by recursive descent; character sets are built as code point ranges,
// so negation and the JSON-string restriction are exact set operations.
#include <fmt/format.h>

#include <cctype>

#include "chat/constraint/regex_ast.h"

namespace qwenrt {
namespace {

CodepointRanges Digits() { return {{'0', '9'}}; }
CodepointRanges Word() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
CodepointRanges Space() {
  return NormalizeRanges({{'\t', '\r'},
                          {' ', ' '},
                          {0xA0, 0xA0},
                          {0x1680, 0x1680},
                          {0x2000, 0x200A},
                          {0x2028, 0x2029},
                          {0x202F, 0x202F},
                          {0x205F, 0x205F},
                          {0x3000, 0x3000},
                          {0xFEFF, 0xFEFF}});
}

CodepointRanges AsciiComplement(const CodepointRanges& r) {
  CodepointRanges out;
  for (auto [lo, hi] : ComplementRanges(NormalizeRanges(r))) {
    if (lo <= 0x7F) out.push_back({lo, std::min<uint32_t>(hi, 0x7F)});
  }
  return out;
}

class RegexParser {
 public:
  RegexParser(std::string_view s, RegexMode mode) : s_(s), mode_(mode) {}

  Status Run(Regex* out) {
    re_ = out;
    re_->nodes.clear();
    QWENRT_RETURN_IF_ERROR(Alternatives(true, &re_->root));
    if (p_ < s_.size()) return Err("unbalanced ')'");
    return OkStatus();
  }

 private:
  Status Err(const std::string& what) const {
    return InvalidArgument("regex: {} at offset {}", what, p_);
  }

  // The set after the JSON-string restriction (mode kJsonString).
  CodepointRanges Restrict(CodepointRanges n) const {
    n = NormalizeRanges(std::move(n));
    if (mode_ != RegexMode::kJsonString) return n;
    CodepointRanges out;
    for (auto [lo, hi] : n) {
      // remove 0..0x1F, '"' (0x22), '\' (0x5C)
      const std::pair<uint32_t, uint32_t> keep[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}};
      for (auto [a, b] : keep) {
        const uint32_t l = std::max(lo, a), h = std::min(hi, b);
        if (l <= h) out.push_back({l, h});
      }
    }
    return NormalizeRanges(out);
  }

  int Add(RegexNode n) {
    re_->nodes.push_back(std::move(n));
    return static_cast<int>(re_->nodes.size()) - 1;
  }

  int AnyJsonChars() {
    RegexNode c;
    c.kind = RegexNode::kJsonChar;
    RegexNode r;
    r.kind = RegexNode::kRepeat;
    r.kids = {Add(std::move(c))};
    return Add(std::move(r));
  }

  Status SetAtom(CodepointRanges n, int* out) {
    n = Restrict(std::move(n));
    if (n.empty()) return Err("character that a JSON string must escape");
    RegexNode node;
    node.kind = RegexNode::kSet;
    node.set = std::move(n);
    *out = Add(std::move(node));
    return OkStatus();
  }

  Status Alternatives(bool top, int* out) {
    RegexNode alt;
    alt.kind = RegexNode::kAlt;
    while (true) {
      int b = -1;
      QWENRT_RETURN_IF_ERROR(Branch(top, &b));
      alt.kids.push_back(b);
      if (p_ < s_.size() && s_[p_] == '|') {
        ++p_;
        continue;
      }
      break;
    }
    *out = alt.kids.size() == 1 ? alt.kids[0] : Add(std::move(alt));
    return OkStatus();
  }

  Status Branch(bool top, int* out) {
    bool anchored_start = false, anchored_end = false;
    if (p_ < s_.size() && s_[p_] == '^') {
      if (!top) return Err("'^' inside a group");
      anchored_start = true;
      ++p_;
    }
    RegexNode seq;
    seq.kind = RegexNode::kConcat;
    while (p_ < s_.size() && s_[p_] != '|' && s_[p_] != ')') {
      if (s_[p_] == '$') {
        ++p_;
        if (!top || (p_ < s_.size() && s_[p_] != '|' && s_[p_] != ')'))
          return Err("'$' not at the end");
        anchored_end = true;
        break;
      }
      if (s_[p_] == '^') return Err("'^' not at the start");
      int atom = -1;
      QWENRT_RETURN_IF_ERROR(Atom(&atom));
      QWENRT_RETURN_IF_ERROR(Quantifier(&atom));
      seq.kids.push_back(atom);
    }
    if (mode_ == RegexMode::kJsonString && top) {
      if (!anchored_start) seq.kids.insert(seq.kids.begin(), AnyJsonChars());
      if (!anchored_end) seq.kids.push_back(AnyJsonChars());
    }
    if (seq.kids.empty()) seq.kind = RegexNode::kEmpty;
    *out = seq.kids.size() == 1 ? seq.kids[0] : Add(std::move(seq));
    return OkStatus();
  }

  Status Quantifier(int* atom) {
    if (p_ >= s_.size()) return OkStatus();
    const char c = s_[p_];
    RegexNode q;
    q.kind = RegexNode::kRepeat;
    if (c == '*' || c == '+' || c == '?') {
      q.min = c == '+' ? 1 : 0;
      q.max = c == '?' ? 1 : -1;
      ++p_;
    } else if (c == '{') {
      size_t e = p_ + 1;
      std::string a, b;
      bool comma = false;
      while (e < s_.size() && s_[e] >= '0' && s_[e] <= '9') a += s_[e++];
      if (e < s_.size() && s_[e] == ',') {
        comma = true;
        ++e;
        while (e < s_.size() && s_[e] >= '0' && s_[e] <= '9') b += s_[e++];
      }
      if (a.empty() && comma && e < s_.size() && s_[e] == '}')
        return Err("quantifier {,n}");                                     // Python: {0,n}
      if (a.empty() || e >= s_.size() || s_[e] != '}') return OkStatus();  // a literal '{'
      if (a.size() > 6 || b.size() > 6) return Err("repetition count too large");
      q.min = std::stoll(a);
      q.max = !comma ? q.min : b.empty() ? -1 : std::stoll(b);
      if (q.max >= 0 && q.max < q.min) return Err("repetition {m,n} with n < m");
      p_ = e + 1;
    } else {
      return OkStatus();
    }
    if (p_ < s_.size() && s_[p_] == '?')
      ++p_;  // lazy: same language
    else if (p_ < s_.size() && s_[p_] == '+')
      return Err("possessive quantifier");
    q.kids = {*atom};
    *atom = Add(std::move(q));
    // a{2}{3} is legal in some engines: a repetition of the repetition.
    if (p_ < s_.size() && (s_[p_] == '*' || s_[p_] == '+' || s_[p_] == '?' || s_[p_] == '{'))
      return Quantifier(atom);
    return OkStatus();
  }

  Status ReadCodepoint(uint32_t* cp) {
    const unsigned char c = static_cast<unsigned char>(s_[p_]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || p_ + len > s_.size()) return Err("invalid UTF-8");
    uint32_t v = len == 1 ? c : len == 2 ? (c & 31) : len == 3 ? (c & 15) : (c & 7);
    for (int i = 1; i < len; ++i) v = (v << 6) | (static_cast<unsigned char>(s_[p_ + i]) & 63);
    p_ += len;
    *cp = v;
    return OkStatus();
  }

  Status Hex(int n, uint32_t* v) {
    *v = 0;
    for (int i = 0; i < n; ++i) {
      if (p_ >= s_.size() || !isxdigit(static_cast<unsigned char>(s_[p_])))
        return Err("bad hex escape");
      const char c = s_[p_++];
      *v = *v * 16 + static_cast<uint32_t>(isdigit(static_cast<unsigned char>(c))
                                               ? c - '0'
                                               : (tolower(c) - 'a' + 10));
    }
    return OkStatus();
  }

  // An escape after '\' (p_ at the character after it): a set (*is_set) or one code point.
  Status Escape(bool in_class, CodepointRanges* set, bool* is_set, uint32_t* cp) {
    if (p_ >= s_.size()) return Err("trailing '\\'");
    const char e = s_[p_++];
    *is_set = true;
    switch (e) {
      case 'd':
        *set = Digits();
        return OkStatus();
      // Negated escapes stay within ASCII: Python's `re` (what validators run) gives \d \w \s
      // Unicode meaning, so a non-ASCII character may be a "digit" there; ASCII is exact for both.
      case 'D':
        *set = AsciiComplement(Digits());
        return OkStatus();
      case 'w':
        *set = Word();
        return OkStatus();
      case 'W':
        *set = AsciiComplement(Word());
        return OkStatus();
      case 's':
        *set = Space();
        return OkStatus();
      case 'S':
        *set = AsciiComplement(Space());
        return OkStatus();
      default:
        break;
    }
    *is_set = false;
    switch (e) {
      case 'n':
        *cp = '\n';
        return OkStatus();
      case 'r':
        *cp = '\r';
        return OkStatus();
      case 't':
        *cp = '\t';
        return OkStatus();
      case 'f':
        *cp = '\f';
        return OkStatus();
      case 'v':
        *cp = '\v';
        return OkStatus();
      case '0':
        *cp = 0;
        return OkStatus();
      case 'x':
        return Hex(2, cp);
      case 'u':
        if (p_ < s_.size() && s_[p_] == '{') return Err("\\u{...} escape");
        return Hex(4, cp);
      case 'b':
        if (in_class) {
          *cp = '\b';
          return OkStatus();
        }
        return Err("word boundary \\b");
      case 'B':
        return Err("word boundary \\B");
      case 'p':
      case 'P':
        return Err("Unicode property escape");
      case 'c':
        return Err("control escape \\c");
      case 'k':
        return Err("backreference");
      default:
        if (e >= '1' && e <= '9') return Err("backreference");
        if (isalnum(static_cast<unsigned char>(e)))
          return Err(std::string("unknown escape \\") + e);
        --p_;
        return ReadCodepoint(cp);
    }
  }

  Status Atom(int* out) {
    const char c = s_[p_];
    if (c == '(') {
      ++p_;
      if (p_ < s_.size() && s_[p_] == '?') {
        ++p_;
        if (p_ < s_.size() && s_[p_] == ':') {
          ++p_;
        } else if (p_ + 1 < s_.size() && s_[p_] == '<' && s_[p_ + 1] != '=' && s_[p_ + 1] != '!') {
          while (p_ < s_.size() && s_[p_] != '>') ++p_;
          ++p_;
        } else if (p_ + 1 < s_.size() && s_[p_] == 'P' && s_[p_ + 1] == '<') {
          while (p_ < s_.size() && s_[p_] != '>') ++p_;
          ++p_;
        } else if (p_ < s_.size() && (s_[p_] == '=' || s_[p_] == '!' || s_[p_] == '<')) {
          return Err("lookaround");
        } else {
          return Err("group flags");
        }
      }
      QWENRT_RETURN_IF_ERROR(Alternatives(false, out));
      if (p_ >= s_.size() || s_[p_] != ')') return Err("missing ')'");
      ++p_;
      return OkStatus();
    }
    if (c == '[') return Class(out);
    if (c == '.') {
      ++p_;
      return SetAtom(
          ComplementRanges(NormalizeRanges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})), out);
    }
    if (c == '*' || c == '+' || c == '?') return Err("nothing to repeat");
    uint32_t cp = 0;
    if (c == '\\') {
      ++p_;
      CodepointRanges set;
      bool is_set;
      QWENRT_RETURN_IF_ERROR(Escape(false, &set, &is_set, &cp));
      if (is_set) return SetAtom(std::move(set), out);
    } else {
      QWENRT_RETURN_IF_ERROR(ReadCodepoint(&cp));
    }
    return SetAtom({{cp, cp}}, out);
  }

  Status Class(int* out) {
    ++p_;
    bool negate = false;
    if (p_ < s_.size() && s_[p_] == '^') {
      negate = true;
      ++p_;
    }
    CodepointRanges ranges;
    bool first = true;
    bool class_escape = false;  // \d \w \s inside: their meaning differs between regex engines
    while (true) {
      if (p_ >= s_.size()) return Err("unterminated class");
      if (s_[p_] == ']' && !first) {
        ++p_;
        break;
      }
      if (s_[p_] == ']' && first) {  // JS: [] matches nothing, []...] is not a thing
        ++p_;
        if (!negate) return Err("empty class");
        return SetAtom({{0, 0x10FFFF}}, out);
      }
      first = false;
      uint32_t lo = 0;
      CodepointRanges set;
      bool is_set = false;
      if (s_[p_] == '\\') {
        ++p_;
        QWENRT_RETURN_IF_ERROR(Escape(true, &set, &is_set, &lo));
      } else if (s_[p_] == '[' && p_ + 1 < s_.size() && s_[p_ + 1] == ':') {
        return Err("POSIX class");
      } else {
        QWENRT_RETURN_IF_ERROR(ReadCodepoint(&lo));
      }
      if (is_set) {
        ranges.insert(ranges.end(), set.begin(), set.end());
        class_escape = true;
        continue;
      }
      uint32_t hi = lo;
      if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
        ++p_;
        if (s_[p_] == '\\') {
          ++p_;
          QWENRT_RETURN_IF_ERROR(Escape(true, &set, &is_set, &hi));
          if (is_set) return Err("class range with a class escape");
        } else {
          QWENRT_RETURN_IF_ERROR(ReadCodepoint(&hi));
        }
        if (hi < lo) return Err("class range out of order");
      }
      ranges.push_back({lo, hi});
    }
    CodepointRanges n = NormalizeRanges(std::move(ranges));
    if (negate) n = class_escape ? AsciiComplement(n) : ComplementRanges(n);
    return SetAtom(std::move(n), out);
  }

  std::string_view s_;
  RegexMode mode_;
  size_t p_ = 0;
  Regex* re_ = nullptr;
};

}  // namespace

Status ParseRegex(std::string_view regex, RegexMode mode, Regex* out) {
  RegexParser p(regex, mode);
  return p.Run(out);
}

}  // namespace qwenrt
