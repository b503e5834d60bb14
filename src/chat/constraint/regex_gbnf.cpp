// Regex -> GBNF: the parsed tree (regex_ast.h) printed as one parenthesised expression.
#include "chat/constraint/regex_gbnf.h"

#include <fmt/format.h>

namespace qwenrt {
namespace {

std::string Print(const Regex& re, int i) {
  const RegexNode& n = re.nodes[i];
  switch (n.kind) {
    case RegexNode::kEmpty:
      return "\"\"";
    case RegexNode::kSet:
      return GbnfClass(n.set);
    case RegexNode::kJsonChar:
      return "jchar";
    case RegexNode::kConcat:
    case RegexNode::kAlt: {
      std::string out = "(";
      for (size_t k = 0; k < n.kids.size(); ++k) {
        if (k) out += n.kind == RegexNode::kAlt ? " | " : " ";
        out += Print(re, n.kids[k]);
      }
      return out + ")";
    }
    case RegexNode::kRepeat: {
      std::string q;
      if (n.min == 0 && n.max < 0) {
        q = "*";
      } else if (n.min == 1 && n.max < 0) {
        q = "+";
      } else if (n.min == 0 && n.max == 1) {
        q = "?";
      } else if (n.max == n.min) {
        q = fmt::format("{{{}}}", n.min);
      } else {
        q = n.max < 0 ? fmt::format("{{{},}}", n.min) : fmt::format("{{{},{}}}", n.min, n.max);
      }
      return fmt::format("({}){}", Print(re, n.kids[0]), q);
    }
  }
  return "\"\"";
}

}  // namespace

std::string GbnfClass(const CodepointRanges& normalized) {
  std::string out = "[";
  auto esc = [&](uint32_t cp) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9')) {
      out.push_back(static_cast<char>(cp));
    } else {
      out += fmt::format("\\U{:08X}", cp);
    }
  };
  for (auto [lo, hi] : normalized) {
    esc(lo);
    if (hi != lo) {
      out.push_back('-');
      esc(hi);
    }
  }
  out.push_back(']');
  return out;
}

Status RegexToGbnf(std::string_view regex, RegexMode mode, std::string* out) {
  Regex re;
  QWENRT_RETURN_IF_ERROR(ParseRegex(regex, mode, &re));
  out->append(fmt::format("({})", Print(re, re.root)));
  return OkStatus();
}

}  // namespace qwenrt
