// Parser of the chat-template engine (see jinja_parser.h): recursive descent over the token list,
// one function per precedence level as in Jinja2's parser, with a depth guard on every recursion
// and a height check on every node built (chains such as `a + b + c` are built in loops, so only
// the height sees them).
#include "text/jinja/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

#include "text/jinja/jinja_builtins.h"
#include "text/jinja/jinja_lexer.h"

namespace qwenrt::jinja {
namespace {

bool UsesName(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == ExprKind::kName && e->name == name) return true;
  for (const auto& c : e->children) {
    if (UsesName(c.get(), name)) return true;
  }
  for (const auto& [k, v] : e->kwargs) {
    if (UsesName(v.get(), name)) return true;
  }
  return false;
}

// True when `name` is read anywhere in `body` (nested macros included, as Jinja2's analysis does).
bool UsesName(const Body& body, std::string_view name) {
  for (const auto& n : body) {
    if (UsesName(n->expr.get(), name) || UsesName(n->filter.get(), name)) return true;
    for (const auto& v : n->values) {
      if (UsesName(v.get(), name)) return true;
    }
    for (const auto& [cond, branch] : n->branches) {
      if (UsesName(cond.get(), name) || UsesName(branch, name)) return true;
    }
    if (UsesName(n->body, name) || UsesName(n->else_body, name)) return true;
  }
  return false;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_nesting)
      : toks_(std::move(tokens)), max_nesting_(max_nesting) {}

  StatusOr<std::unique_ptr<Template>> Run() {
    auto tmpl = std::make_unique<Template>();
    std::string end_tag;
    QWENRT_RETURN_IF_ERROR(ParseBody(&tmpl->body, {}, &end_tag));
    return tmpl;
  }

 private:
  // Depth guard shared by statement and expression recursion.
  class DepthGuard {
   public:
    explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
    ~DepthGuard() { --*depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    int* depth_;
  };

