// GBNF -> Grammar::RuleSet. llama.cpp's syntax: `name ::= alternatives`, "literals" and [classes]
// over code points (escapes \n \r \t \\ \" \] \- \xHH \uHHHH \UHHHHHHHH), `.` (any character),
// groups, `|`, and the postfix operators * + ? {m} {m,} {m,n}. A rule continues over newlines until
// the next `name ::=`. Repetitions desugar into right-recursive helper rules (no stack growth in
// the matcher); character classes into UTF-8 byte-range sequences.
#include <chrono>
#include <map>

#include "chat/constraint/grammar.h"
#include "chat/constraint/utf8_ranges.h"
#include "text/unicode.h"

namespace qwenrt {
namespace {

using Elems = std::vector<GrammarElement>;

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GrammarLimits& limits)
      : s_(text), limits_(limits), start_(std::chrono::steady_clock::now()) {}

  Status Parse() {
    while (true) {
      SkipSpace(true);
      if (p_ >= s_.size()) break;
      const size_t name_at = p_;
      std::string name = ReadName();
      if (name.empty()) return Error(p_, "expected a rule name");
      SkipSpace(false);
      if (s_.substr(p_, 3) != "::=") return Error(p_, "expected '::='");
      p_ += 3;
      const int32_t r = RuleId(name);
      if (set_.defined[r]) return Error(name_at, "rule '" + name + "' defined twice");
      set_.defined[r] = true;
      std::vector<Elems> alts;
      QWENRT_RETURN_IF_ERROR(ParseAlternatives(false, &alts));
      set_.rules[r] = std::move(alts);
    }
    auto it = ids_.find("root");
    if (it == ids_.end()) return InvalidArgument("line 1, column 1: no 'root' rule");
    set_.root = it->second;
    for (size_t r = 0; r < set_.rules.size(); ++r) {
      if (!set_.defined[r]) {
        return Error(first_use_[r], "undefined rule '" + set_.names[r] + "'");
      }
    }
    return OkStatus();
  }

  Grammar::RuleSet Take() { return std::move(set_); }

 private:
  Status Error(size_t at, const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    // Messages quote the source: a byte that is not printable ASCII or part of valid UTF-8 is
    // shown as \xNN, so the message stays clean text.
    std::string clean;
    for (size_t i = 0; i < what.size();) {
      const auto u = static_cast<unsigned char>(what[i]);
      const int n = u >= 0x80 ? unicode::ValidSequenceLength(what.data() + i, what.size() - i) : 1;
      if (u >= 0x80 && n > 0) {
        clean.append(what, i, static_cast<size_t>(n));
        i += static_cast<size_t>(n);
        continue;
      }
      if (u >= 0x20 && u < 0x7f) {
        clean.push_back(what[i]);
      } else {
        clean += fmt::format("\\x{:02X}", u);
      }
      ++i;
    }
    return InvalidArgument("line {}, column {}: {}", line, col, clean);
  }

  Status CheckBudget() {
    if (elements_ > limits_.max_elements) {
      return InvalidArgument("grammar too large (more than {} elements)", limits_.max_elements);
    }
    if ((++ticks_ & 1023) == 0) {
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
              .count();
      if (ms > limits_.max_compile_ms)
        return InvalidArgument("grammar compile exceeded {} ms", limits_.max_compile_ms);
    }
    return OkStatus();
  }

