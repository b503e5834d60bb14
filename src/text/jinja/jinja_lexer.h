// Tokenizer of the chat-template engine. It splits a Jinja source into template text and the
// tokens inside `{{ }}` and `{% %}` tags, applying whitespace control exactly where Jinja2's lexer
// does: `{%-`/`-%}` (and `{{-`, `{#-` ...) strip whitespace, Hugging Face's `trim_blocks=True`
// drops the first newline after a block or comment tag, `lstrip_blocks=True` drops the spaces and
// tabs before one at the start of a line, and `{%+`/`+%}` switch those two off per tag. Newlines
// are normalised as Jinja2 does and one trailing newline of the source is dropped
// (`keep_trailing_newline=False`). Comments vanish here; `{% raw %}` bodies become text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace qwenrt::jinja {

enum class TokenKind {
  kText,        // literal template text (after whitespace control)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword
  kString,      // string literal, already unescaped
  kInt,
  kFloat,
  kOperator,  // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;  // text, name, operator, or string-literal value
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;  // 1-based position of the token in the source
  int col = 1;
};

// Tokenizes `source`; syntax errors (unterminated tags, strings or comments, stray characters)
// come back as InvalidArgument naming the line and column. Sources over `max_bytes`
// (TemplateLimits::max_template_bytes) are refused.
StatusOr<std::vector<Token>> Tokenize(std::string_view source, size_t max_bytes);

const char* TokenKindName(TokenKind kind);

}  // namespace qwenrt::jinja
