// Tokenizer of the chat-template engine (see jinja_lexer.h). Whitespace control is applied while
// collecting text, so the parser only ever sees the text that will be printed.
#include "text/jinja/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "text/jinja/jinja_string.h"

namespace qwenrt::jinja {

const char* TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kText:
      return "template data";
    case TokenKind::kVarBegin:
      return "begin of print statement";
    case TokenKind::kVarEnd:
      return "end of print statement";
    case TokenKind::kBlockBegin:
      return "begin of statement block";
    case TokenKind::kBlockEnd:
      return "end of statement block";
    case TokenKind::kName:
      return "name";
    case TokenKind::kString:
      return "string";
    case TokenKind::kInt:
      return "integer";
    case TokenKind::kFloat:
      return "float";
    case TokenKind::kOperator:
      return "operator";
    case TokenKind::kEof:
      return "end of template";
  }
  return "token";
}

namespace {

// Jinja2's lexer turns "\r\n" and "\r" into "\n" and (keep_trailing_newline=False) drops one
// final newline. Other Unicode line breaks (U+2028, U+0085, ...) stay as they are.
std::string NormalizeNewlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out.push_back('\n');
    } else {
      out.push_back(s[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  StatusOr<std::vector<Token>> Run() {
    while (pos_ < src_.size()) {
      const size_t tag = FindTagStart(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (strip_next_leading_) {
        text = PyStrip(text, std::nullopt, true, false);
        strip_next_leading_ = false;
      }
      if (tag >= src_.size()) {
        EmitText(std::move(text), pos_);
        pos_ = tag;
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (modifier == '-') {
        text = PyStrip(text, std::nullopt, false, true);
      } else if (kind != '{' && modifier != '+') {
        LstripBlock(&text, tag);
      }
      EmitText(std::move(text), pos_);
      size_t p = tag + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      if (kind == '#') {
        QWENRT_RETURN_IF_ERROR(SkipComment(tag, p));
      } else if (kind == '%' && IsRawTag(p)) {
        QWENRT_RETURN_IF_ERROR(LexRaw(tag, p));
      } else {
        QWENRT_RETURN_IF_ERROR(LexTag(kind == '{', tag, p));
      }
    }
    Token eof;
    eof.kind = TokenKind::kEof;
    SetPos(&eof, src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  void SetPos(Token* t, size_t pos) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    t->line = static_cast<int>(line);
    t->col = static_cast<int>(pos - line_starts_[line - 1] + 1);
  }

  Status Error(size_t pos, std::string_view what) const {
    Token t;
    SetPos(&t, pos);
    return InvalidArgument("template syntax error at line {}, column {}: {}", t.line, t.col, what);
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return src_.size();
  }

  void EmitText(std::string text, size_t pos) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::kText;
    t.text = std::move(text);
    SetPos(&t, pos);
    tokens_.push_back(std::move(t));
  }

  // lstrip_blocks: whitespace between the start of the line and a block/comment tag goes away.
  // As in Jinja2 ("\s+" after the last "\n"), that is any Unicode whitespace, not only spaces.
  void LstripBlock(std::string* text, size_t tag) const {
    size_t run = text->size();
    while (run > 0) {
      size_t start = run - 1;  // back up to the lead byte of the previous code point
      while (start > 0 && (static_cast<unsigned char>((*text)[start]) & 0xC0) == 0x80) --start;
      size_t probe = start;
      const char32_t cp = DecodeUtf8(*text, &probe);
      if (cp == '\n' || !IsPySpace(cp)) break;
      run = start;
    }
    const size_t run_start_in_src = tag - (text->size() - run);
    if (run_start_in_src == 0 || src_[run_start_in_src - 1] == '\n') text->resize(run);
  }

  // After a tag closes: `-` strips the following whitespace; trim_blocks (block/comment tags
  // without `+`) drops one newline.
  void AfterTagEnd(char end_modifier, bool is_block_or_comment) {
    if (end_modifier == '-') {
      strip_next_leading_ = true;
    } else if (is_block_or_comment && end_modifier != '+' && pos_ < src_.size() &&
               src_[pos_] == '\n') {
      ++pos_;
    }
  }

  Status SkipComment(size_t tag, size_t p) {
    const size_t end = src_.find("#}", p);
    if (end == std::string::npos) return Error(tag, "unterminated comment");
    const char modifier =
        (end > p && (src_[end - 1] == '-' || src_[end - 1] == '+')) ? src_[end - 1] : '\0';
    pos_ = end + 2;
    AfterTagEnd(modifier, true);
    return OkStatus();
  }

  size_t SkipSpaces(size_t p) const {
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
    return p;
  }

  // True when the block tag body starting at `p` is `raw` followed by `%}` or `-%}`.
  bool IsRawTag(size_t p) const {
    p = SkipSpaces(p);
    if (src_.compare(p, 3, "raw") != 0) return false;
    p = SkipSpaces(p + 3);
    if (p < src_.size() && src_[p] == '-') ++p;
    return src_.compare(p, 2, "%}") == 0;
  }

  // `{% raw %}...{% endraw %}`: the body is text, untouched except for whitespace control at
  // its two ends. Jinja2 applies no trim_blocks after `{% raw %}` itself.
  Status LexRaw(size_t tag, size_t p) {
    p = SkipSpaces(p) + 3;
    p = SkipSpaces(p);
    const bool strip_after = src_[p] == '-';
    if (strip_after) ++p;
    pos_ = p + 2;
    if (strip_after) strip_next_leading_ = true;
    // Find `{%[-+]? endraw [-+]?%}`.
    size_t search = pos_;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) return Error(tag, "missing end of raw directive");
      size_t q = open + 2;
      const char open_mod =
          (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ? src_[q] : '\0';
      if (open_mod) ++q;
      q = SkipSpaces(q);
      if (src_.compare(q, 6, "endraw") == 0) {
        q = SkipSpaces(q + 6);
        char end_mod = '\0';
        if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_mod = src_[q++];
        if (src_.compare(q, 2, "%}") == 0) {
          std::string body = src_.substr(pos_, open - pos_);
          if (strip_next_leading_) {
            body = PyStrip(body, std::nullopt, true, false);
            strip_next_leading_ = false;
          }
          if (open_mod == '-') {
            body = PyStrip(body, std::nullopt, false, true);
          } else if (open_mod != '+') {
            LstripBlock(&body, open);
          }
          EmitText(std::move(body), pos_);
          pos_ = q + 2;
          AfterTagEnd(end_mod, true);
          return OkStatus();
        }
      }
      search = open + 2;
    }
  }

  Status LexTag(bool is_var, size_t tag, size_t p) {
    Token begin;
    begin.kind = is_var ? TokenKind::kVarBegin : TokenKind::kBlockBegin;
    SetPos(&begin, tag);
    tokens_.push_back(std::move(begin));
    std::vector<char> balance;  // open brackets; tag ends are not recognised inside them
    const char close_char = is_var ? '}' : '%';
    while (true) {
      p = SkipSpaces(p);
      if (p >= src_.size()) {
        return Error(tag, is_var ? "unexpected end of template, expected 'end of print statement'"
                                 : "unexpected end of template, expected 'end of statement block'");
      }
      if (balance.empty()) {
        char end_mod = '\0';
        size_t q = p;
        if ((src_[q] == '-' || (!is_var && src_[q] == '+')) && q + 2 < src_.size() + 0 &&
            src_[q + 1] == close_char && src_[q + 2] == '}') {
          end_mod = src_[q];
          ++q;
        }
        if (q + 1 < src_.size() && src_[q] == close_char && src_[q + 1] == '}') {
          Token end;
          end.kind = is_var ? TokenKind::kVarEnd : TokenKind::kBlockEnd;
          SetPos(&end, p);
          tokens_.push_back(std::move(end));
          pos_ = q + 2;
          AfterTagEnd(end_mod, !is_var);
          return OkStatus();
        }
      }
      Token t;
      SetPos(&t, p);
      const char c = src_[p];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t q = p;
        while (q < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_'))
          ++q;
        t.kind = TokenKind::kName;
        t.text = src_.substr(p, q - p);
        p = q;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        QWENRT_RETURN_IF_ERROR(LexNumber(&p, &t));
      } else if (c == '\'' || c == '"') {
        QWENRT_RETURN_IF_ERROR(LexString(&p, &t));
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (auto two : kTwo) {
          if (src_.compare(p, 2, two) == 0) op = std::string(two);
        }
        if (op.empty()) {
          static constexpr std::string_view kOne = "+-*/%~<>=()[]{},.:|";
          if (kOne.find(c) == std::string_view::npos) {
            return Error(p, fmt::format("unexpected char '{}'", std::string(1, c)));
          }
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") {
          if (balance.size() >= 256) return Error(p, "brackets nested too deeply");
          balance.push_back(op[0]);
        } else if (op == ")" || op == "]" || op == "}") {
          const char expected = op == ")" ? '(' : (op == "]" ? '[' : '{');
          if (balance.empty() || balance.back() != expected) {
            return Error(p, fmt::format("unexpected '{}'", op));
          }
          balance.pop_back();
        }
        t.kind = TokenKind::kOperator;
        t.text = op;
        p += op.size();
      }
      tokens_.push_back(std::move(t));
    }
  }

  // Integers and floats as Jinja2 reads them: digits with optional `_` separators, a fraction
  // and/or an exponent.
  Status LexNumber(size_t* pos, Token* t) {
    size_t p = *pos;
    std::string digits;
    auto take_digits = [&]() {
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                 (src_[p] == '_' && p + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
        if (src_[p] != '_') digits.push_back(src_[p]);
        ++p;
      }
    };
    take_digits();
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
      is_float = true;
      digits.push_back('.');
      ++p;
      take_digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        digits.append(src_, p, q - p);
        p = q;
        take_digits();
      }
    }
    if (is_float) {
      t->kind = TokenKind::kFloat;
      t->float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      t->kind = TokenKind::kInt;
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(digits.c_str(), &end, 10);
      if (errno == ERANGE) return Error(*pos, "integer literal too large");
      t->int_value = v;
    }
    t->text = digits;
    *pos = p;
    return OkStatus();
  }

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A quoted string with Python's `unicode-escape` rules (what Jinja2 applies to literals);
  // unknown escapes keep their backslash.
  Status LexString(size_t* pos, Token* t) {
    const char quote = src_[*pos];
    size_t p = *pos + 1;
    std::string value;
    while (true) {
      if (p >= src_.size()) return Error(*pos, "unterminated string");
      const char c = src_[p];
      if (c == quote) {
        ++p;
        break;
      }
      if (c != '\\') {
        value.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return Error(*pos, "unterminated string");
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
          value.push_back('\'');
          break;
        case '"':
          value.push_back('"');
          break;
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          char32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            const int h = p + k < src_.size() ? HexValue(src_[p + k]) : -1;
            if (h < 0)
              return Error(*pos, fmt::format("truncated \\{} escape in string", std::string(1, e)));
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF) return Error(*pos, "illegal Unicode character in string");
          p += static_cast<size_t>(n);
          AppendUtf8(cp, &value);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7';
                 ++k, ++p) {
              cp = cp * 8 + static_cast<char32_t>(src_[p] - '0');
            }
            AppendUtf8(cp, &value);
          } else {
            value.push_back('\\');
            value.push_back(e);
          }
      }
    }
    t->kind = TokenKind::kString;
    t->text = std::move(value);
    *pos = p;
    return OkStatus();
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  bool strip_next_leading_ = false;
};

}  // namespace

StatusOr<std::vector<Token>> Tokenize(std::string_view source, size_t max_bytes) {
  if (source.size() > max_bytes) {
    return InvalidArgument("template too large ({} bytes; max_template_bytes is {})", source.size(),
                           max_bytes);
  }
  Lexer lexer(NormalizeNewlines(source));
  return lexer.Run();
}

}  // namespace qwenrt::jinja