  const Token& Peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kOperator && Peek(ahead).text == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kName && Peek(ahead).text == name;
  }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kName:
      case TokenKind::kOperator:
        return "'" + t.text + "'";
      case TokenKind::kString:
        return "'string'";  // Jinja2's describe_token wording
      case TokenKind::kInt:
        return "'integer'";
      case TokenKind::kFloat:
        return "'float'";
      default:
        return std::string("'") + TokenKindName(t.kind) + "'";
    }
  }

  Status ErrorAt(const Token& t, std::string_view what) const {
    return InvalidArgument("template syntax error at line {}, column {}: {}", t.line, t.col, what);
  }

  Status DepthError() const { return ErrorAt(Peek(), "template nested too deeply"); }

  Status Expect(TokenKind kind, std::string_view op_text = {}) {
    const Token& t = Peek();
    if (t.kind != kind || (!op_text.empty() && t.text != op_text)) {
      const std::string want = op_text.empty() ? TokenKindName(kind) : std::string(op_text);
      return ErrorAt(t, fmt::format("expected token '{}', got {}", want, Describe(t)));
    }
    Next();
    return OkStatus();
  }

  StatusOr<std::string> ExpectName() {
    const Token& t = Peek();
    if (t.kind != TokenKind::kName)
      return ErrorAt(t, fmt::format("expected a name, got {}", Describe(t)));
    return Next().text;
  }

  // Sets `e`'s height from its children; trees taller than max_nesting are refused here, while
  // they are built, because every later walk over them recurses per level.
  Status Measure(Expr* e) const {
    int h = 0;
    for (const auto& c : e->children) {
      if (c) h = std::max(h, c->height);
    }
    for (const auto& [k, v] : e->kwargs) h = std::max(h, v->height);
    e->height = h + 1;
    if (e->height > max_nesting_) {
      return InvalidArgument(
          "template syntax error at line {}, column {}: template nested too deeply "
          "(expression chain or nesting deeper than max_nesting = {})",
          e->line, e->col, max_nesting_);
    }
    return OkStatus();
  }

  ExprPtr MakeExpr(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  // ---- statements ----

  // Parses nodes until `{% name %}` with name in `end_names` (consumed up to the name; the name
  // is returned in `*end_tag`), or until the end of the template when `end_names` is empty.
  Status ParseBody(Body* body, std::initializer_list<std::string_view> end_names,
                   std::string* end_tag) {
    DepthGuard guard(&depth_);
    if (depth_ > max_nesting_) return DepthError();
    while (true) {
      const Token& t = Peek();
      switch (t.kind) {
        case TokenKind::kEof: {
          if (end_names.size() == 0) return OkStatus();
          std::string names;
          for (auto n : end_names) names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
          return ErrorAt(t, fmt::format("unexpected end of template; looking for {}", names));
        }
        case TokenKind::kText: {
          auto node = std::make_unique<Node>();
          node->kind = NodeKind::kText;
          node->line = t.line;
          node->text = Next().text;
          body->push_back(std::move(node));
          break;
        }
        case TokenKind::kVarBegin: {
          auto node = std::make_unique<Node>();
          node->kind = NodeKind::kOutput;
          node->line = Next().line;
          QWENRT_ASSIGN_OR_RETURN(node->expr, ParseTuple());
          QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kVarEnd));
          body->push_back(std::move(node));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = Peek(1);
          if (name.kind == TokenKind::kName) {
            for (auto n : end_names) {
              if (name.text == n) {
                Next();
                *end_tag = Next().text;
                return OkStatus();
              }
            }
          }
          Next();
          QWENRT_RETURN_IF_ERROR(ParseStatement(body));
          break;
        }
        default:
          return ErrorAt(t, fmt::format("unexpected {}", Describe(t)));
      }
    }
  }

  Status ParseStatement(Body* body) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kName) return ErrorAt(t, "tag name expected");
    const std::string tag = t.text;
    auto node = std::make_unique<Node>();
    node->line = t.line;
    Next();
    if (tag == "if") {
      QWENRT_RETURN_IF_ERROR(ParseIf(node.get()));
    } else if (tag == "for") {
      QWENRT_RETURN_IF_ERROR(ParseFor(node.get()));
    } else if (tag == "set") {
      QWENRT_RETURN_IF_ERROR(ParseSet(node.get()));
    } else if (tag == "macro") {
      QWENRT_RETURN_IF_ERROR(ParseMacro(node.get()));
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) return ErrorAt(t, fmt::format("'{}' outside of a loop", tag));
      node->kind = tag == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
    } else if (tag == "generation") {
      node->kind = NodeKind::kScope;
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
      std::string end;
      QWENRT_RETURN_IF_ERROR(ParseBody(&node->body, {"endgeneration"}, &end));
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
    } else if (tag == "with") {
      QWENRT_RETURN_IF_ERROR(ParseWith(node.get()));
    } else if (tag == "filter") {
      node->kind = NodeKind::kFilterBlock;
      QWENRT_ASSIGN_OR_RETURN(node->filter, ParseFilterChain(nullptr));
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
      std::string end;
      QWENRT_RETURN_IF_ERROR(ParseBody(&node->body, {"endfilter"}, &end));
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
    } else {
      return ErrorAt(t, fmt::format("encountered unknown or unsupported tag '{}'", tag));
    }
    body->push_back(std::move(node));
    return OkStatus();
  }

  Status ParseIf(Node* node) {
    node->kind = NodeKind::kIf;
    while (true) {
      // Jinja2 parses `if` conditions without inline if-expressions.
      QWENRT_ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(/*with_condexpr=*/false));
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
      Body branch;
      std::string end;
      QWENRT_RETURN_IF_ERROR(ParseBody(&branch, {"elif", "else", "endif"}, &end));
      node->branches.emplace_back(std::move(cond), std::move(branch));
      if (end == "elif") continue;
      if (end == "else") {
        QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
        QWENRT_RETURN_IF_ERROR(ParseBody(&node->else_body, {"endif"}, &end));
      }
      return Expect(TokenKind::kBlockEnd);
    }
  }

  // Assignment targets: `a`, `a, b`, `(a, b)`.
  Status ParseTargets(Node* node) {
    const bool paren = IsOp("(");
    if (paren) Next();
    while (true) {
      QWENRT_ASSIGN_OR_RETURN(std::string name, ExpectName());
      node->targets.push_back(std::move(name));
      if (!IsOp(",")) break;
      node->tuple_target = true;
      Next();
      if (paren && IsOp(")")) break;
      if (Peek().kind != TokenKind::kName) break;
    }
    if (paren) {
      node->tuple_target = true;
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ")"));
    }
    return OkStatus();
  }

  Status ParseFor(Node* node) {
    node->kind = NodeKind::kFor;
    QWENRT_RETURN_IF_ERROR(ParseTargets(node));
    if (!IsName("in"))
      return ErrorAt(Peek(), fmt::format("expected token 'in', got {}", Describe(Peek())));
    Next();
    QWENRT_ASSIGN_OR_RETURN(node->expr, ParseTuple(/*with_condexpr=*/false));
    if (IsName("if")) {
      Next();
      QWENRT_ASSIGN_OR_RETURN(node->filter, ParseExpression());
    }
    if (IsName("recursive")) return ErrorAt(Peek(), "recursive for loops are not supported");
    QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
    std::string end;
    ++loop_depth_;
    Status st = ParseBody(&node->body, {"endfor", "else"}, &end);
    --loop_depth_;
    QWENRT_RETURN_IF_ERROR(st);
    if (end == "else") {
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
      QWENRT_RETURN_IF_ERROR(ParseBody(&node->else_body, {"endfor"}, &end));
    }
    return Expect(TokenKind::kBlockEnd);
  }

  Status ParseSet(Node* node) {
    if (Peek().kind == TokenKind::kName && IsOp(".", 1)) {
      node->kind = NodeKind::kSet;
      node->targets.push_back(Next().text);
      Next();
      QWENRT_ASSIGN_OR_RETURN(node->attr, ExpectName());
    } else {
      QWENRT_RETURN_IF_ERROR(ParseTargets(node));
      if (!IsOp("=")) {
        // Block set: `{% set x %}...{% endset %}`, optionally with a filter.
        if (node->tuple_target) return ErrorAt(Peek(), "block set needs a single name");
        node->kind = NodeKind::kSetBlock;
        if (IsOp("|")) {
          QWENRT_ASSIGN_OR_RETURN(node->filter, ParseFilterChain(nullptr));
        }
        QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
        std::string end;
        QWENRT_RETURN_IF_ERROR(ParseBody(&node->body, {"endset"}, &end));
        return Expect(TokenKind::kBlockEnd);
      }
      node->kind = NodeKind::kSet;
    }
    QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, "="));
    QWENRT_ASSIGN_OR_RETURN(node->expr, ParseTuple());
    return Expect(TokenKind::kBlockEnd);
  }

  Status ParseMacro(Node* node) {
    node->kind = NodeKind::kMacro;
    QWENRT_ASSIGN_OR_RETURN(node->name, ExpectName());
    QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, "("));
    while (!IsOp(")")) {
      if (!node->targets.empty()) QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ","));
      if (IsOp(")")) break;
      QWENRT_ASSIGN_OR_RETURN(std::string param, ExpectName());
      ExprPtr def;
      if (IsOp("=")) {
        Next();
        QWENRT_ASSIGN_OR_RETURN(def, ParseExpression());
      } else if (!node->values.empty() && node->values.back()) {
        return ErrorAt(Peek(), "non-default argument follows default argument");
      }
      node->targets.push_back(std::move(param));
      node->values.push_back(std::move(def));
    }
    Next();
    QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kBlockEnd));
    std::string end;
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot cross a macro boundary
    Status st = ParseBody(&node->body, {"endmacro"}, &end);
    loop_depth_ = saved_loop_depth;
    QWENRT_RETURN_IF_ERROR(st);
    if (Peek().kind == TokenKind::kName) Next();  // `{% endmacro name %}`
    node->uses_varargs = UsesName(node->body, "varargs");
    node->uses_kwargs = UsesName(node->body, "kwargs");
    return Expect(TokenKind::kBlockEnd);
  }

  Status ParseWith(Node* node) {
    node->kind = NodeKind::kScope;
    while (!(Peek().kind == TokenKind::kBlockEnd)) {
      if (!node->targets.empty()) QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ","));
      QWENRT_ASSIGN_OR_RETURN(std::string name, ExpectName());
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, "="));
      QWENRT_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      node->targets.push_back(std::move(name));
      node->values.push_back(std::move(value));
    }
    Next();
    std::string end;
    QWENRT_RETURN_IF_ERROR(ParseBody(&node->body, {"endwith"}, &end));
    return Expect(TokenKind::kBlockEnd);
  }

  // ---- expressions ----

  // An expression, or a tuple `a, b` without parentheses (in `{{ }}`, `set` and `for ... in`).
  StatusOr<ExprPtr> ParseTuple(bool with_condexpr = true) {
    const Token& start = Peek();
    QWENRT_ASSIGN_OR_RETURN(ExprPtr first, with_condexpr ? ParseExpression() : ParseOr());
    if (!IsOp(",")) return first;
    ExprPtr tuple = MakeExpr(ExprKind::kTuple, start);
    tuple->children.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      if (Peek().kind == TokenKind::kVarEnd || Peek().kind == TokenKind::kBlockEnd || IsOp(")"))
        break;
      QWENRT_ASSIGN_OR_RETURN(ExprPtr item, with_condexpr ? ParseExpression() : ParseOr());
      tuple->children.push_back(std::move(item));
    }
    QWENRT_RETURN_IF_ERROR(Measure(tuple.get()));
    return tuple;
  }

  StatusOr<ExprPtr> ParseExpression() {
    DepthGuard guard(&depth_);
    if (depth_ > max_nesting_) return DepthError();
    QWENRT_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (IsName("if")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr else_expr;
      if (IsName("else")) {
        Next();
        QWENRT_ASSIGN_OR_RETURN(else_expr, ParseExpression());
      }
      ExprPtr node = MakeExpr(ExprKind::kCond, at);
      node->children.push_back(std::move(expr));
      node->children.push_back(std::move(cond));
      node->children.push_back(std::move(else_expr));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      expr = std::move(node);
    }
    return expr;
  }

  StatusOr<ExprPtr> ParseOr() {
    QWENRT_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      ExprPtr node = MakeExpr(ExprKind::kOr, at);
      node->children.push_back(std::move(left));
      node->children.push_back(std::move(right));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      left = std::move(node);
    }
    return left;
  }

  StatusOr<ExprPtr> ParseAnd() {
    QWENRT_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      ExprPtr node = MakeExpr(ExprKind::kAnd, at);
      node->children.push_back(std::move(left));
      node->children.push_back(std::move(right));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      left = std::move(node);
    }
    return left;
  }

  StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(&depth_);
      if (depth_ > max_nesting_) return DepthError();
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      ExprPtr node = MakeExpr(ExprKind::kNot, at);
      node->children.push_back(std::move(operand));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      return node;
    }
    return ParseCompare();
  }

  StatusOr<ExprPtr> ParseCompare() {
    const Token& start = Peek();
    QWENRT_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr node;
    while (true) {
      std::string op;
      const Token& t = Peek();
      if (t.kind == TokenKind::kOperator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                             t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = t.text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        Next();
        Next();
      } else {
        break;
      }
      if (!node) {
        node = MakeExpr(ExprKind::kCompare, start);
        node->children.push_back(std::move(first));
      }
      QWENRT_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath1());
      node->children.push_back(std::move(rhs));
      node->ops.push_back(std::move(op));
    }
    if (!node) return first;
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  StatusOr<ExprPtr> Binary(ExprPtr left, const Token& at, std::string op, ExprPtr right) {
    ExprPtr node = MakeExpr(ExprKind::kBinary, at);
    node->name = std::move(op);
    node->children.push_back(std::move(left));
    node->children.push_back(std::move(right));
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  StatusOr<ExprPtr> ParseMath1() {
    QWENRT_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      QWENRT_ASSIGN_OR_RETURN(left, Binary(std::move(left), at, at.text, std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseConcat() {
    const Token& start = Peek();
    QWENRT_ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
    if (!IsOp("~")) return first;
    ExprPtr node = MakeExpr(ExprKind::kConcat, start);
    node->children.push_back(std::move(first));
    while (IsOp("~")) {
      Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr item, ParseMath2());
      node->children.push_back(std::move(item));
    }
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  StatusOr<ExprPtr> ParseMath2() {
    QWENRT_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      QWENRT_ASSIGN_OR_RETURN(left, Binary(std::move(left), at, at.text, std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParsePow() {
    QWENRT_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      QWENRT_ASSIGN_OR_RETURN(left, Binary(std::move(left), at, "**", std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard guard(&depth_);
    if (depth_ > max_nesting_) return DepthError();
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      const Token& at = Next();
      QWENRT_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      node = MakeExpr(at.text == "-" ? ExprKind::kNeg : ExprKind::kPos, at);
      node->children.push_back(std::move(operand));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      QWENRT_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    } else {
      QWENRT_ASSIGN_OR_RETURN(node, ParsePrimary());
      QWENRT_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    }
    if (with_filter) return ParseFilterExpr(std::move(node));
    return node;
  }

  StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kName: {
        Next();
        ExprPtr node = MakeExpr(ExprKind::kLiteral, t);
        if (t.text == "true" || t.text == "True") {
          node->literal = Value::Bool(true);
        } else if (t.text == "false" || t.text == "False") {
          node->literal = Value::Bool(false);
        } else if (t.text == "none" || t.text == "None") {
          node->literal = Value::None();
        } else {
          node->kind = ExprKind::kName;
          node->name = t.text;
        }
        return node;
      }
      case TokenKind::kString: {
        std::string s;
        while (Peek().kind == TokenKind::kString) s += Next().text;  // "a" "b" concatenates
        ExprPtr node = MakeExpr(ExprKind::kLiteral, t);
        node->literal = Value::String(std::move(s));
        return node;
      }
      case TokenKind::kInt:
      case TokenKind::kFloat: {
        Next();
        ExprPtr node = MakeExpr(ExprKind::kLiteral, t);
        node->literal =
            t.kind == TokenKind::kInt ? Value::Int(t.int_value) : Value::Float(t.float_value);
        return node;
      }
      case TokenKind::kOperator:
        if (t.text == "(") {
          Next();
          if (IsOp(")")) {  // empty tuple
            Next();
            return MakeExpr(ExprKind::kTuple, t);
          }
          QWENRT_ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple());
          QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ")"));
          return inner;
        }
        if (t.text == "[") return ParseList();
        if (t.text == "{") return ParseDict();
        break;
      default:
        break;
    }
    if (t.kind == TokenKind::kVarEnd || t.kind == TokenKind::kBlockEnd ||
        t.kind == TokenKind::kEof) {
      return ErrorAt(t, fmt::format("expected an expression, got {}", Describe(t)));
    }
    return ErrorAt(t, fmt::format("unexpected {}", Describe(t)));
  }

  StatusOr<ExprPtr> ParseList() {
    ExprPtr node = MakeExpr(ExprKind::kList, Next());
    while (!IsOp("]")) {
      if (!node->children.empty()) {
        QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ","));
        if (IsOp("]")) break;
      }
      QWENRT_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      node->children.push_back(std::move(item));
    }
    Next();
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  StatusOr<ExprPtr> ParseDict() {
    ExprPtr node = MakeExpr(ExprKind::kDict, Next());
    while (!IsOp("}")) {
      if (!node->children.empty()) {
        QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ","));
        if (IsOp("}")) break;
      }
      QWENRT_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
      QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ":"));
      QWENRT_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      node->children.push_back(std::move(key));
      node->children.push_back(std::move(value));
    }
    Next();
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        const Token& at = Next();
        const Token& t = Peek();
        if (t.kind == TokenKind::kName) {
          ExprPtr attr = MakeExpr(ExprKind::kGetAttr, at);
          attr->name = Next().text;
          attr->children.push_back(std::move(node));
          QWENRT_RETURN_IF_ERROR(Measure(attr.get()));
          node = std::move(attr);
        } else if (t.kind == TokenKind::kInt) {  // `x.0` is `x[0]`
          ExprPtr item = MakeExpr(ExprKind::kGetItem, at);
          ExprPtr index = MakeExpr(ExprKind::kLiteral, t);
          index->literal = Value::Int(Next().int_value);
          item->children.push_back(std::move(node));
          item->children.push_back(std::move(index));
          QWENRT_RETURN_IF_ERROR(Measure(item.get()));
          node = std::move(item);
        } else {
          return ErrorAt(t, fmt::format("expected an attribute name, got {}", Describe(t)));
        }
      } else if (IsOp("[")) {
        QWENRT_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
      } else if (IsOp("(")) {
        QWENRT_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> ParseSubscript(ExprPtr object) {
    const Token& at = Next();  // '['
    ExprPtr parts[3];
    int n_colons = 0;
    while (!IsOp("]")) {
      if (IsOp(",") && n_colons == 0 && parts[0]) {  // `x[a, b]` subscripts with the tuple (a, b)
        ExprPtr tuple = MakeExpr(ExprKind::kTuple, at);
        tuple->children.push_back(std::move(parts[0]));
        while (IsOp(",")) {
          Next();
          if (IsOp("]")) break;
          QWENRT_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
          tuple->children.push_back(std::move(item));
        }
        QWENRT_RETURN_IF_ERROR(Measure(tuple.get()));
        parts[0] = std::move(tuple);
        continue;
      }
      if (IsOp(":")) {
        if (++n_colons > 2) return ErrorAt(Peek(), "unexpected ':'");
        Next();
        continue;
      }
      if (parts[n_colons]) return ErrorAt(Peek(), fmt::format("unexpected {}", Describe(Peek())));
      QWENRT_ASSIGN_OR_RETURN(parts[n_colons], ParseExpression());
    }
    Next();
    if (n_colons == 0) {
      if (!parts[0]) parts[0] = MakeExpr(ExprKind::kTuple, at);  // `x[]` is `x[()]` in Jinja2
      ExprPtr node = MakeExpr(ExprKind::kGetItem, at);
      node->children.push_back(std::move(object));
      node->children.push_back(std::move(parts[0]));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      return node;
    }
    ExprPtr node = MakeExpr(ExprKind::kSlice, at);
    node->children.push_back(std::move(object));
    for (auto& p : parts) node->children.push_back(std::move(p));
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  // Arguments `(a, b, k=v)` appended to `node` (children after those already there, and kwargs).
  Status ParseArgs(Expr* node) {
    QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, "("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) {
        QWENRT_RETURN_IF_ERROR(Expect(TokenKind::kOperator, ","));
        if (IsOp(")")) break;
      }
      first = false;
      if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        Next();
        QWENRT_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        node->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!node->kwargs.empty())
          return ErrorAt(Peek(), "positional argument follows keyword argument");
        if (IsOp("*") || IsOp("**"))
          return ErrorAt(Peek(), "*args / **kwargs calls are not supported");
        QWENRT_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        node->children.push_back(std::move(value));
      }
    }
    Next();
    return OkStatus();
  }

  StatusOr<ExprPtr> ParseCall(ExprPtr callee) {
    ExprPtr node = MakeExpr(ExprKind::kCall, Peek());
    node->children.push_back(std::move(callee));
    QWENRT_RETURN_IF_ERROR(ParseArgs(node.get()));
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  // `| name(args)` repeated; `operand` may be null (filter blocks, block set).
  StatusOr<ExprPtr> ParseFilterChain(ExprPtr operand) {
    bool first = true;
    while (IsOp("|") || (first && operand == nullptr && Peek().kind == TokenKind::kName)) {
      if (IsOp("|")) Next();
      first = false;
      const Token& at = Peek();
      QWENRT_ASSIGN_OR_RETURN(std::string name, ExpectName());
      while (IsOp(".")) {  // dotted filter names (e.g. from extensions) are kept whole
        Next();
        QWENRT_ASSIGN_OR_RETURN(std::string part, ExpectName());
        name += "." + part;
      }
      ExprPtr node = MakeExpr(ExprKind::kFilter, at);
      node->name = std::move(name);
      node->children.push_back(std::move(operand));
      if (IsOp("(")) QWENRT_RETURN_IF_ERROR(ParseArgs(node.get()));
      QWENRT_RETURN_IF_ERROR(Measure(node.get()));
      operand = std::move(node);
    }
    return operand;
  }

  StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        QWENRT_ASSIGN_OR_RETURN(node, ParseFilterChain(std::move(node)));
      } else if (IsName("is")) {
        QWENRT_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
      } else if (IsOp("(")) {
        QWENRT_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> ParseTest(ExprPtr operand) {
    const Token& at = Next();  // 'is'
    ExprPtr node = MakeExpr(ExprKind::kTest, at);
    if (IsName("not")) {
      Next();
      node->negated = true;
    }
    QWENRT_ASSIGN_OR_RETURN(node->name, ExpectName());
    while (IsOp(".")) {
      Next();
      QWENRT_ASSIGN_OR_RETURN(std::string part, ExpectName());
      node->name += "." + part;
    }
    node->children.push_back(std::move(operand));
    const Token& t = Peek();
    if (IsOp("(")) {
      QWENRT_RETURN_IF_ERROR(ParseArgs(node.get()));
    } else if ((t.kind == TokenKind::kName || t.kind == TokenKind::kString ||
                t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat || IsOp("[") ||
                IsOp("{")) &&
               !(t.kind == TokenKind::kName &&
                 (t.text == "else" || t.text == "or" || t.text == "and"))) {
      // One argument without parentheses: `x is divisibleby 3`, `x is sameas none`. As in Jinja2,
      // any other name starts an argument, so `x is even if c else y` is a syntax error there too.
      if (IsName("is")) return ErrorAt(t, "You cannot chain multiple tests with is");
      QWENRT_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
      QWENRT_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
      node->children.push_back(std::move(arg));
    }
    QWENRT_RETURN_IF_ERROR(Measure(node.get()));
    return node;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const int max_nesting_;
  int depth_ = 0;
  int loop_depth_ = 0;
};

// Jinja2 rejects unknown filter and test names when compiling, except inside `if` statements
// and inline if-expressions of the same scope ("soft" frames), where it waits until they run.
// `soft` follows that rule: if/cond set it, scopes (for/macro/with/set/filter bodies) clear it.
Status CheckNames(const Expr* e, bool soft) {
  if (!e) return OkStatus();
  if (!soft && e->kind == ExprKind::kFilter && !IsJinja2Filter(e->name)) {
    return InvalidArgument("template syntax error at line {}, column {}: No filter named '{}'.",
                           e->line, e->col, e->name);
  }
  if (!soft && e->kind == ExprKind::kTest && !HasTest(e->name)) {
    return InvalidArgument("template syntax error at line {}, column {}: No test named '{}'.",
                           e->line, e->col, e->name);
  }
  const bool child_soft = soft || e->kind == ExprKind::kCond;
  for (const auto& c : e->children) QWENRT_RETURN_IF_ERROR(CheckNames(c.get(), child_soft));
  for (const auto& [k, v] : e->kwargs) QWENRT_RETURN_IF_ERROR(CheckNames(v.get(), child_soft));
  return OkStatus();
}

Status CheckNames(const Body& body, bool soft) {
  for (const auto& n : body) {
    QWENRT_RETURN_IF_ERROR(CheckNames(n->expr.get(), soft));
    switch (n->kind) {
      case NodeKind::kIf:
        for (const auto& [cond, branch] : n->branches) {
          QWENRT_RETURN_IF_ERROR(CheckNames(cond.get(), true));
          QWENRT_RETURN_IF_ERROR(CheckNames(branch, true));
        }
        QWENRT_RETURN_IF_ERROR(CheckNames(n->else_body, true));
        break;
      case NodeKind::kFor:
        QWENRT_RETURN_IF_ERROR(CheckNames(n->filter.get(), false));
        QWENRT_RETURN_IF_ERROR(CheckNames(n->body, false));
        QWENRT_RETURN_IF_ERROR(CheckNames(n->else_body, soft));
        break;
      case NodeKind::kScope:
        for (const auto& v : n->values) QWENRT_RETURN_IF_ERROR(CheckNames(v.get(), soft));
        QWENRT_RETURN_IF_ERROR(CheckNames(n->body, false));
        break;
      case NodeKind::kMacro:
        for (const auto& v : n->values) QWENRT_RETURN_IF_ERROR(CheckNames(v.get(), false));
        QWENRT_RETURN_IF_ERROR(CheckNames(n->body, false));
        break;
      case NodeKind::kSetBlock:
      case NodeKind::kFilterBlock:
        QWENRT_RETURN_IF_ERROR(CheckNames(n->filter.get(), false));
        QWENRT_RETURN_IF_ERROR(CheckNames(n->body, false));
        break;
      default:
        break;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<Template>> ParseTemplate(std::string_view source,
                                                  const TemplateLimits& limits) {
  QWENRT_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source, limits.max_template_bytes));
  Parser parser(std::move(tokens), limits.max_nesting);
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Template> tmpl, parser.Run());
  QWENRT_RETURN_IF_ERROR(CheckNames(tmpl->body, false));
  return tmpl;
}

}  // namespace qwenrt::jinja
