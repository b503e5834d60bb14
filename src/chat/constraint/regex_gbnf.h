// Regex -> GBNF text (the syntax and modes of regex_ast.h).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/constraint/regex_ast.h"

namespace qwenrt {

// Appends a GBNF expression (a parenthesised group) to *out.
Status RegexToGbnf(std::string_view regex, RegexMode mode, std::string* out);

// A character set as a GBNF class ([a-z\U000000E9]).
std::string GbnfClass(const CodepointRanges& normalized);

}  // namespace qwenrt
