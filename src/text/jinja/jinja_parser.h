// Parser of the chat-template engine: tokens (jinja_lexer.h) -> an immutable AST. The grammar and
// operator precedence follow Jinja2's parser (`parser.py`): `x if c else y` < or < and < not <
// comparisons (chained, with `in`/`not in`) < `+ -` < `~` < `* / // %` < `**` < unary `- +` <
// primary with postfix `.attr`, `[index]`, `[a:b:c]`, `(call)`, `| filter` and `is test`.
// Statements: if/elif/else, for (with `if` filter and `else`), set (incl. `ns.attr =`, tuple
// targets and block set), macro, break/continue, filter blocks, with, and Hugging Face's
// `generation` block. Anything else is a syntax error naming line and column.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "text/jinja/jinja_limits.h"
#include "text/jinja/jinja_value.h"

namespace qwenrt::jinja {

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kList,     // children: items
  kTuple,    // children: items
  kDict,     // children: key0, value0, key1, value1, ...
  kGetAttr,  // children: [object]; name: attribute
  kGetItem,  // children: [object, index]
  kSlice,    // children: [object, start, stop, step] (null where omitted)
  kCall,     // children: [callee, positional args...]; kwargs
  kFilter,   // children: [operand (null in filter blocks), args...]; name; kwargs
  kTest,     // children: [operand, args...]; name; kwargs; negated
  kNot,      // children: [x]
  kNeg,      // children: [x]
  kPos,      // children: [x]
  kBinary,   // children: [a, b]; name: + - * / // % **
  kCompare,  // children: [a, b, c, ...]; ops: one per adjacent pair
  kAnd,      // children: [a, b]
  kOr,       // children: [a, b]
  kCond,     // children: [then, condition, else (null: undefined)]
  kConcat,   // children: items joined with `~`
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  int col = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
  int height = 1;  // 1 + the tallest child's height (the parser refuses trees over max_nesting)
};

enum class NodeKind {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // branches (condition, body)...; else_body
  kFor,       // targets in expr [if filter]; body; else_body
  kSet,       // targets (or targets[0].attr) = expr
  kSetBlock,  // {% set targets[0] [| filter] %}body{% endset %}
  kMacro,     // name(params = defaults) body
  kBreak,
  kContinue,
  kScope,        // body in its own scope: `with` (targets = values) and `generation` blocks
  kFilterBlock,  // {% filter f %}body{% endfilter %}: filter is a kFilter expr with null operand
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;                  // kText
  std::string name;                  // kMacro: macro name
  std::string attr;                  // kSet: attribute of targets[0] (`ns.attr = ...`), or empty
  ExprPtr expr;                      // kOutput, kFor (iterable), kSet (value)
  ExprPtr filter;                    // kFor: `if` condition; kSetBlock/kFilterBlock: the filter
  std::vector<std::string> targets;  // kFor/kSet/kSetBlock targets; kMacro/kScope names
  std::vector<ExprPtr> values;       // kMacro: defaults (null = required); kScope: `with` values
  bool tuple_target = false;         // kFor/kSet: targets were written as a tuple
  bool uses_varargs = false;         // kMacro: body reads `varargs` (extra positional args allowed)
  bool uses_kwargs = false;          // kMacro: body reads `kwargs` (unknown keyword args allowed)
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf
  Body body;
  Body else_body;
};

struct Template {
  Body body;
};

// Parses a template source. Errors: InvalidArgument "template syntax error at line L, column C:
// ...". Blocks nested, or expressions nested or chained, deeper than limits.max_nesting are refused
// ("template nested too deeply"), so every walk over the tree (name checks, evaluation, the
// destructor) recurses at most that deep.
StatusOr<std::unique_ptr<Template>> ParseTemplate(std::string_view source,
                                                  const TemplateLimits& limits = TemplateLimits());

}  // namespace qwenrt::jinja