  static bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string ReadName() {
    const size_t b = p_;
    while (p_ < s_.size() && IsNameChar(s_[p_])) ++p_;
    return std::string(s_.substr(b, p_ - b));
  }
  // Spaces, tabs and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++p_;
      } else if (c == '#') {
        while (p_ < s_.size() && s_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }
  // After a newline at top level: does the rule end here (end of text or `name ::=` next)?
  bool RuleEndsAhead() {
    const size_t save = p_;
    SkipSpace(true);
    bool ends = p_ >= s_.size();
    if (!ends && IsNameChar(s_[p_])) {
      ReadName();
      SkipSpace(false);
      ends = s_.substr(p_, 3) == "::=";
    }
    p_ = save;
    return ends;
  }

  int32_t RuleId(const std::string& name) {
    auto [it, inserted] = ids_.emplace(name, static_cast<int32_t>(set_.names.size()));
    if (inserted) {
      set_.names.push_back(name);
      set_.defined.push_back(false);
      set_.rules.emplace_back();
      first_use_.push_back(p_);
    }
    return it->second;
  }
  int32_t NewRule(const std::string& hint) {
    const int32_t r = RuleId(hint + "~" + std::to_string(anon_++));
    set_.defined[r] = true;
    return r;
  }
  GrammarElement Bytes(const ByteSet& b) {
    auto [it, inserted] = byte_ids_.emplace(b.bits, static_cast<int32_t>(set_.byte_sets.size()));
    if (inserted) set_.byte_sets.push_back(b);
    return {GrammarElement::Kind::kBytes, it->second};
  }
  static GrammarElement Ref(int32_t r) { return {GrammarElement::Kind::kRule, r}; }

  // One character of the (normalized) set.
  GrammarElement CodepointSet(const CodepointRanges& n) {
    auto it = class_cache_.find(n);
    if (it != class_cache_.end()) return it->second;
    GrammarElement e;
    if (!n.empty() && n.back().second < 0x80) {
      ByteSet b;
      for (auto [lo, hi] : n) b.AddRange(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      e = Bytes(b);
    } else {
      const int32_t r = NewRule("class");
      // Merge sequences that share all but the first byte range into one byte set.
      for (const auto& seq : Utf8Sequences(n)) {
        Elems alt;
        for (auto [lo, hi] : seq) {
          ByteSet b;
          b.AddRange(lo, hi);
          alt.push_back(Bytes(b));
        }
        elements_ += static_cast<int64_t>(alt.size()) + 1;
        set_.rules[r].push_back(std::move(alt));
      }
      e = Ref(r);
    }
    class_cache_.emplace(n, e);
    return e;
  }

  GrammarElement AsOne(const Elems& item) {
    if (item.size() == 1) return item[0];
    const int32_t r = NewRule("seq");
    set_.rules[r].push_back(item);
    elements_ += static_cast<int64_t>(item.size()) + 1;
    return Ref(r);
  }

  // Appends x{min,max} (max < 0: unbounded) to *seq.
  Status Repeat(const Elems& item, int64_t min, int64_t max, Elems* seq) {
    const GrammarElement x = AsOne(item);
    for (int64_t i = 0; i < min; ++i) {
      seq->push_back(x);
      ++elements_;
      QWENRT_RETURN_IF_ERROR(CheckBudget());
    }
    if (max < 0) {
      const int32_t r = NewRule("star");  // r ::= x r | ""
      set_.rules[r].push_back({x, Ref(r)});
      set_.rules[r].push_back({});
      elements_ += 4;
      seq->push_back(Ref(r));
      return OkStatus();
    }
    int32_t prev = -1;  // o_k ::= x o_{k-1} | ""
    for (int64_t k = min; k < max; ++k) {
      const int32_t r = NewRule("opt");
      if (prev < 0) {
        set_.rules[r].push_back({x});
      } else {
        set_.rules[r].push_back({x, Ref(prev)});
      }
      set_.rules[r].push_back({});
      elements_ += 4;
      prev = r;
      QWENRT_RETURN_IF_ERROR(CheckBudget());
    }
    if (prev >= 0) seq->push_back(Ref(prev));
    return OkStatus();
  }

  Status ParseAlternatives(bool nested, std::vector<Elems>* alts) {
    while (true) {
      Elems seq;
      QWENRT_RETURN_IF_ERROR(ParseSequence(nested, &seq));
      alts->push_back(std::move(seq));
      SkipSpace(nested);
      if (!nested && p_ < s_.size() && s_[p_] == '\n' && !RuleEndsAhead()) SkipSpace(true);
      if (p_ < s_.size() && s_[p_] == '|') {
        ++p_;
        continue;
      }
      return OkStatus();
    }
  }

  Status ParseSequence(bool nested, Elems* seq) {
    while (true) {
      SkipSpace(nested);
      if (p_ >= s_.size()) return OkStatus();
      char c = s_[p_];
      if (c == '\n') {
        if (RuleEndsAhead()) return OkStatus();
        SkipSpace(true);
        if (p_ >= s_.size()) return OkStatus();
        c = s_[p_];
      }
      if (c == '|' || c == ')') return OkStatus();
      const size_t item_at = p_;
      Elems item;
      if (c == '"') {
        ++p_;
        std::string bytes;
        while (true) {
          if (p_ >= s_.size() || s_[p_] == '\n')
            return Error(item_at, "unterminated string literal");
          if (s_[p_] == '"') {
            ++p_;
            break;
          }
          uint32_t cp;
          QWENRT_RETURN_IF_ERROR(ReadChar(&cp));
          AppendUtf8(cp, &bytes);
        }
        for (char b : bytes) {
          ByteSet bs;
          bs.Add(static_cast<uint8_t>(b));
          item.push_back(Bytes(bs));
        }
      } else if (c == '[') {
        ++p_;
        bool negate = false;
        if (p_ < s_.size() && s_[p_] == '^') {
          negate = true;
          ++p_;
        }
        CodepointRanges ranges;
        while (true) {
          if (p_ >= s_.size()) return Error(item_at, "unterminated character class");
          if (s_[p_] == ']') {
            ++p_;
            break;
          }
          uint32_t lo, hi;
          QWENRT_RETURN_IF_ERROR(ReadChar(&lo));
          hi = lo;
          if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
            ++p_;
            QWENRT_RETURN_IF_ERROR(ReadChar(&hi));
            if (hi < lo) return Error(item_at, "character range out of order");
          }
          ranges.push_back({lo, hi});
        }
        CodepointRanges n = NormalizeRanges(std::move(ranges));
        if (negate) n = ComplementRanges(n);
        if (n.empty()) return Error(item_at, "empty character class");
        item.push_back(CodepointSet(n));
      } else if (c == '.') {
        ++p_;
        item.push_back(CodepointSet(NormalizeRanges({{0, 0x10FFFF}})));
      } else if (c == '(') {
        ++p_;
        std::vector<Elems> alts;
        QWENRT_RETURN_IF_ERROR(ParseAlternatives(true, &alts));
        SkipSpace(true);
        if (p_ >= s_.size() || s_[p_] != ')') return Error(item_at, "missing ')'");
        ++p_;
        if (alts.size() == 1) {
          item = std::move(alts[0]);
        } else {
          const int32_t r = NewRule("group");
          for (auto& a : alts) elements_ += static_cast<int64_t>(a.size()) + 1;
          set_.rules[r] = std::move(alts);
          item.push_back(Ref(r));
        }
      } else if (IsNameChar(c)) {
        const size_t save = p_;
        std::string name = ReadName();
        SkipSpace(false);
        if (s_.substr(p_, 3) == "::=") {
          p_ = save;
          return nested ? Error(save, "missing ')'") : OkStatus();
        }
        const size_t after = p_;
        p_ = save;
        item.push_back(Ref(RuleId(name)));
        p_ = after;
      } else {
        return Error(p_, std::string("unexpected character '") + c + "'");
      }
      // Postfix operators.
      SkipSpace(false);
      if (p_ < s_.size() && (s_[p_] == '*' || s_[p_] == '+' || s_[p_] == '?' || s_[p_] == '{')) {
        int64_t min = 0, max = -1;
        const char op = s_[p_++];
        if (op == '+') min = 1;
        if (op == '?') max = 1;
        if (op == '{') {
          SkipSpace(false);
          if (!ReadInt(&min)) return Error(p_, "expected a repetition count");
          SkipSpace(false);
          if (p_ < s_.size() && s_[p_] == ',') {
            ++p_;
            SkipSpace(false);
            if (p_ < s_.size() && s_[p_] != '}') {
              if (!ReadInt(&max)) return Error(p_, "expected a repetition count");
              if (max < min) return Error(p_, "repetition {m,n} with n < m");
            }
          } else {
            max = min;
          }
          SkipSpace(false);
          if (p_ >= s_.size() || s_[p_] != '}') return Error(p_, "expected '}'");
          ++p_;
        }
        if (item.empty()) return Error(item_at, "repetition of an empty item");
        QWENRT_RETURN_IF_ERROR(Repeat(item, min, max, seq));
      } else {
        elements_ += static_cast<int64_t>(item.size());
        seq->insert(seq->end(), item.begin(), item.end());
      }
      QWENRT_RETURN_IF_ERROR(CheckBudget());
    }
  }

  bool ReadInt(int64_t* v) {
    const size_t b = p_;
    int64_t x = 0;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      x = x * 10 + (s_[p_] - '0');
      if (x > 100'000'000) return false;
      ++p_;
    }
    *v = x;
    return p_ > b;
  }

  Status ReadHex(int digits, uint32_t* cp) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (p_ >= s_.size()) return Error(p_, "truncated escape");
      const char c = s_[p_++];
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return Error(p_ - 1, "bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    *cp = v;
    return OkStatus();
  }

  // One (possibly escaped) code point of a literal or class.
  Status ReadChar(uint32_t* cp) {
    const unsigned char c = static_cast<unsigned char>(s_[p_]);
    if (c == '\\') {
      ++p_;
      if (p_ >= s_.size()) return Error(p_, "truncated escape");
      const char e = s_[p_++];
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
        case 'x':
          return ReadHex(2, cp);
        case 'u':
          return ReadHex(4, cp);
        case 'U':
          return ReadHex(8, cp);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '.':
        case '\'':
          *cp = static_cast<uint8_t>(e);
          return OkStatus();
        default:
          return Error(p_ - 2, std::string("unknown escape '\\") + e + "'");
      }
    }
    // Decode one UTF-8 character.
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || p_ + len > s_.size()) return Error(p_, "invalid UTF-8");
    uint32_t v = len == 1 ? c : len == 2 ? (c & 31) : len == 3 ? (c & 15) : (c & 7);
    for (int i = 1; i < len; ++i) {
      const unsigned char k = static_cast<unsigned char>(s_[p_ + i]);
      if ((k >> 6) != 2) return Error(p_, "invalid UTF-8");
      v = (v << 6) | (k & 63);
    }
    p_ += len;
    *cp = v;
    return OkStatus();
  }

  std::string_view s_;
  size_t p_ = 0;
  GrammarLimits limits_;
  std::chrono::steady_clock::time_point start_;
  int64_t elements_ = 0;
  int64_t ticks_ = 0;
  int anon_ = 0;
  Grammar::RuleSet set_;
  std::map<std::string, int32_t> ids_;
  std::vector<size_t> first_use_;
  std::map<std::array<uint64_t, 4>, int32_t> byte_ids_;
  std::map<CodepointRanges, GrammarElement> class_cache_;
};

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromGbnf(std::string_view text,
                                                           const GrammarLimits& limits) {
  GbnfParser parser(text, limits);
  QWENRT_RETURN_IF_ERROR(parser.Parse());
  return FromRuleSet(parser.Take(), std::string(text));
}

}  // namespace qwenrt
